//! The authorization server's records on the handles table: one item per record, one request
//! per operation.
//!
//! | attribute | type | meaning |
//! |---|---|---|
//! | `pk` | S | `o#<key>` (`o#client#…`, `o#consent#…`, `o#login#<hash>`, `o#code#<hash>`, `o#grant#…`, `o#registrations#<hour>`) |
//! | `data` | S | the record, compact JSON (a window's count: `n` instead) |
//! | `version` | N | 1 when made, +1 per replacement |
//! | `expires_at` | N | epoch seconds: the table's TTL attribute, for the sweeper |
//! | `expires_at_ms` | N | epoch milliseconds: the expiry every operation checks (the sweeper lags) |
//!
//! | operation | request | condition |
//! |---|---|---|
//! | create | `PutItem` | no live item (`attribute_not_exists(pk) OR expires_at_ms <= now`) |
//! | put | `PutItem` | none |
//! | get | `GetItem`, strongly consistent | the expiry, checked on the item read |
//! | take | `DeleteItem`, `ReturnValues=ALL_OLD` | the expiry, checked on the item returned: whoever deletes it is the only one who got it |
//! | replace | `PutItem` | `version = expected AND expires_at_ms > now` |
//! | delete | `DeleteItem` | none |
//! | count | `UpdateItem` `ADD n :one` | `attribute_not_exists(n) OR n < limit` |
//!
//! A take whose answer is lost and which is tried again finds nothing: the code or state it
//! held is then spent without its taker learning it, a refusal rather than a second use.

use std::time::Duration;

use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue};
use futures::future::BoxFuture;
use serde_json::Value;

use super::store::{OAuthStore, Record, StoreError};
use crate::{
    aws::{
        item::{Item, brief, n, number, s, text},
        table::{PK, Table},
    },
    env::now_ms,
};

/// The authorization server's store on DynamoDB.
#[derive(Debug, Clone)]
pub(crate) struct DynamoDbOAuthStore {
    table: Table,
}

fn key(name: &str) -> String {
    format!("o#{name}")
}

fn expiry_ms(now: u64, ttl: Duration) -> u64 {
    now.saturating_add(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX))
}

fn item(name: &str, value: &Value, version: u64, expires_at_ms: u64) -> Item {
    Item::from([
        (PK.to_string(), s(key(name))),
        ("data".to_string(), s(value.to_string())),
        ("version".to_string(), n(version)),
        ("expires_at".to_string(), n(expires_at_ms.div_ceil(1000))),
        ("expires_at_ms".to_string(), n(expires_at_ms)),
    ])
}

/// The record in `item`, if it is live at `now`.
fn record(item: Option<&Item>, now: u64) -> Option<Record> {
    let item = item?;
    if number(item, "expires_at_ms")? <= now {
        return None;
    }
    Some(Record {
        value: serde_json::from_str(text(item, "data")?).ok()?,
        version: number(item, "version")?,
    })
}

fn unavailable<E, R>(error: &aws_sdk_dynamodb::error::SdkError<E, R>) -> StoreError
where
    E: aws_sdk_dynamodb::error::ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    StoreError(brief(error))
}

fn condition_failed<E, R>(error: &aws_sdk_dynamodb::error::SdkError<E, R>) -> bool
where
    E: aws_sdk_dynamodb::error::ProvideErrorMetadata,
{
    error
        .as_service_error()
        .and_then(|e| e.code())
        .is_some_and(|code| code == "ConditionalCheckFailedException")
}

/// A conditional write's answer: `true` applied, `false` its condition refused it.
fn conditional<T, E, R>(
    answer: Result<T, aws_sdk_dynamodb::error::SdkError<E, R>>,
) -> Result<bool, StoreError>
where
    E: aws_sdk_dynamodb::error::ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    match answer {
        Ok(_) => Ok(true),
        Err(e) if condition_failed(&e) => Ok(false),
        Err(e) => Err(unavailable(&e)),
    }
}

impl DynamoDbOAuthStore {
    pub(crate) fn new(table: Table) -> Self {
        Self { table }
    }

    /// A `PutItem` of `item` into the table.
    fn put_item(
        &self,
        item: Item,
    ) -> aws_sdk_dynamodb::operation::put_item::builders::PutItemFluentBuilder {
        self.table
            .client()
            .put_item()
            .table_name(self.table.name())
            .set_item(Some(item))
    }

    /// A `DeleteItem` of the record `name`.
    fn delete_item(
        &self,
        name: &str,
    ) -> aws_sdk_dynamodb::operation::delete_item::builders::DeleteItemFluentBuilder {
        self.table
            .client()
            .delete_item()
            .table_name(self.table.name())
            .key(PK, s(key(name)))
    }
}

impl OAuthStore for DynamoDbOAuthStore {
    fn create(
        &self,
        name: String,
        value: Value,
        ttl: Duration,
    ) -> BoxFuture<'_, Result<bool, StoreError>> {
        Box::pin(async move {
            let now = now_ms();
            let request = self
                .put_item(item(&name, &value, 1, expiry_ms(now, ttl)))
                .condition_expression("attribute_not_exists(pk) OR expires_at_ms <= :now")
                .expression_attribute_values(":now", n(now));
            conditional(self.table.answer(|| request.clone().send()).await)
        })
    }

    fn put(
        &self,
        name: String,
        value: Value,
        ttl: Duration,
    ) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(async move {
            let request = self.put_item(item(&name, &value, 1, expiry_ms(now_ms(), ttl)));
            self.table
                .answer(|| request.clone().send())
                .await
                .map(|_| ())
                .map_err(|e| unavailable(&e))
        })
    }

    fn get(&self, name: String) -> BoxFuture<'_, Result<Option<Record>, StoreError>> {
        Box::pin(async move {
            let request = self.table.get_item(key(&name));
            let answer = self
                .table
                .answer(|| request.clone().send())
                .await
                .map_err(|e| unavailable(&e))?;
            Ok(record(answer.item(), now_ms()))
        })
    }

    fn take(&self, name: String) -> BoxFuture<'_, Result<Option<Record>, StoreError>> {
        Box::pin(async move {
            let request = self.delete_item(&name).return_values(ReturnValue::AllOld);
            let answer = self
                .table
                .answer(|| request.clone().send())
                .await
                .map_err(|e| unavailable(&e))?;
            Ok(record(answer.attributes(), now_ms()))
        })
    }

    fn replace(
        &self,
        name: String,
        version: u64,
        value: Value,
        ttl: Duration,
    ) -> BoxFuture<'_, Result<bool, StoreError>> {
        Box::pin(async move {
            let now = now_ms();
            let request = self
                .put_item(item(&name, &value, version + 1, expiry_ms(now, ttl)))
                .condition_expression("version = :version AND expires_at_ms > :now")
                .expression_attribute_values(":version", n(version))
                .expression_attribute_values(":now", n(now));
            conditional(self.table.answer(|| request.clone().send()).await)
        })
    }

    fn delete(&self, name: String) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(async move {
            let request = self.delete_item(&name);
            self.table
                .answer(|| request.clone().send())
                .await
                .map(|_| ())
                .map_err(|e| unavailable(&e))
        })
    }

    fn count(
        &self,
        name: String,
        limit: u64,
        ttl: Duration,
    ) -> BoxFuture<'_, Result<bool, StoreError>> {
        Box::pin(async move {
            // The window's key names its period, so the item is new in each window; its expiry
            // is set when it is made and left alone after.
            let expires = expiry_ms(now_ms(), ttl);
            let request = self
                .table
                .update_item(key(&name))
                .update_expression(
                    "ADD n :one SET expires_at = if_not_exists(expires_at, :secs), expires_at_ms = if_not_exists(expires_at_ms, :ms)",
                )
                .condition_expression("attribute_not_exists(n) OR n < :limit")
                .expression_attribute_values(":one", AttributeValue::N("1".into()))
                .expression_attribute_values(":limit", n(limit))
                .expression_attribute_values(":secs", n(expires.div_ceil(1000)))
                .expression_attribute_values(":ms", n(expires));
            conditional(self.table.answer(|| request.clone().send()).await)
        })
    }
}

#[cfg(test)]
mod tests {
    use aws_sdk_dynamodb::{
        config::{Credentials, Region},
        types::{AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType},
    };

    use super::*;

    /// The store on DynamoDB Local (`MCP_TEST_DYNAMODB_ENDPOINT`, set by the test command),
    /// on a table of its own: keeps the contract the memory store keeps.
    #[tokio::test]
    async fn the_dynamodb_store_keeps_the_contract() {
        let Some(endpoint) = std::env::var("MCP_TEST_DYNAMODB_ENDPOINT")
            .ok()
            .filter(|e| !e.trim().is_empty())
        else {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "MCP_TEST_DYNAMODB_ENDPOINT must be set under CI"
            );
            eprintln!(
                "SKIPPED: MCP_TEST_DYNAMODB_ENDPOINT is not set (scripts/dynamodb-tests.sh sets it)"
            );
            return;
        };
        let sdk = crate::aws::loader(&crate::aws::AwsTimeouts::default())
            .endpoint_url(endpoint.trim_end_matches('/'))
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::new("local", "local", None, None, "test"))
            .load()
            .await;
        let client = crate::aws::dynamodb_client(&sdk);
        let name = "mcp-oauth-contract-test";
        let created = client
            .create_table()
            .table_name(name)
            .attribute_definitions(
                AttributeDefinition::builder()
                    .attribute_name(PK)
                    .attribute_type(ScalarAttributeType::S)
                    .build()
                    .unwrap(),
            )
            .key_schema(
                KeySchemaElement::builder()
                    .attribute_name(PK)
                    .key_type(KeyType::Hash)
                    .build()
                    .unwrap(),
            )
            .billing_mode(BillingMode::PayPerRequest)
            .send()
            .await;
        if let Err(e) = &created {
            let code = e.as_service_error().and_then(|s| s.meta().code());
            assert_eq!(code, Some("ResourceInUseException"), "{e:?}");
        }
        let store = DynamoDbOAuthStore::new(Table::new(client, name));
        let prefix = format!("run-{}#", super::super::keys::random_token(8));
        super::super::store::contract::run(&store, &prefix).await;
    }
}
