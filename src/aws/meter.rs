//! The SDK interceptor behind [`DynamoDbUsage`]: one count per attempt sent, its latency, and
//! whether DynamoDB throttled it.

use std::time::{Duration, Instant};

use aws_sdk_dynamodb::config::{
    ConfigBag, Intercept, RuntimeComponents,
    interceptors::{BeforeTransmitInterceptorContextRef, FinalizerInterceptorContextRef},
};
use aws_smithy_types::config_bag::{Storable, StoreReplace};

use super::DynamoDbUsage;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Counts every DynamoDB request a client sends (see [`dynamodb_client`](super::dynamodb_client)).
#[derive(Debug, Clone, Copy, Default)]
pub struct DynamoDbMeter;

/// When the current attempt went out.
#[derive(Debug, Clone, Copy)]
struct Sent(Instant);

impl Storable for Sent {
    type Storer = StoreReplace<Self>;
}

/// The error types DynamoDB answers a throttled request with (HTTP 400, `__type` in the body).
const THROTTLED: [&[u8]; 3] = [
    b"ProvisionedThroughputExceededException",
    b"ThrottlingException",
    b"RequestLimitExceeded",
];

impl Intercept for DynamoDbMeter {
    fn name(&self) -> &'static str {
        "mcp-lambda::aws::DynamoDbMeter"
    }

    fn read_before_transmit(
        &self,
        _context: &BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        cfg.interceptor_state().store_put(Sent(Instant::now()));
        Ok(())
    }

    fn read_after_attempt(
        &self,
        context: &FinalizerInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        // An attempt that failed before it was sent is no request.
        let Some(Sent(at)) = cfg.load::<Sent>().copied() else {
            return Ok(());
        };
        cfg.interceptor_state().unset::<Sent>();
        let throttled = context.response().is_some_and(|response| {
            response.status().as_u16() == 400
                && response.body().bytes().is_some_and(|body| {
                    THROTTLED
                        .iter()
                        .any(|kind| body.windows(kind.len()).any(|w| w == *kind))
                })
        });
        DynamoDbUsage::record(at.elapsed().max(Duration::from_micros(1)), throttled);
        Ok(())
    }
}
