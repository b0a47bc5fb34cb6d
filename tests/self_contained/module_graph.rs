//! ARCHITECTURE.md against the tree, on what can drift: every path it names exists, every
//! top-level module of `src/` has a row in its module table, and the top-level modules form no
//! cycle (issue 42: a small check instead of a lexer; the imports themselves are the code's).
//!
//! A module uses another when its code names `crate::NAME` (`use crate::NAME…`, a group
//! `use crate::{NAME, …}`, or inline). Line comments are dropped first, so doc links do not
//! count; string literals are not, so a `"crate::x"` in a string would (none does).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Read when the test runs: a compile-time path can name another checkout sharing the target dir.
fn root() -> PathBuf {
    std::env::current_dir().expect("the package directory")
}

fn architecture() -> String {
    fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md")
}

/// The top-level modules: `src/NAME.rs` and `src/NAME/`, the crate roots left out.
fn top_level_modules() -> BTreeSet<String> {
    let entries = fs::read_dir(root().join("src")).expect("src/");
    let names = entries.map(|entry| {
        let path = entry.expect("an entry of src/").path();
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        (path.is_dir() || path.extension().is_some_and(|e| e == "rs")).then_some(stem)
    });
    let roots = ["lib", "main", "bin"];
    names
        .flatten()
        .filter(|n| !roots.contains(&n.as_str()))
        .collect()
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("a folder of src/") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The first path segment of every `crate::` in `code` (each branch of a `crate::{…}` group).
fn crate_references(code: &str) -> BTreeSet<String> {
    let code: String = code
        .lines()
        .map(|l| l.split("//").next().unwrap())
        .collect::<Vec<_>>()
        .join("\n");
    let ident = |s: &str| {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect::<String>()
    };
    let mut found = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // The group's own branches: names at depth 0 inside its braces.
            let (mut depth, mut start) = (0, true);
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => start = true,
                    c if c.is_whitespace() => {}
                    _ if start && depth == 0 => {
                        found.insert(ident(&group[i..]));
                        start = false;
                    }
                    _ => {}
                }
            }
        } else {
            found.insert(ident(rest));
        }
    }
    found
}

/// Module → the other top-level modules its code names.
fn import_graph(modules: &BTreeSet<String>) -> BTreeMap<String, BTreeSet<String>> {
    let mut graph = BTreeMap::new();
    for module in modules {
        let (mut files, dir) = (Vec::new(), root().join("src").join(module));
        if dir.is_dir() {
            rust_files(&dir, &mut files);
        } else {
            files.push(root().join("src").join(format!("{module}.rs")));
        }
        let uses: BTreeSet<String> = files
            .iter()
            .flat_map(|f| crate_references(&fs::read_to_string(f).expect("a source file")))
            .filter(|m| m != module && modules.contains(m))
            .collect();
        graph.insert(module.clone(), uses);
    }
    graph
}

/// A cycle through `graph` as the list of its modules, the first repeated at the end.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            return Some([&path[at..], &[node.to_owned()]].concat());
        }
        if !done.insert(node.to_owned()) {
            return None;
        }
        path.push(node.to_owned());
        for next in &graph[node] {
            if let Some(cycle) = visit(next, graph, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|n| visit(n, graph, &mut Vec::new(), &mut done))
}

#[test]
fn the_top_level_modules_form_no_cycle() {
    let graph = import_graph(&top_level_modules());
    assert!(
        graph["app"].contains("http"),
        "the scan reads app.rs's `use crate::{{…}}`: {graph:?}"
    );
    if let Some(cycle) = find_cycle(&graph) {
        panic!("module cycle: {}", cycle.join(" -> "));
    }
}

#[test]
fn architecture_md_has_a_row_for_every_top_level_module() {
    let text = architecture();
    let missing: Vec<String> = top_level_modules()
        .into_iter()
        .filter(|m| {
            let (file, dir) = (format!("| `src/{m}.rs` |"), format!("| `src/{m}/` |"));
            !text
                .lines()
                .any(|l| l.starts_with(&file) || l.starts_with(&dir))
        })
        .collect();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md has no row for {missing:?}"
    );
}

/// The paths ARCHITECTURE.md names in backticks (`src/http/pipeline.rs`, `benches/`) and links to.
fn named_paths(text: &str) -> BTreeSet<String> {
    let is_path = |s: &str| {
        let chars_ok = s.chars().all(|c| c.is_alphanumeric() || "_-./".contains(c));
        let file = [".rs", ".md", ".yaml", ".json", ".sh", ".py", ".toml"]
            .iter()
            .any(|e| s.ends_with(e));
        // `tools/call` is a method, `src/http/` a path: a path's first folder is the repository's.
        let folder = s
            .split_once('/')
            .is_some_and(|(top, _)| root().join(top).is_dir());
        chars_ok && !s.starts_with('/') && !s.starts_with('.') && (folder || file)
    };
    let quoted = text.split('`').skip(1).step_by(2);
    let linked = text
        .split("](")
        .skip(1)
        .filter_map(|s| s.split([')', '#']).next());
    quoted
        .chain(linked)
        .filter(|s| is_path(s))
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_path_architecture_md_names_exists() {
    let named = named_paths(&architecture());
    assert!(
        named.contains("src/http/pipeline.rs"),
        "the scan finds the paths: {named:?}"
    );
    let missing: Vec<&String> = named.iter().filter(|p| !root().join(p).exists()).collect();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names paths that do not exist: {missing:?}"
    );
}

#[test]
fn the_scan_reads_groups_and_skips_comments() {
    let code = "use crate::{a::X, b::{c, d}, e};\n// crate::f\nlet _ = crate::g::h();\n";
    let found: Vec<String> = crate_references(code).into_iter().collect();
    assert_eq!(found, ["a", "b", "e", "g"]);
    let graph = BTreeMap::from([
        ("a".to_owned(), BTreeSet::from(["b".to_owned()])),
        ("b".to_owned(), BTreeSet::from(["a".to_owned()])),
    ]);
    assert_eq!(find_cycle(&graph).unwrap(), ["a", "b", "a"]);
}
