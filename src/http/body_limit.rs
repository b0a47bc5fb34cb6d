//! The body, read whole and capped at `MCP_MAX_BODY_BYTES` (413), within the
//! local server's read deadline (408, `deadline.rs`).
//!
//! A declared `Content-Length` over the cap is refused before a byte is read.

use bytes::Bytes;
use http::{HeaderMap, header};
use http_body::Body;
use http_body_util::{BodyExt, Limited};

use super::{deadline::ReadTimeout, refusal::Rejection};

/// Reads `body` up to `limit` bytes.
pub(crate) async fn collect<B>(
    headers: &HeaderMap,
    body: B,
    limit: usize,
) -> Result<Bytes, Rejection>
where
    B: Body,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let too_large = || Rejection::BodyTooLarge { limit };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(too_large());
    }
    match Limited::new(body, limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(error) if error.is::<http_body_util::LengthLimitError>() => Err(too_large()),
        Err(error) if error.is::<ReadTimeout>() => Err(Rejection::RequestTimeout),
        Err(_) => Err(Rejection::InvalidRequest(
            "the request body could not be read",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;
    use http_body_util::Full;

    #[tokio::test]
    async fn bodies_over_the_cap_are_413_declared_or_not() {
        let body = || Full::new(Bytes::from_static(b"0123456789"));
        assert_eq!(
            collect(&HeaderMap::new(), body(), 10).await.unwrap(),
            "0123456789"
        );
        let refused = collect(&HeaderMap::new(), body(), 9).await.unwrap_err();
        assert_eq!(refused, Rejection::BodyTooLarge { limit: 9 });
        let mut declared = HeaderMap::new();
        declared.insert(header::CONTENT_LENGTH, HeaderValue::from_static("11"));
        let refused = collect(&declared, body(), 10).await.unwrap_err();
        assert_eq!(refused, Rejection::BodyTooLarge { limit: 10 });
    }
}
