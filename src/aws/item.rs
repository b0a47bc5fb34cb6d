//! DynamoDB items as the stores on the handles table write and read them: attribute builders
//! and readers (the handle store, the task store, the change feed), and what a failed SDK call
//! was, for the handle and task stores to turn into their own errors.

use std::collections::HashMap;
use std::fmt;

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::types::AttributeValue;

/// One item: attribute name → value.
pub(crate) type Item = HashMap<String, AttributeValue>;

/// A number attribute.
pub(crate) fn n(value: impl fmt::Display) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

/// A string attribute.
pub(crate) fn s(value: impl Into<String>) -> AttributeValue {
    AttributeValue::S(value.into())
}

/// The string attribute `name` of `item`; `None` when it is missing or not a string.
pub(crate) fn text<'a>(item: &'a Item, name: &str) -> Option<&'a str> {
    match item.get(name)? {
        AttributeValue::S(v) => Some(v),
        _ => None,
    }
}

/// The number attribute `name` of `item` as a whole number; `None` when it is missing, not a
/// number, or not a whole number in `u64`.
pub(crate) fn number(item: &Item, name: &str) -> Option<u64> {
    match item.get(name)? {
        AttributeValue::N(v) => v.parse().ok(),
        _ => None,
    }
}

/// What a failed SDK call was.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Failure<'a> {
    /// No answer within the configured timeout (`MCP_AWS_*_TIMEOUT_MS`).
    Timeout,
    /// The endpoint could not be reached: connection, TLS, DNS.
    Unreachable,
    /// DynamoDB refused the request itself (`ValidationException`: too large, a bad
    /// expression): the same request would be refused again.
    Refused {
        /// DynamoDB's message.
        message: &'a str,
    },
    /// Any other error DynamoDB answered (throttled after every retry, no table, no
    /// permission), by its code.
    Service {
        /// The error code, `unknown` when DynamoDB gave none.
        code: &'a str,
        /// DynamoDB's message, empty when it gave none.
        message: &'a str,
    },
    /// Anything else the SDK reports (an answer it could not read, a request it could not build).
    Other,
}

/// What `error` was.
pub(crate) fn failure<E, R>(error: &SdkError<E, R>) -> Failure<'_>
where
    E: ProvideErrorMetadata,
{
    match error {
        SdkError::TimeoutError(_) => Failure::Timeout,
        SdkError::DispatchFailure(_) => Failure::Unreachable,
        SdkError::ServiceError(service) => {
            let message = service.err().message().unwrap_or("");
            match service.err().code().unwrap_or("unknown") {
                "ValidationException" => Failure::Refused { message },
                code => Failure::Service { code, message },
            }
        }
        _ => Failure::Other,
    }
}

/// `error` in one line, for a message or a log: DynamoDB's code and message when it answered,
/// else the error and its causes (`timed out`, `io error: connection reset`). Never the raw
/// answer, which `DisplayErrorContext` appends (its headers and body).
pub(crate) fn brief<E, R>(error: &SdkError<E, R>) -> String
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: fmt::Debug,
{
    if let SdkError::ServiceError(service) = error {
        let code = service.err().code().unwrap_or("unknown");
        return match service.err().message() {
            Some(message) if !message.is_empty() => format!("{code}: {message}"),
            _ => code.to_owned(),
        };
    }
    let mut line = error.to_string();
    let mut cause = std::error::Error::source(error);
    while let Some(error) = cause {
        let text = error.to_string();
        if !line.ends_with(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
        cause = error.source();
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_dynamodb::config::http::HttpResponse as Response;
    use aws_sdk_dynamodb::error::{ConnectorError, ErrorMetadata};
    use aws_sdk_dynamodb::operation::get_item::GetItemError;
    use aws_smithy_types::body::SdkBody;

    #[test]
    fn attributes_read_back_what_was_written_and_nothing_else() {
        let item = Item::from([
            ("count".to_owned(), n(42u64)),
            ("name".to_owned(), s("basket")),
            ("negative".to_owned(), n(-1)),
            ("fraction".to_owned(), AttributeValue::N("1.5".into())),
        ]);
        assert_eq!(number(&item, "count"), Some(42));
        assert_eq!(text(&item, "name"), Some("basket"));
        assert_eq!(text(&item, "count"), None, "a number is not text");
        assert_eq!(number(&item, "name"), None, "text is not a number");
        assert_eq!(number(&item, "negative"), None);
        assert_eq!(number(&item, "fraction"), None);
        assert_eq!(text(&item, "missing"), None);
    }

    fn service_error(code: &str, message: &str) -> SdkError<GetItemError, Response> {
        let meta = ErrorMetadata::builder().code(code).message(message).build();
        SdkError::service_error(
            GetItemError::generic(meta),
            Response::new(400.try_into().unwrap(), SdkBody::empty()),
        )
    }

    #[test]
    fn a_validation_error_is_refused_and_every_other_code_kept() {
        assert_eq!(
            failure(&service_error("ValidationException", "Item size too large")),
            Failure::Refused {
                message: "Item size too large"
            }
        );
        assert_eq!(
            failure(&service_error(
                "ProvisionedThroughputExceededException",
                "slow down"
            )),
            Failure::Service {
                code: "ProvisionedThroughputExceededException",
                message: "slow down"
            }
        );
        let bare = SdkError::service_error(
            GetItemError::generic(ErrorMetadata::builder().build()),
            Response::new(500.try_into().unwrap(), SdkBody::empty()),
        );
        assert_eq!(
            failure(&bare),
            Failure::Service {
                code: "unknown",
                message: ""
            },
            "an error without a code or a message"
        );
        let unreadable: SdkError<GetItemError, Response> = SdkError::response_error(
            "not JSON",
            Response::new(200.try_into().unwrap(), SdkBody::empty()),
        );
        assert_eq!(failure(&unreadable), Failure::Other);
        let timeout: SdkError<GetItemError, Response> = SdkError::timeout_error("too slow");
        assert_eq!(failure(&timeout), Failure::Timeout);
        let unreachable: SdkError<GetItemError, Response> =
            SdkError::dispatch_failure(ConnectorError::io("refused".into()));
        assert_eq!(failure(&unreachable), Failure::Unreachable);
    }

    #[test]
    fn a_brief_error_is_one_line_without_the_raw_answer() {
        let throttled = service_error("ProvisionedThroughputExceededException", "slow down");
        assert_eq!(
            brief(&throttled),
            "ProvisionedThroughputExceededException: slow down"
        );
        let reset: SdkError<GetItemError, Response> =
            SdkError::dispatch_failure(ConnectorError::io("connection reset".into()));
        let line = brief(&reset);
        assert!(line.contains("connection reset"), "{line}");
        assert!(!line.contains('\n') && !line.contains("Response"), "{line}");
    }
}
