//! One request's record and its EMF line.

use std::time::Duration;

use super::KnownNames;
use crate::aws::DynamoDbUsage;

/// Which Lambda invocation a request is: put into the request's extensions by the Lambda
/// adapter, read by the metrics (and absent locally).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Invocation {
    /// Lambda's request id.
    pub request_id: String,
    /// The X-Ray trace header of the invocation (`Root=…;Parent=…;Sampled=…`), when traced.
    pub xray_trace_id: Option<String>,
}

impl Invocation {
    /// An invocation's ids.
    pub fn new(request_id: impl Into<String>, xray_trace_id: Option<String>) -> Self {
        Self {
            request_id: request_id.into(),
            xray_trace_id,
        }
    }
}

/// What one request did, as metrics see it.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct RequestRecord {
    /// The MCP method; `None` when refused before it was read.
    pub method: Option<String>,
    /// The tool, prompt or resource the request names (`Mcp-Name`), if any.
    pub name: Option<String>,
    /// The HTTP status.
    pub status: u16,
    /// The answer carried a `WWW-Authenticate` challenge: a 403 with one is the bearer token's
    /// (a scope it lacks), one without is the front's (a host not allowed, no CDN secret), which
    /// `AuthRefusals` does not count.
    pub auth_challenged: bool,
    /// The JSON-RPC error code of the answer, if it is an error.
    pub json_rpc_code: Option<i64>,
    /// Until the answer's last byte; `None` for a stream (`subscriptions/listen`).
    pub duration: Option<Duration>,
    /// The instance's first request.
    pub cold_start: bool,
    /// DynamoDB while it ran.
    pub dynamodb: DynamoDbUsage,
    /// The Lambda invocation, when on Lambda.
    pub invocation: Option<Invocation>,
    /// The trace id of a valid W3C `traceparent`.
    pub trace_id: Option<String>,
}

/// Whether a JSON-RPC error code is the server's own failure (vs the client's mistake).
fn server_error(code: i64) -> bool {
    code == -32603 || (-32099..=-32000).contains(&code)
}

const METRICS: [(&str, &str); 9] = [
    ("Requests", "Count"),
    ("Duration", "Milliseconds"),
    ("Errors", "Count"),
    ("ClientErrors", "Count"),
    ("AuthRefusals", "Count"),
    ("ColdStart", "Count"),
    ("DynamoDbRequests", "Count"),
    ("DynamoDbLatency", "Milliseconds"),
    ("DynamoDbThrottles", "Count"),
];

/// The dimension sets every record declares (the template's dashboard and alarms read them).
const DIMENSION_SETS: &[&[&str]] = &[
    &["Function"],
    &["Function", "Method"],
    &["Function", "Method", "Name"],
];

fn millis(d: Duration) -> f64 {
    (d.as_secs_f64() * 1000.0 * 1000.0).round() / 1000.0
}

impl RequestRecord {
    /// The record as one EMF JSON object (without the line end).
    ///
    /// ```
    /// use mcp_lambda::metrics::{KnownNames, RequestRecord};
    ///
    /// let mut record = RequestRecord::default();
    /// record.method = Some("tools/list".into());
    /// record.status = 200;
    /// let line = record.to_emf("mcp-lambda", "my-function", &KnownNames::default());
    /// let emf: serde_json::Value = serde_json::from_str(&line).unwrap();
    /// assert_eq!(emf["Method"], "tools/list");
    /// assert_eq!(emf["Requests"], 1);
    /// ```
    pub fn to_emf(&self, namespace: &str, function: &str, names: &KnownNames) -> String {
        let method = self.method.as_deref().unwrap_or("-");
        let name = match &self.method {
            Some(method) => names.dimension(method, self.name.as_deref()),
            None => "-".into(),
        };
        let code = self.json_rpc_code;
        let errors = self.status >= 500 || code.is_some_and(server_error);
        let client_errors = !errors
            && ((400..500).contains(&self.status) || code.is_some_and(|c| !server_error(c)));
        let auth = self.status == 401 || (self.status == 403 && self.auth_challenged);
        let timestamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_millis() as u64;
        // Written field by field into one buffer rather than built as a JSON tree and then
        // serialized: every invocation writes one.
        let mut line = Line(Vec::with_capacity(640));
        line.raw("{\"_aws\":{\"Timestamp\":");
        line.number(timestamp);
        line.raw(",\"CloudWatchMetrics\":[{\"Namespace\":");
        line.string(namespace);
        line.raw(",\"Dimensions\":[");
        for (i, set) in DIMENSION_SETS.iter().enumerate() {
            line.raw(if i == 0 { "[" } else { ",[" });
            for (j, dimension) in set.iter().enumerate() {
                if j > 0 {
                    line.raw(",");
                }
                line.string(dimension);
            }
            line.raw("]");
        }
        line.raw("],\"Metrics\":[");
        let mut first = true;
        for (metric, unit) in METRICS {
            if metric == "Duration" && self.duration.is_none() {
                continue;
            }
            if !first {
                line.raw(",");
            }
            first = false;
            line.raw("{\"Name\":");
            line.string(metric);
            line.raw(",\"Unit\":");
            line.string(unit);
            line.raw("}");
        }
        line.raw("]}]}");
        line.field("Function", |l| l.string(function));
        line.field("Method", |l| l.string(method));
        line.field("Name", |l| l.string(&name));
        line.field("Requests", |l| l.number(1));
        if let Some(duration) = self.duration {
            line.field("Duration", |l| l.float(millis(duration)));
        }
        line.field("Errors", |l| l.number(u8::from(errors)));
        line.field("ClientErrors", |l| l.number(u8::from(client_errors)));
        line.field("AuthRefusals", |l| l.number(u8::from(auth)));
        line.field("ColdStart", |l| l.number(u8::from(self.cold_start)));
        line.field("DynamoDbRequests", |l| l.number(self.dynamodb.requests));
        line.field("DynamoDbLatency", |l| {
            l.float(millis(self.dynamodb.latency))
        });
        line.field("DynamoDbThrottles", |l| l.number(self.dynamodb.throttles));
        line.field("httpStatus", |l| l.number(self.status));
        if let Some(code) = code {
            line.field("jsonRpcCode", |l| l.number(code));
        }
        if let Some(invocation) = &self.invocation {
            line.field("requestId", |l| l.string(&invocation.request_id));
            if let Some(trace) = &invocation.xray_trace_id {
                line.field("xrayTraceId", |l| l.string(trace));
            }
        }
        if let Some(trace) = &self.trace_id {
            line.field("traceId", |l| l.string(trace));
        }
        line.raw("}");
        line.into_string()
    }
}

/// An EMF line being written: JSON by hand, values written by serde_json straight into it.
struct Line(Vec<u8>);

impl Line {
    fn raw(&mut self, text: &str) {
        self.0.extend_from_slice(text.as_bytes());
    }

    /// A string, escaped; a number, as serde_json writes it (a non-finite float as `null`).
    fn value(&mut self, value: &(impl serde::Serialize + ?Sized)) {
        // Writing into a `Vec` cannot fail, nor can serializing a string or a number.
        let _ = serde_json::to_writer(&mut self.0, value);
    }

    fn string(&mut self, text: &str) {
        self.value(text);
    }

    fn number(&mut self, n: impl serde::Serialize) {
        self.value(&n);
    }

    fn float(&mut self, x: f64) {
        self.value(&x);
    }

    fn field(&mut self, name: &str, value: impl FnOnce(&mut Self)) {
        self.raw(",");
        self.string(name);
        self.raw(":");
        value(self);
    }

    fn into_string(self) -> String {
        // Only `&str`s and serde_json's output went in: always UTF-8.
        String::from_utf8(self.0).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn emf(record: &RequestRecord) -> Value {
        serde_json::from_str(&record.to_emf("ns", "fn", &KnownNames::default())).unwrap()
    }

    #[test]
    fn errors_are_classed_by_whose_they_are() {
        let mut record = RequestRecord {
            method: Some("tools/call".into()),
            status: 200,
            json_rpc_code: Some(-32602),
            ..Default::default()
        };
        let e = emf(&record);
        assert_eq!(
            (e["Errors"].clone(), e["ClientErrors"].clone()),
            (json!(0), json!(1))
        );
        record.json_rpc_code = Some(-32603);
        let e = emf(&record);
        assert_eq!(
            (e["Errors"].clone(), e["ClientErrors"].clone()),
            (json!(1), json!(0))
        );
        record.json_rpc_code = None;
        record.status = 401;
        let e = emf(&record);
        assert_eq!(
            (e["ClientErrors"].clone(), e["AuthRefusals"].clone()),
            (json!(1), json!(1))
        );
        record.status = 403;
        assert_eq!(
            emf(&record)["AuthRefusals"],
            0,
            "the front's 403: a host not allowed"
        );
        record.auth_challenged = true;
        assert_eq!(
            emf(&record)["AuthRefusals"],
            1,
            "the token's 403: a scope it lacks"
        );
        record.status = 503;
        assert_eq!(emf(&record)["Errors"], 1);
    }

    #[test]
    fn a_stream_has_no_duration_and_every_metric_named_is_present() {
        let record = RequestRecord {
            method: Some("subscriptions/listen".into()),
            status: 200,
            ..Default::default()
        };
        let e = emf(&record);
        let named: Vec<&str> = e["_aws"]["CloudWatchMetrics"][0]["Metrics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["Name"].as_str().unwrap())
            .collect();
        assert!(!named.contains(&"Duration"));
        for name in named {
            assert!(e.get(name).is_some(), "{name} named but absent");
        }
        assert_eq!(e["Name"], "-");
    }
}
