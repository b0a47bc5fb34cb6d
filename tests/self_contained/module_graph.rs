//! The top-level modules of `src/` form no cycle (issue 10, item 2), and ARCHITECTURE.md's
//! module table names, for each, the modules it imports as the code has them (issue 21).
//!
//! Every `src/**/*.rs` file belongs to a top-level module: the first path segment under `src/`
//! (`src/http/pipeline.rs` to `http`, `src/config.rs` to `config`). `src/lib.rs`, `src/main.rs`
//! and `src/bin/**` are the roots: they may use anything, and nothing counts against them.
//! A module uses another when its code names `crate::NAME`: in a `use crate::…` (groups too,
//! however nested or spread over lines) or inline (`crate::aws::loader(…)`). Comments (doc links
//! included), string and char literals are not code and are not read. Paths through `super::`
//! and names re-exported at the crate root (`crate::Error`) are not followed.
//!
//! A cycle fails the test with each cycle named and the line that makes each of its edges:
//!
//! ```text
//! module cycle: config -> aws -> config (src/config.rs:472 uses crate::aws, src/aws.rs:29 uses crate::config)
//! ```
//!
//! The table's last column lists a row's imports by module name, comma-separated (`—` for
//! none); a row names its module as `` `name.rs` `` or `` `name/` ``. A wrong column fails with
//! what is missing (and the line that imports it) and what is listed but not imported.
//!
//! Standard library only: a small scanner, not a Rust parser.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// This package's directory, read when the test runs (a compile-time `env!` path can name
/// another checkout that shared the target dir).
fn package_dir() -> PathBuf {
    PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("run by cargo test"))
}

/// Where a module names another: `file:line`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Site {
    file: String,
    line: usize,
}

/// Module → the modules it uses → every place it does so (in file and line order).
type Graph = BTreeMap<String, BTreeMap<String, Vec<Site>>>;

/// `source` with comments, string literals and char literals blanked to spaces, newlines kept
/// (so line numbers still hold).
fn code_only(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let blank = |out: &mut String, c: char| out.push(if c == '\n' { '\n' } else { ' ' });
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let starts_word = i == 0 || !is_ident(chars[i - 1]);
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                blank(&mut out, chars[i]);
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            // Block comments nest.
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, chars[i]);
                    i += 1;
                }
            }
        } else if let Some(len) = raw_string_len(&chars[i..]).filter(|_| starts_word) {
            for &c in &chars[i..i + len] {
                blank(&mut out, c);
            }
            i += len;
        } else if c == '"' {
            blank(&mut out, c);
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' && i + 1 < chars.len() {
                    blank(&mut out, chars[i]);
                    i += 1;
                }
                blank(&mut out, chars[i]);
                i += 1;
            }
            if i < chars.len() {
                blank(&mut out, chars[i]);
                i += 1;
            }
        } else if c == '\'' && (next == Some('\\') || chars.get(i + 2) == Some(&'\'')) {
            // A char literal ('x', '\n', '\u{..}'); a lifetime ('a) has no closing quote.
            blank(&mut out, c);
            i += 1;
            if chars.get(i) == Some(&'\\') && i + 1 < chars.len() {
                // The escape and the character it escapes (which may be a quote).
                blank(&mut out, '\\');
                blank(&mut out, chars[i + 1]);
                i += 2;
            }
            while i < chars.len() && chars[i] != '\'' && chars[i] != '\n' {
                blank(&mut out, chars[i]);
                i += 1;
            }
            if i < chars.len() && chars[i] == '\'' {
                blank(&mut out, '\'');
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// The length of the raw string literal (`r"…"`, `r#"…"#`, `br"…"`) at the start of `chars`.
fn raw_string_len(chars: &[char]) -> Option<usize> {
    let mut i = usize::from(chars.first() == Some(&'b'));
    if chars.get(i) != Some(&'r') {
        return None;
    }
    i += 1;
    let hashes = chars[i..].iter().take_while(|&&c| c == '#').count();
    i += hashes;
    if chars.get(i) != Some(&'"') {
        return None; // `r#ident`, or just an identifier starting with r
    }
    i += 1;
    while i < chars.len() {
        if chars[i] == '"' && chars[i + 1..].iter().take_while(|&&c| c == '#').count() >= hashes {
            return Some(i + 1 + hashes);
        }
        i += 1;
    }
    Some(chars.len())
}

/// Every `crate::NAME` in `code` (already [`code_only`]): the first segment after `crate::`,
/// once per branch of a `crate::{…}` group, with its line.
fn crate_references(code: &str) -> Vec<(String, usize)> {
    let chars: Vec<char> = code.chars().collect();
    let newlines: Vec<usize> = (0..chars.len()).filter(|&i| chars[i] == '\n').collect();
    let line_at = |i: usize| 1 + newlines.partition_point(|&n| n < i);
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    let skip_space = |mut i: usize| {
        while i < chars.len() && chars[i].is_whitespace() {
            i += 1;
        }
        i
    };
    // An identifier at `i` (a raw one without its `r#`), and where it ends.
    let ident = |i: usize| -> Option<(String, usize)> {
        let start = if chars.get(i) == Some(&'r') && chars.get(i + 1) == Some(&'#') {
            i + 2
        } else {
            i
        };
        let first = *chars.get(start)?;
        if !(first.is_alphabetic() || first == '_') {
            return None;
        }
        let end = start + chars[start..].iter().take_while(|&&c| is_ident(c)).count();
        Some((chars[start..end].iter().collect(), end))
    };
    let mut found = Vec::new();
    let mut i = 0;
    while i + 5 <= chars.len() {
        let word = chars[i..i + 5] == ['c', 'r', 'a', 't', 'e'];
        let bounded =
            (i == 0 || !is_ident(chars[i - 1])) && chars.get(i + 5).is_none_or(|&c| !is_ident(c));
        if !(word && bounded) {
            i += 1;
            continue;
        }
        let mut j = skip_space(i + 5);
        if chars.get(j) != Some(&':') || chars.get(j + 1) != Some(&':') {
            i += 5;
            continue;
        }
        j = skip_space(j + 2);
        if chars.get(j) == Some(&'{') {
            // A group: the first identifier of every branch at depth 1.
            let mut depth = 0;
            let mut expecting = true;
            while j < chars.len() {
                match chars[j] {
                    '{' => {
                        depth += 1;
                        j += 1;
                    }
                    '}' => {
                        depth -= 1;
                        j += 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    ',' if depth == 1 => {
                        expecting = true;
                        j += 1;
                    }
                    c if depth == 1 && expecting && !c.is_whitespace() => {
                        expecting = false;
                        match ident(j) {
                            Some((name, end)) => {
                                found.push((name, line_at(j)));
                                j = end;
                            }
                            None => j += 1,
                        }
                    }
                    _ => j += 1,
                }
            }
            i = j;
        } else if let Some((name, end)) = ident(j) {
            found.push((name, line_at(j)));
            i = end;
        } else {
            i = j;
        }
    }
    found
}

/// The top-level module a file belongs to, from its path under `src/`; `None` for the roots.
fn top_level_module(relative: &Path) -> Option<String> {
    let parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    match parts.as_slice() {
        [] => None,
        [file] if file == "lib.rs" || file == "main.rs" => None,
        [file] => file.strip_suffix(".rs").map(str::to_owned),
        [dir, ..] if dir == "bin" => None,
        [dir, ..] => Some(dir.clone()),
    }
}

/// The graph of `files` (display path, module, source): edges to other members of `modules` only.
fn graph(files: &[(String, String, String)], modules: &BTreeSet<String>) -> Graph {
    let mut graph = Graph::new();
    for (path, module, source) in files {
        graph.entry(module.clone()).or_default();
        for (name, line) in crate_references(&code_only(source)) {
            if &name != module && modules.contains(&name) {
                graph
                    .entry(module.clone())
                    .or_default()
                    .entry(name)
                    .or_default()
                    .push(Site {
                        file: path.clone(),
                        line,
                    });
            }
        }
    }
    graph
}

/// Every elementary cycle, each written from its smallest module (no module twice, the first
/// not repeated at the end); shortest first, then in name order. Stops after `limit`.
fn cycles(graph: &Graph, limit: usize) -> Vec<Vec<String>> {
    fn walk(
        graph: &Graph,
        start: &str,
        path: &mut Vec<String>,
        found: &mut Vec<Vec<String>>,
        limit: usize,
    ) {
        let here = path.last().unwrap().clone();
        for next in graph.get(&here).into_iter().flat_map(|edges| edges.keys()) {
            if found.len() >= limit {
                return;
            }
            if next == start {
                found.push(path.clone());
            } else if next.as_str() > start && !path.contains(next) {
                path.push(next.clone());
                walk(graph, start, path, found, limit);
                path.pop();
            }
        }
    }
    let mut found = Vec::new();
    for start in graph.keys() {
        walk(graph, start, &mut vec![start.clone()], &mut found, limit);
    }
    found.sort_by(|a, b| a.len().cmp(&b.len()).then_with(|| a.cmp(b)));
    found
}

/// `module cycle: a -> b -> a (src/a.rs:3 uses crate::b, src/b.rs:9 uses crate::a)`.
fn describe(cycle: &[String], graph: &Graph) -> String {
    let mut names = cycle.to_vec();
    names.push(cycle[0].clone());
    let evidence: Vec<String> = names
        .windows(2)
        .map(|pair| {
            let sites = &graph[&pair[0]][&pair[1]];
            // The other places too (up to three), since each must go for the edge to go.
            let also: Vec<String> = sites[1..]
                .iter()
                .take(3)
                .map(|s| format!("{}:{}", s.file, s.line))
                .collect();
            let more = match (also.len(), sites.len() - 1 - also.len()) {
                (0, _) => String::new(),
                (_, 0) => format!(" (also {})", also.join(", ")),
                (_, rest) => format!(" (also {} and {rest} more)", also.join(", ")),
            };
            format!(
                "{}:{} uses crate::{}{more}",
                sites[0].file, sites[0].line, pair[1]
            )
        })
        .collect();
    format!(
        "module cycle: {} ({})",
        names.join(" -> "),
        evidence.join(", ")
    )
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The modules of this crate's `src/` and the graph of their imports.
fn source_graph() -> (BTreeSet<String>, Graph) {
    let root = package_dir();
    let src = root.join("src");
    let mut files = Vec::new();
    for path in rust_files(&src) {
        let relative = path.strip_prefix(&src).unwrap();
        let Some(module) = top_level_module(relative) else {
            continue;
        };
        let source =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let shown = path
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        files.push((shown, module, source));
    }
    let modules: BTreeSet<String> = files.iter().map(|(_, m, _)| m.clone()).collect();
    assert!(
        modules.len() >= 5 && modules.contains("config") && modules.contains("http"),
        "found too few modules under {}: {modules:?}",
        src.display()
    );
    let graph = graph(&files, &modules);
    (modules, graph)
}

#[test]
fn top_level_modules_form_no_cycle() {
    let (modules, graph) = source_graph();
    let edges: usize = graph.values().map(BTreeMap::len).sum();
    let found = cycles(&graph, 100);
    let report: Vec<String> = found.iter().map(|c| describe(c, &graph)).collect();
    assert!(
        found.is_empty(),
        "the top-level modules of src/ use each other in {}{} cycle(s): a module may use another \
         only if that one does not use it back, directly or through others.\n{}\n",
        found.len(),
        if found.len() >= 100 { " or more" } else { "" },
        report.join("\n")
    );
    println!(
        "module graph: {} modules, {edges} edges, no cycle",
        modules.len()
    );
}

/// The module table of `ARCHITECTURE.md`: module → the imports its last column lists.
fn table_imports(architecture: &str) -> Result<BTreeMap<String, BTreeSet<String>>, String> {
    let mut rows = BTreeMap::new();
    let mut lines = architecture
        .lines()
        .skip_while(|line| !line.starts_with("| module |"));
    if lines.next().is_none() {
        return Err("no table whose header starts with `| module |`".into());
    }
    for line in lines.skip(1).take_while(|line| line.starts_with('|')) {
        let cells: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
        let (Some(first), Some(last)) = (cells.first(), cells.last()) else {
            continue;
        };
        let name = first.trim_matches('`');
        let module = name
            .strip_suffix(".rs")
            .or_else(|| name.strip_suffix('/'))
            .ok_or_else(|| format!("a row names {first}, not `name.rs` or `name/`"))?;
        let imports = if *last == "—" {
            BTreeSet::new()
        } else {
            last.split(',').map(|m| m.trim().to_owned()).collect()
        };
        rows.insert(module.to_owned(), imports);
    }
    Ok(rows)
}

/// Where the table and the code disagree, one line per module.
fn table_mismatches(table: &BTreeMap<String, BTreeSet<String>>, graph: &Graph) -> Vec<String> {
    let mut found = Vec::new();
    for (module, uses) in graph {
        let Some(listed) = table.get(module) else {
            found.push(format!("{module}: no row in the table"));
            continue;
        };
        let missing: Vec<String> = uses
            .iter()
            .filter(|(used, _)| !listed.contains(*used))
            .map(|(used, sites)| format!("{used} ({}:{})", sites[0].file, sites[0].line))
            .collect();
        let extra: Vec<&str> = listed
            .iter()
            .filter(|m| !uses.contains_key(*m))
            .map(String::as_str)
            .collect();
        if !missing.is_empty() || !extra.is_empty() {
            found.push(format!(
                "{module}: imports not listed: [{}]; listed but not imported: [{}]",
                missing.join(", "),
                extra.join(", ")
            ));
        }
    }
    for module in table.keys().filter(|m| !graph.contains_key(*m)) {
        found.push(format!("{module}: a row for a module src/ does not have"));
    }
    found
}

#[test]
fn architecture_md_lists_each_modules_imports_as_the_code_has_them() {
    let path = package_dir().join("ARCHITECTURE.md");
    let architecture =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let table = table_imports(&architecture).unwrap_or_else(|e| panic!("ARCHITECTURE.md: {e}"));
    let (_, graph) = source_graph();
    let mismatches = table_mismatches(&table, &graph);
    assert!(
        mismatches.is_empty(),
        "ARCHITECTURE.md's module table (the imports column) differs from the code:\n{}\n",
        mismatches.join("\n")
    );
}

/// The names between `*…*` in `text`, in order, each once.
fn step_names(text: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for piece in text.split('*').skip(1).step_by(2) {
        let name = piece.trim();
        let is_name = !name.is_empty()
            && name.len() <= 24
            && name.chars().all(|c| c.is_ascii_alphabetic() || c == ' ');
        if is_name && !names.iter().any(|n| n == name) {
            names.push(name.to_owned());
        }
    }
    names
}

/// The front's steps, by name: the table in `src/http/mod.rs` (its first column), the comments
/// of `src/http/pipeline.rs` that start with a step's name (`// *envelope*: …`) name the same
/// steps, and ARCHITECTURE.md's paragraph beginning "The front's steps" names them in the
/// table's order (issue 31).
#[test]
fn the_pipeline_steps_are_named_alike_in_the_table_the_code_and_architecture_md() {
    let read = |path: &str| std::fs::read_to_string(package_dir().join(path)).expect(path);
    let module = read("src/http/mod.rs");
    let table: Vec<String> = module
        .lines()
        .filter_map(|line| line.strip_prefix("//! | *"))
        .filter_map(|row| row.split('*').next())
        .map(str::to_owned)
        .collect();
    assert!(table.len() >= 10, "src/http/mod.rs: no step table found");
    let pipeline = read("src/http/pipeline.rs");
    let comments: String = pipeline
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix("// *"))
        .map(|rest| format!("*{}*\n", rest.split('*').next().unwrap_or_default()))
        .collect();
    // The code's order is the calls', not the text's (CORS wraps what the MCP path answered).
    let (mut named, mut listed) = (step_names(&comments), table.clone());
    named.sort();
    listed.sort();
    assert_eq!(named, listed, "src/http/pipeline.rs's step comments");
    let architecture = read("ARCHITECTURE.md");
    let paragraph = architecture
        .split("\n\n")
        .find(|p| p.starts_with("The front's steps"))
        .expect("ARCHITECTURE.md: a paragraph beginning \"The front's steps\"");
    assert_eq!(
        step_names(paragraph),
        table,
        "ARCHITECTURE.md's list of steps"
    );
}

/// The scanner, the cycle finder and the table check on synthetic sources.
mod checks {
    use super::*;

    fn refs(source: &str) -> Vec<String> {
        crate_references(&code_only(source))
            .into_iter()
            .map(|(name, _)| name)
            .collect()
    }

    fn modules(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    fn file(path: &str, module: &str, source: &str) -> (String, String, String) {
        (path.into(), module.into(), source.into())
    }

    #[test]
    fn a_plain_use_and_an_inline_path_count() {
        assert_eq!(
            refs("use crate::config::Mode;\nfn f() { crate::aws::loader(&t); }"),
            ["config", "aws"]
        );
    }

    #[test]
    fn a_nested_group_yields_its_first_segments() {
        assert_eq!(refs("use crate::{a::{b, c}, d};"), ["a", "d"]);
        assert_eq!(
            refs("use crate::{a::{b::{x, y}, c}, d::e as f, g, self};"),
            ["a", "d", "g", "self"]
        );
    }

    #[test]
    fn a_group_over_many_lines_keeps_each_line() {
        let source = "use std::fmt;\nuse crate::{\n    Config, Error,\n    auth::Authenticator,\n    handler::{Hosted, HostedSettings},\n};\n";
        assert_eq!(
            crate_references(&code_only(source)),
            [
                ("Config".to_string(), 3),
                ("Error".to_string(), 3),
                ("auth".to_string(), 4),
                ("handler".to_string(), 5),
            ]
        );
        assert_eq!(refs("use crate ::\n  config :: Mode;"), ["config"]);
    }

    #[test]
    fn comments_and_literals_do_not_count() {
        let source = r###"
//! See [`crate::aws::loader`].
/// Links to [`Config`](crate::config::Config).
// use crate::http;
/* crate::handler, /* nested crate::auth */ crate::serve */
fn f<'a>(x: &'a str) -> char {
    let _ = "crate::handles";
    let _ = r#"crate::request_state "quoted""#;
    let _ = '"'; let _ = '\''; // crate::error
    crate::app::run(x) // crate::config
}
"###;
        assert_eq!(refs(source), ["app"]);
    }

    #[test]
    fn other_crates_and_visibility_do_not_count() {
        assert_eq!(
            refs("pub(crate) fn f() {}\nuse my_crate::config;\nuse rmcp::crate_x;\n"),
            Vec::<String>::new()
        );
        assert_eq!(refs("pub(in crate::http) fn f() {}"), ["http"]);
    }

    #[test]
    fn files_belong_to_their_first_segment_and_the_roots_to_none() {
        let module = |p: &str| top_level_module(Path::new(p));
        assert_eq!(module("config.rs").as_deref(), Some("config"));
        assert_eq!(module("http/routes.rs").as_deref(), Some("http"));
        assert_eq!(module("http/mod.rs").as_deref(), Some("http"));
        assert_eq!(
            module("handles/dynamodb/wire.rs").as_deref(),
            Some("handles")
        );
        assert_eq!(module("lib.rs"), None);
        assert_eq!(module("main.rs"), None);
        assert_eq!(module("bin/basket/main.rs"), None);
        assert_eq!(module("bin/basket/tools.rs"), None);
    }

    #[test]
    fn a_cycle_is_found_and_named_with_its_lines() {
        let files = [
            file(
                "src/config.rs",
                "config",
                "use std::fmt;\nuse crate::aws;\n",
            ),
            file(
                "src/aws.rs",
                "aws",
                "fn f() {}\nuse crate::{config::Keys, error};\n",
            ),
            file("src/error.rs", "error", "use crate::Error;\n"),
        ];
        let graph = graph(&files, &modules(&["aws", "config", "error"]));
        let found = cycles(&graph, 100);
        assert_eq!(found, [vec!["aws".to_string(), "config".to_string()]]);
        assert_eq!(
            describe(&found[0], &graph),
            "module cycle: aws -> config -> aws (src/aws.rs:2 uses crate::config, \
             src/config.rs:2 uses crate::aws)"
        );
    }

    #[test]
    fn a_longer_cycle_is_found_once() {
        let files = [
            file("src/a.rs", "a", "use crate::b;"),
            file("src/b.rs", "b", "use crate::c;"),
            file("src/c.rs", "c", "use crate::a;\nuse crate::a::x;"),
        ];
        let graph = graph(&files, &modules(&["a", "b", "c"]));
        let found = cycles(&graph, 100);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            describe(&found[0], &graph),
            "module cycle: a -> b -> c -> a (src/a.rs:1 uses crate::b, src/b.rs:1 uses \
             crate::c, src/c.rs:1 uses crate::a (also src/c.rs:2))"
        );
    }

    #[test]
    fn an_acyclic_graph_passes() {
        let files = [
            file(
                "src/app.rs",
                "app",
                "use crate::{http, handler::Hosted, config};",
            ),
            file(
                "src/http/routes.rs",
                "http",
                "use crate::{handler, config::Mode};",
            ),
            file(
                "src/handler/mod.rs",
                "handler",
                "use crate::config::Config;",
            ),
            file(
                "src/config.rs",
                "config",
                "use crate::config::Inner; use crate::unknown;",
            ),
        ];
        let graph = graph(&files, &modules(&["app", "config", "handler", "http"]));
        assert_eq!(graph["app"].len(), 3);
        assert!(
            graph["config"].is_empty(),
            "self and unknown names are no edges"
        );
        assert_eq!(cycles(&graph, 100), Vec::<Vec<String>>::new());
    }

    #[test]
    fn names_that_are_not_modules_are_no_edges() {
        let files = [
            file(
                "src/serve/local.rs",
                "serve",
                "use crate::{Error, McpService, http::Deadline};",
            ),
            file("src/http/mod.rs", "http", "pub use crate::Error;"),
        ];
        let graph = graph(&files, &modules(&["http", "serve"]));
        assert_eq!(graph["serve"].keys().collect::<Vec<_>>(), ["http"]);
        assert!(graph["http"].is_empty());
    }

    #[test]
    fn a_wrong_imports_column_is_named_with_the_line_that_imports() {
        let files = [
            file("src/http/a.rs", "http", "use crate::{aws, env};\n"),
            file("src/env.rs", "env", "fn f() {}\n"),
            file("src/aws.rs", "aws", "use crate::env::Mode;\n"),
        ];
        let graph = graph(&files, &modules(&["http", "env", "aws"]));
        let right = "| module | what it owns | imports |\n|---|---|---|\n\
                     | `env.rs` | x | — |\n| `aws.rs` | y | env |\n| `http/` | z | env, aws |\n";
        assert_eq!(
            table_mismatches(&table_imports(right).unwrap(), &graph),
            Vec::<String>::new()
        );
        let wrong = "| module | what it owns | imports |\n|---|---|---|\n\
                     | `env.rs` | x | — |\n| `aws.rs` | y | env, http |\n| `http/` | z | env |\n\
                     | `gone.rs` | w | — |\n";
        assert_eq!(
            table_mismatches(&table_imports(wrong).unwrap(), &graph),
            [
                "aws: imports not listed: []; listed but not imported: [http]",
                "http: imports not listed: [aws (src/http/a.rs:1)]; listed but not imported: []",
                "gone: a row for a module src/ does not have",
            ]
        );
        let unlisted = "| module | what it owns | imports |\n|---|---|---|\n| `env.rs` | x | — |\n";
        assert!(
            table_mismatches(&table_imports(unlisted).unwrap(), &graph)
                .contains(&"http: no row in the table".to_string())
        );
        assert!(table_imports("no table here").is_err());
    }
}
