//! Handle-store operations on the in-memory store (`mcp_lambda::handles::memory()`).
//!
//! Run with: `cargo bench --bench handles`
//!
//! The store holds 10 000 live handles of other owners throughout, so lookups are not into an
//! empty map. `create` is timed in chunks of 1000 and the handles each chunk made are deleted untimed,
//! so the store does not grow (or hit its capacity) over millions of iterations.

use std::{
    hint::black_box,
    time::{Duration, Instant},
};

use criterion::{Criterion, criterion_group, criterion_main};
use mcp_lambda::handles;
use serde_json::json;

const TTL: Duration = Duration::from_secs(3600);

fn basket() -> serde_json::Value {
    json!({"items": {"sku-1": 2, "sku-2": 1, "sku-3": 7}})
}

fn store_ops(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let store = handles::memory();
    rt.block_on(async {
        for i in 0..10_000 {
            store
                .create(&format!("owner-{i}"), "basket", basket(), TTL)
                .await
                .unwrap();
        }
    });
    let mine = rt
        .block_on(store.create("alice", "basket", basket(), TTL))
        .unwrap();

    let mut group = c.benchmark_group("handles");
    group.bench_function("create", |b| {
        b.iter_custom(|iters| {
            // In chunks, deleting each chunk untimed: the store stays near its 10 000 handles.
            let mut elapsed = Duration::ZERO;
            let mut left = iters;
            while left > 0 {
                let chunk = left.min(1000);
                left -= chunk;
                let mut made = Vec::with_capacity(chunk as usize);
                let start = Instant::now();
                rt.block_on(async {
                    for _ in 0..chunk {
                        made.push(
                            store
                                .create("alice", "basket", basket(), TTL)
                                .await
                                .unwrap()
                                .id,
                        );
                    }
                });
                elapsed += start.elapsed();
                rt.block_on(async {
                    for id in made {
                        store.delete("alice", id, None).await.unwrap();
                    }
                });
            }
            elapsed
        })
    });
    group.bench_function("get", |b| {
        b.iter(|| rt.block_on(store.get(black_box("alice"), mine.id)).unwrap())
    });
    group.bench_function("get_other_owner", |b| {
        b.iter(|| {
            rt.block_on(store.get(black_box("mallory"), mine.id))
                .unwrap_err()
        })
    });
    group.bench_function("touch", |b| {
        b.iter(|| {
            rt.block_on(store.touch(black_box("alice"), mine.id, TTL))
                .unwrap()
        })
    });
    group.bench_function("get_then_update", |b| {
        b.iter(|| {
            rt.block_on(async {
                let current = store.get("alice", mine.id).await.unwrap();
                store
                    .update("alice", mine.id, current.version, basket(), TTL)
                    .await
                    .unwrap()
            })
        })
    });
    group.bench_function("create_then_delete", |b| {
        b.iter(|| {
            rt.block_on(async {
                let made = store.create("bob", "basket", basket(), TTL).await.unwrap();
                store
                    .delete("bob", made.id, Some(made.version))
                    .await
                    .unwrap()
            })
        })
    });
    group.finish();
}

criterion_group!(benches, store_ops);
criterion_main!(benches);
