//! No torn reads: clients query in a loop while 20 full refreshes alternate
//! the source between two known versions; every answer is exactly one of the
//! two versions and no query fails.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::support::{Server, SourceSchema};

/// Version A: 20,000 rows of v = 1. Version B: 30,000 rows of v = 2.
const VERSION_A: &str = "BEGIN; DELETE FROM {schema}.versions; INSERT INTO {schema}.versions SELECT g, 1, g FROM generate_series(1, 20000) g; COMMIT;";
const VERSION_B: &str = "BEGIN; DELETE FROM {schema}.versions; INSERT INTO {schema}.versions SELECT g, 2, g * 2 FROM generate_series(1, 30000) g; COMMIT;";
const SIGNATURE: &str =
    "SELECT count(*)::int8, min(v)::int8, max(v)::int8, sum(x)::int8 FROM versions";

fn expected() -> [(i64, i64, i64, i64); 2] {
    [
        (20_000, 1, 1, 20_000 * 20_001 / 2),
        (30_000, 2, 2, 30_000 * 30_001),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn readers_see_one_version_or_the_other_during_refreshes() {
    let source = SourceSchema::create("torn").await;
    source
        .execute(
            "CREATE TABLE {schema}.versions (id int PRIMARY KEY, v int NOT NULL, x int8 NOT NULL);",
        )
        .await;
    source.execute(VERSION_A).await;
    let server = Arc::new(Server::start(&source.dataset("versions", "versions", "")).await);
    server.wait_ready().await;

    let stop = Arc::new(AtomicBool::new(false));
    let answered = Arc::new(AtomicUsize::new(0));
    let mut readers = Vec::new();
    for _ in 0..3 {
        let (server, stop, answered) = (
            Arc::clone(&server),
            Arc::clone(&stop),
            Arc::clone(&answered),
        );
        readers.push(tokio::spawn(async move {
            let client = server.client().await;
            let mut seen = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let row = client
                    .query_one(SIGNATURE, &[])
                    .await
                    .expect("no query fails during a refresh");
                let signature: (i64, i64, i64, i64) =
                    (row.get(0), row.get(1), row.get(2), row.get(3));
                assert!(expected().contains(&signature), "torn read: {signature:?}");
                seen.push(signature.0);
                answered.fetch_add(1, Ordering::Relaxed);
            }
            seen
        }));
    }

    for round in 0..20 {
        source
            .execute(if round % 2 == 0 { VERSION_B } else { VERSION_A })
            .await;
        server.refresh("versions").await;
    }
    stop.store(true, Ordering::Relaxed);
    let mut counts = Vec::new();
    for reader in readers {
        counts.extend(reader.await.expect("reader never failed"));
    }
    assert!(
        answered.load(Ordering::Relaxed) >= 20,
        "readers ran too few queries to prove anything"
    );
    assert!(
        counts.contains(&20_000) && counts.contains(&30_000),
        "readers saw both versions"
    );
    // After the last refresh (round 19 loads A) the acceleration holds A.
    let client = server.client().await;
    let row = client.query_one(SIGNATURE, &[]).await.unwrap();
    assert_eq!((row.get::<_, i64>(0), row.get::<_, i64>(1)), (20_000, 1));
}
