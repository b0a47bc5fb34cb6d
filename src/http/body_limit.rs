//! The body, read whole and capped at `MCP_MAX_BODY_BYTES` (413), within the
//! local server's read deadline (408, `deadline.rs`).
//!
//! A declared `Content-Length` over the cap is refused before a byte is read.

use bytes::{Buf as _, Bytes};
use http::{HeaderMap, header};
use http_body::Body;
use http_body_util::{BodyExt, combinators::UnsyncBoxBody};

use super::{deadline::ReadTimeout, refusal::Rejection};

/// A request body as every step reads it, whatever the host's body type (hyper's,
/// `lambda_http`'s, a test's): made one type at the service's edge, as axum does.
pub(crate) type RequestBody = UnsyncBoxBody<Bytes, BoxError>;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

pub(crate) fn request_body<B>(body: B) -> RequestBody
where
    B: Body + Send + 'static,
    B::Error: Into<BoxError>,
{
    body.map_frame(|frame| frame.map_data(|mut data| data.copy_to_bytes(data.remaining())))
        .map_err(|error| -> BoxError { error.into() })
        .boxed_unsync()
}

/// Reads `body` up to `limit` bytes.
pub(crate) async fn collect(
    headers: &HeaderMap,
    body: RequestBody,
    limit: usize,
) -> Result<Bytes, Rejection> {
    let too_large = || Rejection::BodyTooLarge { limit };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(too_large());
    }
    // A body in one frame (the usual case, and always on Lambda) is kept as it came.
    let (mut body, mut first, mut rest) = (body, None::<Bytes>, bytes::BytesMut::new());
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|error| match error.is::<ReadTimeout>() {
            true => Rejection::RequestTimeout,
            false => Rejection::InvalidRequest("the request body could not be read"),
        })?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        let held = first.as_ref().map_or(0, Bytes::len) + rest.len();
        if held + data.len() > limit {
            return Err(too_large());
        }
        match &first {
            None => first = Some(data),
            Some(_) => rest.extend_from_slice(&data),
        }
    }
    Ok(match first {
        None => Bytes::new(),
        Some(first) if rest.is_empty() => first,
        Some(first) => {
            let mut whole = bytes::BytesMut::from(&first[..]);
            whole.extend_from_slice(&rest);
            whole.freeze()
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;
    use http_body_util::Full;

    #[tokio::test]
    async fn bodies_over_the_cap_are_413_declared_or_not() {
        let body = || request_body(Full::new(Bytes::from_static(b"0123456789")));
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

    #[tokio::test]
    async fn a_body_in_many_frames_is_read_whole_and_capped_across_them() {
        let frames = || {
            let chunks = ["{\"a\":", "1", "}"]
                .map(|c| Ok::<_, std::convert::Infallible>(http_body::Frame::data(Bytes::from(c))));
            request_body(http_body_util::StreamBody::new(futures::stream::iter(
                chunks,
            )))
        };
        let read = collect(&HeaderMap::new(), frames(), 7).await.unwrap();
        assert_eq!(read, r#"{"a":1}"#);
        let refused = collect(&HeaderMap::new(), frames(), 6).await.unwrap_err();
        assert_eq!(refused, Rejection::BodyTooLarge { limit: 6 });
    }
}
