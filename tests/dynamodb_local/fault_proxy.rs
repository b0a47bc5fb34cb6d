//! The fault proxy (`test-support/src/fault_proxy.rs`) against a real DynamoDB-compatible
//! server, DynamoDB Local on loopback (started by `scripts/dynamodb-tests.sh`, which sets
//! `MCP_TEST_DYNAMODB_ENDPOINT`), with the real AWS SDK client the stores use: each fault does
//! what it says, which the proxy's log and a read made directly on DynamoDB Local (not through
//! the proxy) confirm, so the tests of the store's bad days (issue 29) can trust it.
//!
//! - forwarding: sized and chunked bodies, on one kept-alive connection;
//! - throttling and 500s: nothing applied, the SDK's error after its own attempts (three, the
//!   log shows; how long they took is printed);
//! - a reset: nothing applied, a connection error, the SDK's kept-alive connection gone;
//! - a lost answer: applied all the same while the caller sees an error, and a conditional
//!   write's retry meets its own landed attempt;
//! - a delay delays (and past the read timeout, the SDK tries again while the first lands);
//! - down: connecting is refused until `up()`, and a `Down` rule takes it down mid-call;
//! - rules by body text and time window, and a seeded probability that picks the same
//!   requests for the same seed.
//!
//! The SDK's retry quota belongs to the process, not the client (a token bucket per service:
//! 500 tokens, 5 per retry of a throttled attempt; 1 back per first attempt that succeeds), so
//! every test in this binary draws on one quota: these spend a few dozen tokens. A test that
//! makes more than about 100 retries leaves every DynamoDB client of the process without
//! retries (one attempt per call) until successes refill it.
//!
//! Without `MCP_TEST_DYNAMODB_ENDPOINT` every test fails under CI and is skipped, loudly,
//! elsewhere.

use mcp_lambda_test_support as support;

use std::convert::Infallible;
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::types::AttributeValue;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, StreamBody};
use mcp_lambda::aws::{AwsTimeouts, MAX_ATTEMPTS};
use mcp_lambda::handles::HandleId;
use support::dynamodb::{TABLE, client, endpoint, timeouts};
use support::fault_proxy::{Entry, Fault, FaultProxy, Rule};

/// The proxy in front of DynamoDB Local, and a client on DynamoDB Local itself (to see what
/// really landed).
async fn setup(test: &str) -> Option<(FaultProxy, Client)> {
    let endpoint = endpoint(test)?;
    support::dynamodb::store(&endpoint).await; // the table exists
    let proxy = FaultProxy::start(&endpoint).await;
    Some((proxy, client(&endpoint, &timeouts()).await))
}

/// A key no other test uses.
fn key() -> String {
    format!("fault-proxy#{}", HandleId::random().unwrap())
}

/// A client on `endpoint` with the SDK's standard retries ([`MAX_ATTEMPTS`] attempts), as a
/// user's own client has them: what the proxy's faults are shown against. (The crate's own
/// client, `support::dynamodb::client`, has them off: the stores retry by their own policy.)
async fn sdk_client(endpoint: &str, timeouts: &AwsTimeouts) -> Client {
    let config = client(endpoint, timeouts).await.config().to_builder();
    Client::from_conf(
        config
            .retry_config(RetryConfig::standard().with_max_attempts(MAX_ATTEMPTS))
            .build(),
    )
}

/// The same client as `through`, without the SDK's retries: one request per call.
fn single_attempt(through: &Client) -> Client {
    let config = through.config().to_builder();
    Client::from_conf(config.retry_config(RetryConfig::disabled()).build())
}

async fn put(
    client: &Client,
    pk: &str,
) -> Result<(), SdkError<aws_sdk_dynamodb::operation::put_item::PutItemError>> {
    let item = client.put_item().table_name(TABLE);
    let item = item.item("pk", AttributeValue::S(pk.to_owned()));
    item.item("v", AttributeValue::S("x".into()))
        .send()
        .await
        .map(drop)
}

async fn get(
    client: &Client,
    pk: &str,
) -> Result<bool, SdkError<aws_sdk_dynamodb::operation::get_item::GetItemError>> {
    let out = client.get_item().table_name(TABLE).consistent_read(true);
    let out = out
        .key("pk", AttributeValue::S(pk.to_owned()))
        .send()
        .await?;
    Ok(out.item.is_some())
}

/// The fault tests' write the proxy fails: a put of a new key through `client` that must fail;
/// the key, the error and how long the SDK took over its attempts.
async fn a_failed_put(
    client: &Client,
) -> (
    String,
    SdkError<aws_sdk_dynamodb::operation::put_item::PutItemError>,
    Duration,
) {
    let pk = key();
    let started = Instant::now();
    let err = put(client, &pk).await.unwrap_err();
    (pk, err, started.elapsed())
}

/// Whether `pk` is in DynamoDB Local, asked directly.
async fn landed(direct: &Client, pk: &str) -> bool {
    get(direct, pk)
        .await
        .expect("reading DynamoDB Local directly")
}

fn of(proxy: &FaultProxy, op: &str) -> Vec<Entry> {
    proxy.log().into_iter().filter(|e| e.op == op).collect()
}

fn actions(entries: &[Entry]) -> Vec<Fault> {
    entries.iter().map(|e| e.action).collect()
}

/// The gaps between consecutive attempts, for the report.
fn gaps(entries: &[Entry]) -> Vec<Duration> {
    entries.windows(2).map(|w| w[1].at - w[0].at).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forwards_sized_and_chunked_bodies_on_one_kept_alive_connection() {
    let Some((proxy, _)) = setup("the fault proxy's forwarding test").await else {
        return;
    };
    let through = sdk_client(&proxy.url, &timeouts()).await;
    let pk = key();
    // Back to back, a request can race its connection's return to the SDK's pool.
    let pause = || tokio::time::sleep(Duration::from_millis(100));
    put(&through, &pk).await.unwrap();
    pause().await;
    assert!(get(&through, &pk).await.unwrap());
    pause().await;
    assert!(!get(&through, &key()).await.unwrap());
    let log = proxy.log();
    let ops: Vec<_> = log
        .iter()
        .map(|e| (e.op.as_str(), e.action, e.status))
        .collect();
    assert_eq!(
        ops,
        [
            ("PutItem", Fault::Forward, Some(200)),
            ("GetItem", Fault::Forward, Some(200)),
            ("GetItem", Fault::Forward, Some(200))
        ]
    );
    assert!(log[0].body.contains(&pk), "{:?}", log[0]);
    assert_ne!(log[1].fingerprint, log[2].fingerprint, "different bodies");
    assert_eq!(
        proxy.connections(),
        1,
        "the SDK's connection was kept alive"
    );

    // A chunked body and a sized one, on one connection of a plain HTTP/1.1 client.
    let stream = tokio::net::TcpStream::connect(proxy.url.trim_start_matches("http://")).await;
    let io = hyper_util::rt::TokioIo::new(stream.unwrap());
    let (mut send, connection) = hyper::client::conn::http1::handshake(io).await.unwrap();
    tokio::spawn(connection);
    let chunks = ["{\"Lim", "it\":1}"]
        .map(|c| Ok::<_, Infallible>(hyper::body::Frame::data(Bytes::from(c))));
    let bodies = [
        StreamBody::new(futures::stream::iter(chunks)).boxed(),
        Full::new(Bytes::from("{}")).boxed(),
    ];
    let mut statuses = Vec::new();
    for body in bodies {
        let request = http::Request::post("/")
            .header("x-amz-target", "DynamoDB_20120810.ListTables")
            .header("content-type", "application/x-amz-json-1.0")
            .body(body)
            .unwrap();
        send.ready().await.unwrap();
        let answer = send.send_request(request).await.unwrap();
        statuses.push(Some(answer.status().as_u16()));
        answer.into_body().collect().await.unwrap();
    }
    let lists = of(&proxy, "ListTables");
    let seen: Vec<_> = lists.iter().map(|e| e.body.as_str()).collect();
    assert_eq!(
        seen,
        ["{\"Limit\":1}", "{}"],
        "the chunked body arrived whole"
    );
    assert_eq!(lists.iter().map(|e| e.status).collect::<Vec<_>>(), statuses);
    assert_eq!(proxy.connections(), 2, "both on the second connection");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_throttled_write_is_not_applied_and_the_sdk_reports_throttling_after_its_attempts() {
    let Some((proxy, direct)) = setup("the fault proxy's throttling test").await else {
        return;
    };
    // The server's default timeouts (MCP_AWS_*: 1 s connect, 2 s read, 5 s per call).
    let through = sdk_client(&proxy.url, &AwsTimeouts::default()).await;
    proxy.rule(Rule::op("PutItem").act(Fault::Throttle));
    let (pk, err, took) = a_failed_put(&through).await;
    assert_eq!(
        err.code(),
        Some("ProvisionedThroughputExceededException"),
        "{}",
        DisplayErrorContext(&err)
    );
    assert!(
        err.into_service_error()
            .is_provisioned_throughput_exceeded_exception()
    );
    let puts = of(&proxy, "PutItem");
    assert_eq!(actions(&puts), vec![Fault::Throttle; MAX_ATTEMPTS as usize]);
    assert!(
        puts.iter()
            .all(|e| e.status.is_none() && e.fingerprint == puts[0].fingerprint)
    );
    assert!(
        !landed(&direct, &pk).await,
        "a throttled write is not applied"
    );
    assert_eq!(
        proxy.connections(),
        1,
        "a throttled answer keeps the connection"
    );
    eprintln!(
        "throttled PutItem: {} attempts, gaps {:?}, failed after {took:?}",
        puts.len(),
        gaps(&puts)
    );

    // The same with 500s.
    proxy.clear();
    proxy.rule(Rule::op("PutItem").act(Fault::ServerError));
    let (pk, err, took) = a_failed_put(&through).await;
    assert_eq!(
        err.code(),
        Some("InternalServerError"),
        "{}",
        DisplayErrorContext(&err)
    );
    let puts: Vec<_> = of(&proxy, "PutItem")
        .into_iter()
        .filter(|e| e.action == Fault::ServerError)
        .collect();
    assert_eq!(puts.len(), MAX_ATTEMPTS as usize);
    assert!(
        !landed(&direct, &pk).await,
        "a 500 the proxy made is not applied"
    );
    eprintln!(
        "500 on PutItem: {} attempts, gaps {:?}, failed after {took:?}",
        puts.len(),
        gaps(&puts)
    );

    proxy.clear();
    put(&through, &pk).await.unwrap();
    assert!(landed(&direct, &pk).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reset_applies_nothing_and_drops_the_sdks_connection() {
    let Some((proxy, direct)) = setup("the fault proxy's reset test").await else {
        return;
    };
    let through = sdk_client(&proxy.url, &AwsTimeouts::default()).await;
    proxy.rule(Rule::op("PutItem").act(Fault::Reset));
    let (pk, err, took) = a_failed_put(&through).await;
    assert!(
        matches!(err, SdkError::DispatchFailure(_)),
        "{}",
        DisplayErrorContext(&err)
    );
    let puts = of(&proxy, "PutItem");
    assert_eq!(actions(&puts), vec![Fault::Reset; MAX_ATTEMPTS as usize]);
    assert_eq!(
        proxy.connections(),
        MAX_ATTEMPTS as usize,
        "each attempt on a new connection"
    );
    assert!(
        !landed(&direct, &pk).await,
        "a reset request is not applied"
    );
    eprintln!(
        "reset PutItem: {} attempts, gaps {:?}, failed after {took:?}: {}",
        puts.len(),
        gaps(&puts),
        DisplayErrorContext(&err)
    );

    // One reset on the kept-alive connection: the SDK's retry opens another, and lands.
    proxy.clear();
    assert!(!get(&through, &pk).await.unwrap());
    let before = proxy.connections();
    proxy.rule(Rule::op("PutItem").next(1).act(Fault::Reset));
    put(&through, &pk).await.unwrap();
    let puts = of(&proxy, "PutItem");
    assert_eq!(
        actions(&puts[MAX_ATTEMPTS as usize..]),
        [Fault::Reset, Fault::Forward]
    );
    assert_eq!(proxy.connections(), before + 1);
    assert!(landed(&direct, &pk).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_answer_is_applied_while_the_caller_sees_an_error() {
    let Some((proxy, direct)) = setup("the fault proxy's lost-answer test").await else {
        return;
    };
    let through = sdk_client(&proxy.url, &timeouts()).await;
    proxy.rule(Rule::op("PutItem").act(Fault::LoseAnswer));
    let pk = key();
    let err = put(&through, &pk).await.unwrap_err();
    assert!(
        matches!(err, SdkError::DispatchFailure(_)),
        "{}",
        DisplayErrorContext(&err)
    );
    let puts = of(&proxy, "PutItem");
    assert_eq!(
        actions(&puts),
        vec![Fault::LoseAnswer; MAX_ATTEMPTS as usize]
    );
    assert!(puts.iter().all(|e| e.status == Some(200)), "{puts:?}");
    assert!(
        landed(&direct, &pk).await,
        "the write landed; only its answer was lost"
    );

    // A conditional create whose first answer is lost: the SDK's retry meets its own write.
    proxy.clear();
    proxy.rule(Rule::op("PutItem").next(1).act(Fault::LoseAnswer));
    let pk = key();
    let create = through
        .put_item()
        .table_name(TABLE)
        .item("pk", AttributeValue::S(pk.clone()));
    let err = create
        .condition_expression("attribute_not_exists(pk)")
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some("ConditionalCheckFailedException"));
    let puts = of(&proxy, "PutItem");
    let last: Vec<_> = puts[puts.len() - 2..]
        .iter()
        .map(|e| (e.action, e.status, e.error.as_deref()))
        .collect();
    assert_eq!(
        last,
        [
            (Fault::LoseAnswer, Some(200), None),
            (
                Fault::Forward,
                Some(400),
                Some("ConditionalCheckFailedException")
            )
        ]
    );
    assert!(landed(&direct, &pk).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delay_delays_and_past_the_read_timeout_the_sdk_tries_again() {
    let Some((proxy, _)) = setup("the fault proxy's delay test").await else {
        return;
    };
    let through = sdk_client(&proxy.url, &timeouts()).await;
    let pk = key();
    assert!(!get(&through, &pk).await.unwrap());
    proxy.rule(
        Rule::op("GetItem")
            .next(1)
            .act(Fault::Delay(Duration::from_millis(1500))),
    );
    let started = Instant::now();
    assert!(!get(&through, &pk).await.unwrap());
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(1500), "{took:?}");
    let gets = of(&proxy, "GetItem");
    assert_eq!(
        actions(&gets),
        [Fault::Forward, Fault::Delay(Duration::from_millis(1500))]
    );
    assert_eq!(gets[1].status, Some(200));

    // Past the server's default read timeout (2 s): the SDK gives up on the attempt and tries
    // again, while the delayed one still reaches DynamoDB.
    let defaults = sdk_client(&proxy.url, &AwsTimeouts::default()).await;
    proxy.rule(
        Rule::op("GetItem")
            .next(1)
            .act(Fault::Delay(Duration::from_millis(2500))),
    );
    let started = Instant::now();
    assert!(!get(&defaults, &pk).await.unwrap());
    let took = started.elapsed();
    let gets = of(&proxy, "GetItem");
    assert_eq!(
        actions(&gets[2..]),
        [Fault::Delay(Duration::from_millis(2500)), Fault::Forward]
    );
    assert!(took >= Duration::from_secs(2), "{took:?}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while proxy.log()[2].status.is_none() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let delayed = &proxy.log()[2];
    assert_eq!(
        delayed.status,
        Some(200),
        "the abandoned attempt still reached DynamoDB"
    );
    eprintln!("GetItem delayed 2.5 s: answered after {took:?}; the abandoned attempt: {delayed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn down_refuses_until_up() {
    let Some((proxy, direct)) = setup("the fault proxy's down test").await else {
        return;
    };
    let through = sdk_client(&proxy.url, &AwsTimeouts::default()).await;
    let pk = key();
    assert!(!get(&through, &pk).await.unwrap()); // a kept-alive connection
    // One request, or more when a slow answer (a loaded machine) had the SDK send it again.
    let before_down = proxy.log().len();
    proxy.down();
    let address = proxy.url.trim_start_matches("http://");
    let refused = tokio::net::TcpStream::connect(address).await.unwrap_err();
    assert_eq!(refused.kind(), std::io::ErrorKind::ConnectionRefused);
    let started = Instant::now();
    let err = get(&through, &pk).await.unwrap_err();
    assert!(
        matches!(err, SdkError::DispatchFailure(_)),
        "{}",
        DisplayErrorContext(&err)
    );
    eprintln!(
        "GetItem while down: failed after {:?}: {}",
        started.elapsed(),
        DisplayErrorContext(&err)
    );
    assert_eq!(
        proxy.log().len(),
        before_down,
        "nothing reached the proxy while down"
    );
    proxy.up();
    assert!(!get(&through, &pk).await.unwrap());

    // A `Down` rule: the write's connection is reset and the proxy goes down with it.
    proxy.rule(Rule::op("PutItem").next(1).act(Fault::Down));
    let err = put(&through, &pk).await.unwrap_err();
    assert!(
        matches!(err, SdkError::DispatchFailure(_)),
        "{}",
        DisplayErrorContext(&err)
    );
    assert_eq!(
        actions(&of(&proxy, "PutItem")),
        [Fault::Down],
        "later attempts were refused"
    );
    assert!(!landed(&direct, &pk).await);
    assert!(tokio::net::TcpStream::connect(address).await.is_err());
    proxy.up();
    put(&through, &pk).await.unwrap();
    assert!(landed(&direct, &pk).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rules_match_by_body_and_end_with_their_window() {
    let Some((proxy, _)) = setup("the fault proxy's rule test").await else {
        return;
    };
    let through = single_attempt(&sdk_client(&proxy.url, &timeouts()).await);
    let pk = key();
    let update = |expression: &'static str, name: &'static str, value: AttributeValue| {
        let request = through
            .update_item()
            .table_name(TABLE)
            .key("pk", AttributeValue::S(pk.clone()));
        let request = request
            .update_expression(expression)
            .expression_attribute_names(name, name.trim_start_matches('#'));
        request
            .expression_attribute_values(expression.rsplit(' ').next().unwrap(), value)
            .send()
    };
    // As a task's finish and cancel writes differ (src/tasks/dynamodb/mod.rs).
    let finish = || {
        update(
            "SET #state = :state",
            "#state",
            AttributeValue::S("completed".into()),
        )
    };
    let cancel = || update("SET #cancel = :true", "#cancel", AttributeValue::Bool(true));
    let window = Duration::from_secs(2);
    proxy.rule(
        Rule::op("UpdateItem")
            .body_contains("SET #state = :state")
            .for_duration(window)
            .act(Fault::Throttle),
    );
    let added = Instant::now();
    let err = finish().await.unwrap_err();
    assert_eq!(err.code(), Some("ProvisionedThroughputExceededException"));
    cancel().await.unwrap();
    put(&through, &key()).await.unwrap();
    tokio::time::sleep(window.saturating_sub(added.elapsed())).await;
    finish().await.unwrap();
    let log: Vec<_> = proxy.log().into_iter().map(|e| (e.op, e.action)).collect();
    let expected = [
        ("UpdateItem", Fault::Throttle),
        ("UpdateItem", Fault::Forward),
        ("PutItem", Fault::Forward),
        ("UpdateItem", Fault::Forward),
    ];
    assert_eq!(log, expected.map(|(op, action)| (op.to_owned(), action)));
}

/// Which of 40 sequential single-attempt `GetItem`s a 30 % rule seeded with `seed` throttles,
/// checked against what the caller saw.
async fn throttled_by(endpoint: &str, seed: u64) -> Vec<bool> {
    let proxy = FaultProxy::start(endpoint).await;
    let through = single_attempt(&sdk_client(&proxy.url, &timeouts()).await);
    proxy.rule(Rule::any().probability(0.3, seed).act(Fault::Throttle));
    let mut seen = Vec::new();
    for _ in 0..40 {
        match get(&through, &key()).await {
            Ok(_) => seen.push(false),
            Err(e) if e.code() == Some("ProvisionedThroughputExceededException") => seen.push(true),
            Err(e) => panic!("{}", DisplayErrorContext(&e)),
        }
    }
    let logged: Vec<_> = proxy
        .log()
        .iter()
        .map(|e| e.action == Fault::Throttle)
        .collect();
    assert_eq!(logged, seen, "the log says what the caller saw");
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_seeded_probability_picks_the_same_requests_for_the_same_seed() {
    let Some((proxy, _)) = setup("the fault proxy's probability test").await else {
        return;
    };
    let endpoint = endpoint("the fault proxy's probability test").unwrap();
    drop(proxy);
    let first = throttled_by(&endpoint, 7).await;
    assert_eq!(
        throttled_by(&endpoint, 7).await,
        first,
        "the same seed, the same picks"
    );
    assert_ne!(
        throttled_by(&endpoint, 8).await,
        first,
        "another seed, other picks"
    );
    let n = first.iter().filter(|t| **t).count();
    assert!((4..=20).contains(&n), "{n} of 40 throttled at 30 %");
}
