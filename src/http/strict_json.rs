//! JSON that refuses a key repeated in any object (the *envelope* step's first parse).
//!
//! Parsers disagree on which duplicate wins (`serde_json` keeps the last, others the first),
//! so a body with one could mean one thing to the front and another to rmcp or the handler:
//! the envelope is parsed once with this and refused (-32700) if any object repeats a key.

use serde_json::Value;

/// A `serde_json::Value` parsed in one pass that refuses a key repeated in
/// any object: parsers disagree on which duplicate wins, and every layer must
/// read the same request.
pub(crate) struct StrictValue(pub(crate) Value);

impl<'de> serde::Deserialize<'de> for StrictValue {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(StrictVisitor)
    }
}

struct StrictVisitor;

impl<'de> serde::de::Visitor<'de> for StrictVisitor {
    type Value = StrictValue;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<StrictValue, E> {
        Ok(StrictValue(Value::Bool(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<StrictValue, E> {
        Ok(StrictValue(Value::Number(v.into())))
    }
    fn visit_u64<E>(self, v: u64) -> Result<StrictValue, E> {
        Ok(StrictValue(Value::Number(v.into())))
    }
    fn visit_f64<E>(self, v: f64) -> Result<StrictValue, E> {
        Ok(StrictValue(
            serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number),
        ))
    }
    fn visit_str<E>(self, v: &str) -> Result<StrictValue, E> {
        Ok(StrictValue(Value::String(v.to_owned())))
    }
    fn visit_string<E>(self, v: String) -> Result<StrictValue, E> {
        Ok(StrictValue(Value::String(v)))
    }
    fn visit_unit<E>(self) -> Result<StrictValue, E> {
        Ok(StrictValue(Value::Null))
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<StrictValue, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(StrictValue(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(StrictValue(Value::Array(items)))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<StrictValue, A::Error> {
        let mut object = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let StrictValue(value) = map.next_value()?;
            if object.insert(key, value).is_some() {
                return Err(serde::de::Error::custom("a repeated key"));
            }
        }
        Ok(StrictValue(Value::Object(object)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Value, serde_json::Error> {
        serde_json::from_str::<StrictValue>(text).map(|StrictValue(value)| value)
    }

    #[test]
    fn a_repeated_key_is_refused_at_any_depth_and_everything_else_reads_as_serde_json_does() {
        let text = r#"{"a":[1,-2,2.5,"x",true,null,{"b":{}}],"c":{"d":18446744073709551615}}"#;
        assert_eq!(
            parse(text).unwrap(),
            serde_json::from_str::<Value>(text).unwrap()
        );
        assert!(parse(r#"{"a":1,"a":2}"#).is_err());
        assert!(parse(r#"{"a":{"b":1,"b":1}}"#).is_err());
        assert!(parse(r#"[{"x":0},{"y":{"z":[{"k":1,"k":2}]}}]"#).is_err());
        assert!(parse(r#"{"a":1,"A":2}"#).is_ok(), "keys are case-sensitive");
    }
}
