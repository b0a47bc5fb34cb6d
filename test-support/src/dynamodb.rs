//! Shared by the DynamoDB tests: the test endpoint, a client on it, the table from `infra/`.
//!
//! The endpoint comes from `MCP_TEST_DYNAMODB_ENDPOINT` (set by `scripts/dynamodb-tests.sh`,
//! which starts DynamoDB Local on loopback). Without it the tests fail under CI (`CI=true`) and
//! are skipped with a loud message elsewhere.

use std::time::Duration;

use aws_config::Region;
use aws_credential_types::Credentials;
use mcp_lambda::aws::AwsTimeouts;
use mcp_lambda::handles::DynamoDbHandleStore;

/// The variable that names the DynamoDB-compatible endpoint the tests use.
pub const ENDPOINT_VAR: &str = "MCP_TEST_DYNAMODB_ENDPOINT";

/// The table every test shares (owners are unique per test, so tests never meet).
pub const TABLE: &str = "mcp-handles-test";

/// The test endpoint, or `None` (after a loud message) when DynamoDB tests should be skipped.
///
/// # Panics
///
/// Under CI (`CI=true`) when the endpoint is not set: the DynamoDB tests must run there.
pub fn endpoint(test: &str) -> Option<String> {
    if let Ok(endpoint) = std::env::var(ENDPOINT_VAR)
        && !endpoint.trim().is_empty()
    {
        return Some(endpoint.trim().trim_end_matches('/').to_owned());
    }
    let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
    let message = format!(
        "{ENDPOINT_VAR} is not set, so {test} has no DynamoDB to run against. Run \
         scripts/dynamodb-tests.sh (it starts DynamoDB Local on loopback, sets {ENDPOINT_VAR} and \
         runs these tests), or start one with scripts/dynamodb-local.sh start and export the \
         line it prints."
    );
    if ci {
        panic!("{message} Under CI the DynamoDB tests must run, not be skipped.");
    }
    eprintln!("\n!!!!!!!! SKIPPED: {message}\n");
    None
}

/// Timeouts for the ordinary clients of tests: generous, because DynamoDB Local (a JVM) on a
/// loaded 2-core machine can take seconds to answer, and a read timeout there makes the SDK
/// send the request again, which a request-counting test would see. Fault tests set their own
/// short timeouts.
pub fn timeouts() -> AwsTimeouts {
    AwsTimeouts {
        connect: std::time::Duration::from_secs(2),
        read: std::time::Duration::from_secs(10),
        operation: std::time::Duration::from_secs(30),
    }
}

/// A DynamoDB client on `endpoint` with dummy credentials (DynamoDB Local accepts any), built
/// as the server builds its own (`mcp_lambda::aws::dynamodb_client`: the stores' retries, not
/// the SDK's).
pub async fn client(endpoint: &str, timeouts: &AwsTimeouts) -> aws_sdk_dynamodb::Client {
    let sdk = mcp_lambda::aws::loader(timeouts)
        .endpoint_url(endpoint)
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("local", "local", None, None, "static"))
        .load()
        .await;
    mcp_lambda::aws::dynamodb_client(&sdk)
}

/// The shared test table on `endpoint`, created from `infra/handles-table.json` if missing.
pub async fn store(endpoint: &str) -> DynamoDbHandleStore {
    let client = client(endpoint, &timeouts()).await;
    DynamoDbHandleStore::create_table(&client, TABLE)
        .await
        .expect("creating the test table from infra/handles-table.json");
    DynamoDbHandleStore::new(client, TABLE)
}

/// The environment for a basket process that keeps its baskets in `table` on `endpoint`.
pub fn basket_env(endpoint: &str, table: &str) -> Vec<(String, String)> {
    [
        ("MCP_HANDLES_TABLE", table),
        ("AWS_ENDPOINT_URL_DYNAMODB", endpoint),
        ("AWS_REGION", "us-east-1"),
        ("AWS_ACCESS_KEY_ID", "local"),
        ("AWS_SECRET_ACCESS_KEY", "local"),
        // As `timeouts()`; a fault test pushes its own after these, and the later one wins.
        ("MCP_AWS_READ_TIMEOUT_MS", "10000"),
        ("MCP_AWS_OPERATION_TIMEOUT_MS", "30000"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// How long to wait for something that should be quick.
pub const PATIENCE: Duration = Duration::from_secs(30);
