//! Tool schemas every client accepts.
//!
//! `tools/list` serves each tool's `inputSchema` and `outputSchema` as the
//! handler built them, and what Rust handlers build (schemars, through rmcp's
//! macros) is valid JSON Schema 2020-12 that real clients still complain
//! about:
//! - schemars' own `format`s (`uint32`, `uint64`, `int64`, `double`, …) are
//!   not JSON Schema's. The TypeScript SDK v2 client (ajv with ajv-formats)
//!   prints `unknown format "uint32" ignored in schema at path …` for each of
//!   them, twice, every time it compiles an output schema.
//! - `"type": ["string", "null"]` (schemars' `Option<T>`) is legal, but the
//!   inspector's `--strict` lint (`type-union`) warns that clients mapping
//!   schemas onto a single-`type` dialect may reject the tool.
//!
//! [`make_portable`] rewrites a schema so that both accept it, keeping what it
//! means:
//! - A `format` is kept only if it is a JSON Schema 2020-12 format that
//!   ajv-formats knows ([`KEPT_FORMATS`]). The 2020-12 formats it does not
//!   know (`idn-email`, `idn-hostname`, `iri`, `iri-reference`) are dropped
//!   too: ajv ignores them anyway, with a warning, and a 2020-12 `format` is
//!   an annotation, so no validator is owed the assertion. The integer
//!   formats leave their range behind as `minimum`/`maximum`, unless the
//!   schema already has that bound (or its exclusive form): `uint32` becomes
//!   `0..=4294967295`, `uint64`/`uint128`/`uint` become `minimum: 0`, and the
//!   8-, 16- and 32-bit ones their full range. 64-bit and wider signed ranges
//!   are not written (beyond what a JSON number in JavaScript holds exactly);
//!   `float`/`double` imply nothing.
//! - A `type` array of distinct JSON types becomes `anyOf` branches with one
//!   `type` each, the inspector's own suggestion: `{"type": ["string",
//!   "null"], "minLength": 1, "description": …}` becomes `{"anyOf":
//!   [{"type": "string", "minLength": 1}, {"type": "null"}], "description":
//!   …}`. The keywords that only constrain one kind of value (`minLength`,
//!   `items`, `properties`, `minimum`, …) move into the branch of that kind,
//!   where they mean the same; everything else (annotations, `enum`, `const`,
//!   `$ref`, the applicators, and `unevaluatedProperties`/`unevaluatedItems`,
//!   which must keep seeing what `$ref` and the branches evaluated) stays
//!   beside the `anyOf`. A one-element array becomes the plain type. The
//!   root keeps `"type": "object"` (MCP requires it; arguments and structured
//!   content are always objects), so a root union that allows objects is
//!   narrowed to `"object"`.
//! - A boolean schema where a schema object is expected (the inspector's
//!   `boolean-schema` error) becomes its object spelling: `true` → `{}`,
//!   `false` → `{"not": {}}`. Under `additionalProperties`,
//!   `unevaluatedProperties`, `additionalItems` and `unevaluatedItems` the
//!   boolean is the usual spelling and stays.
//!
//! Not rewritten, because only the handler knows the fix: a schema that
//! constrains nothing (`{}`, the inspector's `untyped-schema`) and a `$ref`
//! to another document (`remote-ref`).
//!
//! Only subschema positions are walked (`properties`, `items`, `$defs`,
//! `anyOf`, …), never data: `enum`, `const`, `default` and `examples` values
//! and unknown keywords are left alone, and a property named `format` is a
//! property, not a keyword. A schema that needs nothing is never touched, and
//! [`make_schema_portable`] checks before it clones a shared schema.

use std::sync::Arc;

use rmcp::model::Tool;
use serde_json::{Map, Value};

type Object = Map<String, Value>;

/// The JSON Schema 2020-12 formats the TypeScript client's ajv-formats knows.
const KEPT_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Keywords whose value is one subschema (or, for `items`, an array of them).
const SCHEMA_KEYWORDS: &[&str] = &[
    "items",
    "contains",
    "not",
    "propertyNames",
    "if",
    "then",
    "else",
    "additionalProperties",
    "unevaluatedProperties",
    "additionalItems",
    "unevaluatedItems",
    "contentSchema",
];

/// Keywords whose value is an array of subschemas.
const SCHEMA_ARRAY_KEYWORDS: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems"];

/// Keywords whose value maps names to subschemas.
const SCHEMA_MAP_KEYWORDS: &[&str] = &[
    "properties",
    "patternProperties",
    "dependentSchemas",
    "dependencies",
    "$defs",
    "definitions",
];

/// Keywords where a boolean schema is the ordinary spelling.
const BOOLEAN_KEYWORDS: &[&str] = &[
    "additionalProperties",
    "unevaluatedProperties",
    "additionalItems",
    "unevaluatedItems",
];

/// The JSON Schema types.
const TYPES: &[&str] = &[
    "null", "boolean", "object", "array", "number", "integer", "string",
];

/// Beyond this depth nothing is checked or rewritten (schemas come from the
/// handler's code; this only keeps a pathological one from exhausting the
/// stack).
const MAX_DEPTH: usize = 128;

/// Tool schemas that had to be rewritten, by the handler's own `Arc`: a router keeps one `Arc`
/// per tool schema for the server's life, so each is rewritten once rather than on every
/// `tools/list` (a clone and a rewrite of every schema per request). A schema that is portable
/// as it is is not remembered: checking it is all the work there is, and a handler that builds
/// its tools anew per request would otherwise fill the list with schemas it has already
/// dropped, held alive for nothing and searched on every request (benches/history/issue-32.md).
/// The originals are held, so an address is never reused while it is remembered; past
/// [`MAX_REMEMBERED`] schemas (a handler that builds schemas needing a rewrite anew per
/// request) it starts over.
#[derive(Default)]
pub(crate) struct PortableSchemas {
    seen: std::sync::Mutex<Vec<(Arc<Object>, Arc<Object>)>>,
}

/// The most schemas [`PortableSchemas`] remembers.
const MAX_REMEMBERED: usize = 512;

impl std::fmt::Debug for PortableSchemas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PortableSchemas").finish_non_exhaustive()
    }
}

impl PortableSchemas {
    /// Makes the schemas `tools/list` serves for `tool` portable: from memory when this schema
    /// was seen before, otherwise cloning a shared schema only when it needs a change.
    pub(crate) fn apply(&self, tool: &mut Tool) {
        self.portable(&mut tool.input_schema);
        if let Some(schema) = &mut tool.output_schema {
            self.portable(schema);
        }
    }

    fn portable(&self, schema: &mut Arc<Object>) {
        {
            let seen = self.seen.lock().expect("portable schemas lock");
            if let Some((_, done)) = seen
                .iter()
                .find(|(original, _)| Arc::ptr_eq(original, schema))
            {
                *schema = done.clone();
                return;
            }
        }
        let original = schema.clone();
        make_schema_portable(schema);
        if Arc::ptr_eq(&original, schema) {
            // Portable as it was: nothing to remember.
            return;
        }
        let mut seen = self.seen.lock().expect("portable schemas lock");
        if seen.len() >= MAX_REMEMBERED {
            seen.clear();
        }
        seen.push((original, schema.clone()));
    }
}

/// [`make_portable`] behind an `Arc`: a schema that needs nothing keeps its
/// allocation (and every other holder's copy stays as it was).
pub(crate) fn make_schema_portable(schema: &mut Arc<Object>) {
    if !is_portable(schema) {
        make_portable(Arc::make_mut(schema));
    }
}

/// Whether [`make_portable`] would leave `schema` as it is.
pub(crate) fn is_portable(schema: &Object) -> bool {
    node_is_portable(schema, true, 0)
}

/// Rewrites a tool's root schema, and every subschema in it, so that the
/// TypeScript SDK v2 client and `inspector --cli --strict` accept it without
/// warnings, keeping its meaning (the module documentation has the rules).
/// A schema that needs nothing is left byte-identical.
pub(crate) fn make_portable(schema: &mut Object) {
    rewrite(schema, true, 0);
}

fn node_is_portable(node: &Object, root: bool, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return true;
    }
    if node
        .get("format")
        .is_some_and(|format| !kept_format(format))
    {
        return false;
    }
    if type_fix(node, root).is_some() {
        return false;
    }
    let mut portable = true;
    for_each_subschema(node, &mut |keyword, value| {
        portable = portable
            && match value {
                Value::Object(child) => node_is_portable(child, false, depth + 1),
                Value::Bool(_) => BOOLEAN_KEYWORDS.contains(&keyword),
                _ => true,
            };
    });
    portable
}

fn rewrite(node: &mut Object, root: bool, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    fix_format(node);
    if let Some(fix) = type_fix(node, root) {
        fix_type(node, fix);
    }
    // After the type fix, so that the keywords moved into new branches are
    // rewritten there.
    for_each_subschema_mut(node, &mut |keyword, value| match value {
        Value::Object(child) => rewrite(child, false, depth + 1),
        Value::Bool(accepts) if !BOOLEAN_KEYWORDS.contains(&keyword) => {
            *value = object_spelling(*accepts);
        }
        _ => {}
    });
}

fn kept_format(format: &Value) -> bool {
    format.as_str().is_some_and(|f| KEPT_FORMATS.contains(&f))
}

/// The range an integer format implies: (`minimum`, `maximum`).
fn implied_range(format: &str) -> (Option<i64>, Option<u64>) {
    match format {
        "int8" => (Some(i8::MIN.into()), Some(i8::MAX as u64)),
        "int16" => (Some(i16::MIN.into()), Some(i16::MAX as u64)),
        "int32" => (Some(i32::MIN.into()), Some(i32::MAX as u64)),
        "uint8" => (Some(0), Some(u8::MAX.into())),
        "uint16" => (Some(0), Some(u16::MAX.into())),
        "uint32" => (Some(0), Some(u32::MAX.into())),
        "uint64" | "uint128" | "uint" => (Some(0), None),
        _ => (None, None),
    }
}

/// Drops a format the clients do not know, leaving its range behind.
fn fix_format(node: &mut Object) {
    let Some(format) = node.get("format") else {
        return;
    };
    if kept_format(format) {
        return;
    }
    let (minimum, maximum) = format.as_str().map_or((None, None), implied_range);
    node.remove("format");
    if let Some(minimum) = minimum
        && !node.contains_key("minimum")
        && !node.contains_key("exclusiveMinimum")
    {
        node.insert("minimum".to_owned(), minimum.into());
    }
    if let Some(maximum) = maximum
        && !node.contains_key("maximum")
        && !node.contains_key("exclusiveMaximum")
    {
        node.insert("maximum".to_owned(), maximum.into());
    }
}

#[derive(Debug, Clone, Copy)]
enum TypeFix {
    /// `["string"]` → `"string"`.
    Single,
    /// The root: `["object", …]` → `"object"`.
    RootObject,
    /// `["string", "null"]` → `anyOf` branches.
    Split,
}

/// What the `type` of `node` needs, if anything. Only arrays of distinct JSON
/// types are touched (what the inspector flags); anything else is left as
/// the handler wrote it.
fn type_fix(node: &Object, root: bool) -> Option<TypeFix> {
    let Some(Value::Array(types)) = node.get("type") else {
        return None;
    };
    let known = |t: &Value| t.as_str().is_some_and(|t| TYPES.contains(&t));
    if types.is_empty()
        || !types.iter().all(known)
        || types
            .iter()
            .enumerate()
            .any(|(i, t)| types[..i].contains(t))
    {
        return None;
    }
    if types.len() == 1 {
        return Some(TypeFix::Single);
    }
    if root {
        return types
            .iter()
            .any(|t| t == "object")
            .then_some(TypeFix::RootObject);
    }
    // The branches go into `anyOf`, or into `allOf` beside an existing
    // `anyOf`; an `allOf` that is not an array leaves nowhere to put them.
    if node.contains_key("anyOf") && node.get("allOf").is_some_and(|all| !all.is_array()) {
        return None;
    }
    Some(TypeFix::Split)
}

/// The types a keyword constrains; `None` for the keywords that apply to
/// every value (and for annotations and unknown keywords). The
/// `unevaluated*` keywords are left out on purpose: they must stay beside the
/// `anyOf`, where they still see what every other keyword at that level
/// evaluated (`$ref`, `allOf`, and the branches themselves).
fn constrains(keyword: &str) -> Option<&'static [&'static str]> {
    const NUMBERS: &[&str] = &["number", "integer"];
    Some(match keyword {
        "multipleOf" | "maximum" | "exclusiveMaximum" | "minimum" | "exclusiveMinimum" => NUMBERS,
        "maxLength" | "minLength" | "pattern" | "format" | "contentEncoding"
        | "contentMediaType" | "contentSchema" => &["string"],
        "items" | "prefixItems" | "additionalItems" | "contains" | "maxContains"
        | "minContains" | "maxItems" | "minItems" | "uniqueItems" => &["array"],
        "properties"
        | "patternProperties"
        | "additionalProperties"
        | "propertyNames"
        | "required"
        | "maxProperties"
        | "minProperties"
        | "dependentRequired"
        | "dependentSchemas"
        | "dependencies" => &["object"],
        _ => return None,
    })
}

fn fix_type(node: &mut Object, fix: TypeFix) {
    let Some(Value::Array(types)) = node.remove("type") else {
        unreachable!("type_fix only answers for a type array");
    };
    match fix {
        TypeFix::Single => {
            let single = types.into_iter().next().expect("one type");
            node.insert("type".to_owned(), single);
        }
        TypeFix::RootObject => {
            node.insert("type".to_owned(), Value::from("object"));
        }
        TypeFix::Split => split(node, types),
    }
}

/// `{"type": [A, B], kA: …, kB: …, k: …}` → `{"anyOf": [{"type": A, kA: …},
/// {"type": B, kB: …}], k: …}`.
fn split(node: &mut Object, types: Vec<Value>) {
    let mut branches: Vec<Object> = types
        .into_iter()
        .map(|t| Object::from_iter([("type".to_owned(), t)]))
        .collect();
    let takes = |branch: &Object, applies: &[&str]| {
        branch["type"]
            .as_str()
            .is_some_and(|t| applies.contains(&t))
    };
    let moving: Vec<String> = node
        .keys()
        .filter(|k| constrains(k).is_some_and(|applies| branches.iter().any(|b| takes(b, applies))))
        .cloned()
        .collect();
    for keyword in moving {
        let applies = constrains(&keyword).expect("filtered above");
        let value = node.remove(&keyword).expect("listed from the node");
        let last = branches
            .iter()
            .rposition(|b| takes(b, applies))
            .expect("filtered above");
        for branch in &mut branches[..last] {
            if takes(branch, applies) {
                branch.insert(keyword.clone(), value.clone());
            }
        }
        branches[last].insert(keyword, value);
    }
    let any_of = Value::Array(branches.into_iter().map(Value::Object).collect());
    if node.contains_key("anyOf") {
        // Both must hold: the existing `anyOf`, and one of the types.
        let all_of = node
            .entry("allOf")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(all_of) = all_of {
            all_of.push(Value::Object(Object::from_iter([(
                "anyOf".to_owned(),
                any_of,
            )])));
        }
    } else {
        node.insert("anyOf".to_owned(), any_of);
    }
}

/// A boolean schema's object spelling, with the same meaning.
fn object_spelling(accepts: bool) -> Value {
    let mut schema = Object::new();
    if !accepts {
        schema.insert("not".to_owned(), Value::Object(Object::new()));
    }
    Value::Object(schema)
}

/// Calls `visit` with each value in a subschema position of `node` and the
/// keyword it sits under.
fn for_each_subschema(node: &Object, visit: &mut dyn FnMut(&str, &Value)) {
    for (keyword, value) in node {
        let keyword = keyword.as_str();
        match value {
            Value::Array(items)
                if SCHEMA_ARRAY_KEYWORDS.contains(&keyword) || keyword == "items" =>
            {
                items.iter().for_each(|item| visit(keyword, item));
            }
            Value::Object(map) if SCHEMA_MAP_KEYWORDS.contains(&keyword) => {
                map.values().for_each(|sub| visit(keyword, sub));
            }
            _ if SCHEMA_KEYWORDS.contains(&keyword) => visit(keyword, value),
            _ => {}
        }
    }
}

/// [`for_each_subschema`], mutably.
fn for_each_subschema_mut(node: &mut Object, visit: &mut dyn FnMut(&str, &mut Value)) {
    for (keyword, value) in node {
        let keyword = keyword.as_str();
        match value {
            Value::Array(items)
                if SCHEMA_ARRAY_KEYWORDS.contains(&keyword) || keyword == "items" =>
            {
                items.iter_mut().for_each(|item| visit(keyword, item));
            }
            Value::Object(map) if SCHEMA_MAP_KEYWORDS.contains(&keyword) => {
                map.values_mut().for_each(|sub| visit(keyword, sub));
            }
            _ if SCHEMA_KEYWORDS.contains(&keyword) => visit(keyword, value),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(value: Value) -> Object {
        match value {
            Value::Object(map) => map,
            other => panic!("not an object: {other}"),
        }
    }

    /// Rewrites `schema`, checks the result needs nothing more, and returns it.
    fn portable(schema: Value) -> Value {
        let mut schema = object(schema);
        make_portable(&mut schema);
        assert!(
            is_portable(&schema),
            "still not portable: {}",
            Value::Object(schema.clone())
        );
        let once = schema.clone();
        make_portable(&mut schema);
        assert_eq!(schema, once, "a second rewrite changed it again");
        Value::Object(schema)
    }

    fn property(schema: Value) -> Value {
        portable(json!({"type": "object", "properties": {"p": schema}}))["properties"]["p"].take()
    }

    #[test]
    fn a_uint32_format_becomes_its_range() {
        assert_eq!(
            property(json!({"type": "integer", "format": "uint32", "minimum": 0})),
            json!({"type": "integer", "minimum": 0, "maximum": 4294967295u64})
        );
    }

    #[test]
    fn the_64_bit_and_pointer_sized_unsigned_formats_become_a_lower_bound() {
        for format in ["uint64", "uint128", "uint"] {
            assert_eq!(
                property(json!({"type": "integer", "format": format})),
                json!({"type": "integer", "minimum": 0}),
                "{format}"
            );
        }
    }

    #[test]
    fn the_narrow_signed_and_unsigned_formats_become_their_full_range() {
        for (format, minimum, maximum) in [
            ("int8", -128i64, 127u64),
            ("int16", -32768, 32767),
            ("int32", -2147483648, 2147483647),
            ("uint8", 0, 255),
            ("uint16", 0, 65535),
        ] {
            assert_eq!(
                property(json!({"type": "integer", "format": format})),
                json!({"type": "integer", "minimum": minimum, "maximum": maximum}),
                "{format}"
            );
        }
    }

    #[test]
    fn the_wide_signed_and_the_float_formats_are_dropped_without_bounds() {
        for (ty, format) in [
            ("integer", "int64"),
            ("integer", "int128"),
            ("integer", "int"),
            ("number", "float"),
            ("number", "double"),
        ] {
            assert_eq!(
                property(json!({"type": ty, "format": format})),
                json!({"type": ty}),
                "{format}"
            );
        }
    }

    #[test]
    fn bounds_the_schema_already_has_win_over_the_ones_a_format_implies() {
        assert_eq!(
            property(json!({"type": "integer", "format": "uint32", "minimum": 1, "maximum": 1000})),
            json!({"type": "integer", "minimum": 1, "maximum": 1000})
        );
        assert_eq!(
            property(
                json!({"type": "integer", "format": "int32", "exclusiveMinimum": 0, "exclusiveMaximum": 10})
            ),
            json!({"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10})
        );
    }

    #[test]
    fn the_standard_formats_the_clients_know_are_kept() {
        for format in KEPT_FORMATS {
            let schema = json!({"type": "string", "format": format});
            assert_eq!(property(schema.clone()), schema, "{format}");
        }
    }

    #[test]
    fn other_formats_are_dropped_even_the_standard_ones_ajv_does_not_know() {
        for format in [
            "idn-email",
            "idn-hostname",
            "iri",
            "iri-reference",
            "ip",
            "url",
            "byte",
            "binary",
            "password",
            "my-own-format",
        ] {
            assert_eq!(
                property(json!({"type": "string", "format": format})),
                json!({"type": "string"}),
                "{format}"
            );
        }
        assert_eq!(
            property(json!({"type": "string", "format": 7})),
            json!({"type": "string"})
        );
    }

    #[test]
    fn a_nullable_string_becomes_an_any_of_with_a_null_branch_keeping_its_constraints() {
        assert_eq!(
            property(json!({
                "default": null,
                "description": "Optional.",
                "maxLength": 64,
                "minLength": 1,
                "pattern": "^[A-Za-z0-9_-]+$",
                "type": ["string", "null"]
            })),
            json!({
                "anyOf": [
                    {"type": "string", "maxLength": 64, "minLength": 1, "pattern": "^[A-Za-z0-9_-]+$"},
                    {"type": "null"}
                ],
                "default": null,
                "description": "Optional."
            })
        );
    }

    #[test]
    fn a_nullable_unsigned_integer_loses_its_format_and_keeps_its_range_in_the_integer_branch() {
        assert_eq!(
            property(json!({"type": ["integer", "null"], "format": "uint32", "minimum": 0})),
            json!({"anyOf": [
                {"type": "integer", "minimum": 0, "maximum": 4294967295u64},
                {"type": "null"}
            ]})
        );
    }

    #[test]
    fn each_keyword_of_a_wider_union_goes_to_every_type_it_constrains_and_the_rest_stays_beside() {
        assert_eq!(
            property(json!({
                "type": ["null", "integer", "number", "string", "array", "object"],
                "minimum": 0,
                "minLength": 1,
                "format": "date",
                "items": {"type": "string"},
                "required": ["a"],
                "enum": [null, 1, 1.5, "2026-01-01", ["x"], {"a": 1}],
                "title": "Anything but a boolean"
            })),
            json!({
                "anyOf": [
                    {"type": "null"},
                    {"type": "integer", "minimum": 0},
                    {"type": "number", "minimum": 0},
                    {"type": "string", "minLength": 1, "format": "date"},
                    {"type": "array", "items": {"type": "string"}},
                    {"type": "object", "required": ["a"]}
                ],
                "enum": [null, 1, 1.5, "2026-01-01", ["x"], {"a": 1}],
                "title": "Anything but a boolean"
            })
        );
    }

    #[test]
    fn a_keyword_for_a_type_outside_the_union_stays_where_it_was() {
        assert_eq!(
            property(json!({"type": ["string", "null"], "minimum": 3})),
            json!({"anyOf": [{"type": "string"}, {"type": "null"}], "minimum": 3})
        );
    }

    #[test]
    fn unevaluated_keywords_stay_beside_the_any_of_where_they_see_every_evaluated_property() {
        assert_eq!(
            property(json!({
                "type": ["object", "null"],
                "$ref": "#/$defs/Base",
                "properties": {"extra": {"type": "string"}},
                "unevaluatedProperties": false
            })),
            json!({
                "anyOf": [
                    {"type": "object", "properties": {"extra": {"type": "string"}}},
                    {"type": "null"}
                ],
                "$ref": "#/$defs/Base",
                "unevaluatedProperties": false
            })
        );
    }

    #[test]
    fn a_union_beside_an_existing_any_of_goes_into_all_of() {
        assert_eq!(
            property(json!({
                "type": ["string", "null"],
                "anyOf": [{"const": "a"}, {"const": null}],
                "allOf": [{"not": {"const": "b"}}]
            })),
            json!({
                "anyOf": [{"const": "a"}, {"const": null}],
                "allOf": [
                    {"not": {"const": "b"}},
                    {"anyOf": [{"type": "string"}, {"type": "null"}]}
                ]
            })
        );
        assert_eq!(
            property(
                json!({"type": ["string", "null"], "anyOf": [{"const": "a"}, {"const": null}]})
            ),
            json!({
                "anyOf": [{"const": "a"}, {"const": null}],
                "allOf": [{"anyOf": [{"type": "string"}, {"type": "null"}]}]
            })
        );
    }

    #[test]
    fn a_one_type_array_becomes_the_plain_type() {
        assert_eq!(
            property(json!({"type": ["string"], "minLength": 1})),
            json!({"type": "string", "minLength": 1})
        );
    }

    #[test]
    fn the_root_keeps_type_object() {
        assert_eq!(
            portable(json!({"type": ["object", "null"], "properties": {"a": {"type": "string"}}})),
            json!({"type": "object", "properties": {"a": {"type": "string"}}})
        );
        assert_eq!(
            portable(json!({"type": ["object"]})),
            json!({"type": "object"})
        );
    }

    #[test]
    fn type_arrays_with_unknown_or_repeated_types_are_left_as_written() {
        for schema in [
            json!({"type": ["string", "any"]}),
            json!({"type": ["string", "string"]}),
            json!({"type": []}),
            json!({"type": ["string", 1]}),
        ] {
            assert_eq!(property(schema.clone()), schema);
        }
        // A root union without "object" is not a tool schema; left alone too.
        let root = json!({"type": ["string", "null"]});
        assert_eq!(portable(root.clone()), root);
    }

    #[test]
    fn boolean_schemas_get_their_object_spelling_except_where_booleans_are_usual() {
        assert_eq!(
            portable(json!({
                "type": "object",
                "properties": {"anything": true, "forbidden": false},
                "additionalProperties": false,
                "unevaluatedProperties": true,
                "patternProperties": {"^x-": true},
                "$defs": {"Never": false}
            })),
            json!({
                "type": "object",
                "properties": {"anything": {}, "forbidden": {"not": {}}},
                "additionalProperties": false,
                "unevaluatedProperties": true,
                "patternProperties": {"^x-": {}},
                "$defs": {"Never": {"not": {}}}
            })
        );
        assert_eq!(
            property(
                json!({"type": "array", "items": false, "prefixItems": [true], "not": true, "contains": true})
            ),
            json!({"type": "array", "items": {"not": {}}, "prefixItems": [{}], "not": {}, "contains": {}})
        );
    }

    #[test]
    fn every_subschema_position_is_rewritten_however_deep() {
        let bad = || json!({"type": ["integer", "null"], "format": "uint8"});
        let good =
            json!({"anyOf": [{"type": "integer", "minimum": 0, "maximum": 255}, {"type": "null"}]});
        let out = portable(json!({
            "type": "object",
            "properties": {"a": {"type": "array", "items": {"type": "object", "properties": {"b": bad()}}}},
            "patternProperties": {"^p": bad()},
            "additionalProperties": bad(),
            "unevaluatedProperties": bad(),
            "propertyNames": {"type": "string", "format": "iri"},
            "dependentSchemas": {"a": {"properties": {"c": bad()}}},
            "dependencies": {"a": ["b"], "b": {"properties": {"d": bad()}}},
            "$defs": {"D": bad()},
            "definitions": {"E": {"$defs": {"F": bad()}}},
            "allOf": [bad()],
            "anyOf": [bad(), {"type": "object"}],
            "oneOf": [{"prefixItems": [bad(), bad()]}],
            "not": {"properties": {"g": bad()}},
            "if": {"properties": {"h": bad()}},
            "then": {"properties": {"i": bad()}},
            "else": {"items": [bad()], "additionalItems": bad(), "unevaluatedItems": bad(), "contains": bad()},
            "contentSchema": bad()
        }));
        for pointer in [
            "/properties/a/items/properties/b",
            "/patternProperties/^p",
            "/additionalProperties",
            "/unevaluatedProperties",
            "/dependentSchemas/a/properties/c",
            "/dependencies/b/properties/d",
            "/$defs/D",
            "/definitions/E/$defs/F",
            "/allOf/0",
            "/anyOf/0",
            "/oneOf/0/prefixItems/0",
            "/oneOf/0/prefixItems/1",
            "/not/properties/g",
            "/if/properties/h",
            "/then/properties/i",
            "/else/items/0",
            "/else/additionalItems",
            "/else/unevaluatedItems",
            "/else/contains",
            "/contentSchema",
        ] {
            assert_eq!(out.pointer(pointer), Some(&good), "{pointer}");
        }
        assert_eq!(out["propertyNames"], json!({"type": "string"}));
        assert_eq!(out["dependencies"]["a"], json!(["b"]));
    }

    #[test]
    fn data_and_names_that_look_like_keywords_are_not_schemas() {
        let schema = json!({
            "type": "object",
            "properties": {
                "format": {"type": "string", "format": "uuid"},
                "type": {"type": "string"}
            },
            "required": ["format", "type"],
            "default": {"format": "uint32", "type": ["string", "null"]},
            "examples": [{"format": "uint32", "type": ["string", "null"]}],
            "const": {"format": "uint32"},
            "enum": [{"type": ["string", "null"]}],
            "x-vendor": {"type": ["string", "null"], "format": "uint32", "items": true}
        });
        assert_eq!(portable(schema.clone()), schema);
    }

    #[test]
    fn already_portable_schemas_are_left_byte_identical() {
        let basket_like = r##"{"$schema":"https://json-schema.org/draft/2020-12/schema","$defs":{"Line":{"description":"One line.","properties":{"quantity":{"maximum":4294967295,"minimum":0,"type":"integer"},"sku":{"type":"string"}},"required":["sku","quantity"],"type":"object"}},"properties":{"basket_id":{"type":"string","format":"uuid"},"items":{"items":{"$ref":"#/$defs/Line"},"type":"array"},"note":{"anyOf":[{"type":"string","maxLength":64},{"type":"null"}],"default":null},"free":{},"strict":{"additionalProperties":false,"type":"object"}},"required":["basket_id","items"],"type":"object"}"##;
        // The schema the conformance suite's json-schema-2020-12 scenario
        // expects to find unchanged (conformance/src/tools.rs).
        let conformance = r##"{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","$defs":{"address":{"$anchor":"addressDef","type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},"properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"},"contactMethod":{"type":"string","enum":["phone","email"]},"phone":{"type":"string"},"email":{"type":"string"}},"allOf":[{"anyOf":[{"required":["phone"]},{"required":["email"]}]}],"if":{"properties":{"contactMethod":{"const":"phone"}},"required":["contactMethod"]},"then":{"required":["phone"]},"else":{"required":["email"]},"additionalProperties":false}"##;
        let custom = r#"{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}},"required":["region"]}"#;
        for text in [basket_like, conformance, custom] {
            let mut schema: Object = serde_json::from_str(text).unwrap();
            // As the map serializes it (sorted keys, or the text's order with
            // serde_json's preserve_order).
            let before = serde_json::to_string(&schema).unwrap();
            assert!(is_portable(&schema), "{text}");
            make_portable(&mut schema);
            assert_eq!(serde_json::to_string(&schema).unwrap(), before);
        }
    }

    #[test]
    fn a_portable_shared_schema_is_not_cloned_and_a_rewritten_one_leaves_the_other_holders_alone() {
        let clean = Arc::new(object(
            json!({"type": "object", "properties": {"a": {"type": "string"}}}),
        ));
        let mut served = Arc::clone(&clean);
        make_schema_portable(&mut served);
        assert!(Arc::ptr_eq(&clean, &served));

        let original =
            json!({"type": "object", "properties": {"n": {"type": "integer", "format": "uint32"}}});
        let shared = Arc::new(object(original.clone()));
        let mut served = Arc::clone(&shared);
        make_schema_portable(&mut served);
        assert!(!Arc::ptr_eq(&shared, &served));
        assert_eq!(Value::Object((*shared).clone()), original);
        assert_eq!(served["properties"]["n"]["maximum"], json!(4294967295u64));
    }

    #[test]
    fn a_tool_gets_both_its_schemas_rewritten() {
        let input =
            object(json!({"type": "object", "properties": {"id": {"type": ["string", "null"]}}}));
        let output = object(
            json!({"type": "object", "properties": {"n": {"type": "integer", "format": "uint64"}}}),
        );
        let tool = Tool::new("t", "a tool", input).with_raw_output_schema(Arc::new(output));
        let schemas = PortableSchemas::default();
        let mut first = tool.clone();
        schemas.apply(&mut first);
        // The same handler schema again: the rewrite remembered, not redone.
        let mut again = tool.clone();
        schemas.apply(&mut again);
        assert!(Arc::ptr_eq(&first.input_schema, &again.input_schema));
        assert!(Arc::ptr_eq(
            first.output_schema.as_ref().unwrap(),
            again.output_schema.as_ref().unwrap()
        ));
        let tool = again;
        assert_eq!(
            Value::Object((*tool.input_schema).clone()),
            json!({"type": "object", "properties": {"id": {"anyOf": [{"type": "string"}, {"type": "null"}]}}})
        );
        assert_eq!(
            Value::Object((*tool.output_schema.unwrap()).clone()),
            json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}})
        );
    }

    #[test]
    fn a_schema_portable_as_it_is_is_served_as_it_is_and_not_remembered() {
        let schemas = PortableSchemas::default();
        // A handler that builds its tools anew per request: each schema a new `Arc`.
        for _ in 0..3 {
            let mut tool = Tool::new(
                "t",
                "a tool",
                object(json!({"type": "object", "properties": {"id": {"type": "string"}}})),
            );
            let built = tool.input_schema.clone();
            schemas.apply(&mut tool);
            assert!(Arc::ptr_eq(&tool.input_schema, &built));
        }
        assert!(schemas.seen.lock().unwrap().is_empty());
    }

    #[test]
    fn what_schemars_derives_for_a_tool_comes_out_portable() {
        #[derive(schemars::JsonSchema)]
        #[allow(dead_code)]
        struct Args {
            count: u32,
            total: u64,
            ratio: f64,
            small: i8,
            note: Option<String>,
            limit: Option<u16>,
            lines: Vec<Line>,
            maybe_line: Option<Line>,
        }
        #[derive(schemars::JsonSchema)]
        #[allow(dead_code)]
        struct Line {
            sku: String,
            quantity: u32,
        }
        let schema = serde_json::to_value(schemars::schema_for!(Args)).unwrap();
        assert!(!is_portable(&object(schema.clone())));
        let out = portable(schema);
        assert_eq!(
            out["properties"]["count"],
            json!({"type": "integer", "minimum": 0, "maximum": 4294967295u64})
        );
        assert_eq!(
            out["properties"]["total"],
            json!({"type": "integer", "minimum": 0})
        );
        assert_eq!(out["properties"]["ratio"], json!({"type": "number"}));
        assert_eq!(
            out["properties"]["note"],
            json!({"anyOf": [{"type": "string"}, {"type": "null"}]})
        );
        assert_eq!(
            out["properties"]["limit"],
            json!({"anyOf": [{"type": "integer", "minimum": 0, "maximum": 65535}, {"type": "null"}]})
        );
        assert_eq!(
            out["$defs"]["Line"]["properties"]["quantity"],
            json!({"type": "integer", "minimum": 0, "maximum": 4294967295u64})
        );
        assert_eq!(out["type"], json!("object"));
    }

    #[test]
    fn a_schema_deeper_than_the_limit_is_neither_walked_nor_rewritten_below_it() {
        let mut schema = json!({"type": ["string", "null"]});
        for _ in 0..(MAX_DEPTH + 10) {
            schema = json!({"type": "array", "items": schema});
        }
        let mut schema = object(schema);
        assert!(is_portable(&schema));
        let before = schema.clone();
        make_portable(&mut schema);
        assert_eq!(schema, before);
    }
}
