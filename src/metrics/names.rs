//! The `Name` dimension: a name on the server's lists counts as itself, anything else as
//! `other`, so what clients send cannot grow the number of metrics.

use std::collections::HashSet;
use std::sync::RwLock;

/// The most names of each kind (tools, prompts, resources, resource templates) remembered.
pub const MAX_KNOWN_NAMES: usize = 1000;

/// The tool, prompt and resource names on the server's lists, learned from the lists as the
/// server answers them (once at start-up, again whenever a client lists).
///
/// ```
/// use mcp_lambda::metrics::KnownNames;
///
/// let names = KnownNames::default();
/// names.learn_tools(["add_item"]);
/// names.learn_resource_templates(["basket://{basket_id}"]);
/// assert_eq!(names.dimension("tools/call", Some("add_item")), "add_item");
/// assert_eq!(names.dimension("tools/call", Some("rm -rf /")), "other");
/// assert_eq!(names.dimension("resources/read", Some("basket://42")), "basket://{basket_id}");
/// assert_eq!(names.dimension("tasks/get", Some("a-task-id")), "-");
/// ```
#[derive(Debug, Default)]
pub struct KnownNames {
    inner: RwLock<Names>,
}

#[derive(Debug, Default)]
struct Names {
    tools: HashSet<String>,
    prompts: HashSet<String>,
    resources: HashSet<String>,
    /// `(template, its literal prefix)`.
    templates: Vec<(String, String)>,
}

fn learn<'a>(set: &mut HashSet<String>, names: impl IntoIterator<Item = &'a str>) {
    for name in names {
        if set.len() >= MAX_KNOWN_NAMES {
            return;
        }
        if !set.contains(name) {
            set.insert(name.to_owned());
        }
    }
}

impl KnownNames {
    /// Remembers tool names (`tools/list`).
    pub fn learn_tools<'a>(&self, names: impl IntoIterator<Item = &'a str>) {
        learn(&mut self.inner.write().expect("names lock").tools, names);
    }

    /// Remembers prompt names (`prompts/list`).
    pub fn learn_prompts<'a>(&self, names: impl IntoIterator<Item = &'a str>) {
        learn(&mut self.inner.write().expect("names lock").prompts, names);
    }

    /// Remembers resource URIs (`resources/list`).
    pub fn learn_resources<'a>(&self, uris: impl IntoIterator<Item = &'a str>) {
        learn(&mut self.inner.write().expect("names lock").resources, uris);
    }

    /// Remembers URI templates (`resources/templates/list`): a URI that starts with a
    /// template's literal part (up to its first `{`) counts as that template.
    pub fn learn_resource_templates<'a>(&self, templates: impl IntoIterator<Item = &'a str>) {
        let mut names = self.inner.write().expect("names lock");
        for template in templates {
            if names.templates.len() >= MAX_KNOWN_NAMES {
                return;
            }
            if names.templates.iter().any(|(t, _)| t == template) {
                continue;
            }
            let prefix = template.split('{').next().unwrap_or_default().to_owned();
            names.templates.push((template.to_owned(), prefix));
        }
        // The longest literal prefix wins.
        names
            .templates
            .sort_by_key(|(_, prefix)| std::cmp::Reverse(prefix.len()));
    }

    /// The `Name` dimension of a request for `method` naming `name`.
    pub fn dimension(&self, method: &str, name: Option<&str>) -> String {
        let names = self.inner.read().expect("names lock");
        let set = match method {
            "tools/call" => &names.tools,
            "prompts/get" => &names.prompts,
            "resources/read" => &names.resources,
            _ => return "-".into(),
        };
        let Some(name) = name else {
            return "other".into();
        };
        if set.contains(name) {
            return name.to_owned();
        }
        if method == "resources/read"
            && let Some((template, _)) = names
                .templates
                .iter()
                .find(|(_, prefix)| !prefix.is_empty() && name.starts_with(prefix.as_str()))
        {
            return template.clone();
        }
        "other".into()
    }
}
