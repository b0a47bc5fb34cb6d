//! The caller's W3C trace context (`traceparent`), read so a request's log lines and its
//! metrics record can be found from the client's trace. A malformed header is ignored and never
//! echoed.

use http::HeaderMap;

/// The trace id of a valid `traceparent` (version `00`: `00-<32 hex>-<16 hex>-<2 hex>`, ids
/// not all zero; W3C Trace Context §3.2), lowercase as sent.
pub(crate) fn trace_id(headers: &HeaderMap) -> Option<String> {
    let value = headers.get("traceparent")?.to_str().ok()?.trim();
    let mut fields = value.split('-');
    let (version, trace, parent, flags) = (
        fields.next()?,
        fields.next()?,
        fields.next()?,
        fields.next()?,
    );
    let hex = |s: &str, len: usize| {
        s.len() == len
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    let zero = |s: &str| s.bytes().all(|b| b == b'0');
    (fields.next().is_none()
        && version == "00"
        && hex(trace, 32)
        && !zero(trace)
        && hex(parent, 16)
        && !zero(parent)
        && hex(flags, 2))
    .then(|| trace.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(value: &str) -> Option<String> {
        let mut headers = HeaderMap::new();
        headers.insert("traceparent", value.parse().unwrap());
        trace_id(&headers)
    }

    #[test]
    fn only_a_well_formed_traceparent_is_read() {
        assert_eq!(
            of("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").as_deref(),
            Some("4bf92f3577b34da6a3ce929d0e0e4736")
        );
        for bad in [
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-<script>alert(1)</script>-00f067aa0ba902b7-01",
            "",
        ] {
            assert_eq!(of(bad), None, "{bad}");
        }
    }
}
