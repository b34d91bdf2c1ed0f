//! `refresh_mode: caching` against the real PostgreSQL: the filters of a
//! query are the cache key; a miss fetches from the source, a hit within
//! `caching_ttl` answers from memory, and an expired key is fetched again
//! (before answering, behind the old rows with stale-while-revalidate, or
//! not at all with stale-if-error while the source is down).

use crate::support::{Endpoint, Relay, Server, SourceSchema, eventually, logs, simple_rows};

/// `dataset_acceleration_caching_requests_total` of `name` with `result`.
async fn requests(server: &Endpoint, name: &str, result: &str) -> u64 {
    crate::support::counter(
        server,
        "dataset_acceleration_caching_requests_total",
        name,
        "result",
        result,
    )
    .await
}

fn rows(values: &[&str]) -> Vec<Vec<Option<String>>> {
    values.iter().map(|v| vec![Some((*v).to_owned())]).collect()
}

/// The rows of a key are fetched once, answered from memory within the TTL
/// (even after the source changed), counted as hits and misses; another key
/// is fetched on its own; an on-demand refresh drops every key; the answers
/// are the source's own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn caching_mode_fetches_each_key_once_within_its_ttl() {
    let source = SourceSchema::create("caching").await;
    source
        .execute("CREATE TABLE {schema}.t (id int PRIMARY KEY, region text, amount numeric(10,2));
                  INSERT INTO {schema}.t VALUES (1, 'eu', 1.50), (2, 'eu', 2.25), (3, 'us', 3.00), (4, 'us', NULL)")
        .await;
    let name = "cached";
    let server = Server::start(&source.dataset(
        "t",
        name,
        "    acceleration:\n      refresh_mode: caching\n      params: { caching_ttl: 1h }\n",
    ))
    .await;
    server.wait_ready().await;
    let replica = server.client().await;
    let eu = format!("SELECT amount FROM {name} WHERE region = 'eu' ORDER BY id");
    assert_eq!(simple_rows(&replica, &eu).await, rows(&["1.50", "2.25"]));
    assert_eq!(requests(&server, name, "miss").await, 1);

    source
        .execute("UPDATE {schema}.t SET amount = 9.99 WHERE id = 1; INSERT INTO {schema}.t VALUES (5, 'us', 5.00)")
        .await;
    // The same key: a hit, with the rows fetched before the change.
    let hits = requests(&server, name, "hit").await;
    assert_eq!(simple_rows(&replica, &eu).await, rows(&["1.50", "2.25"]));
    // Other filters are another key, fetched now; the same filters in
    // another order are that key again.
    let both =
        |a: &str, b: &str| format!("SELECT amount FROM {name} WHERE {a} AND {b} ORDER BY id");
    assert_eq!(
        simple_rows(&replica, &both("region = 'eu'", "id > 0")).await,
        rows(&["9.99", "2.25"])
    );
    source
        .execute("UPDATE {schema}.t SET amount = 7.77 WHERE id = 2")
        .await;
    assert_eq!(
        simple_rows(&replica, &both("id > 0", "region = 'eu'")).await,
        rows(&["9.99", "2.25"])
    );
    assert_eq!(requests(&server, name, "hit").await, hits + 2);
    assert_eq!(requests(&server, name, "miss").await, 2);
    // Another key is fetched now, as the source has it.
    let us = format!("SELECT id, amount FROM {name} WHERE region = 'us' ORDER BY id");
    assert_eq!(
        simple_rows(&replica, &us).await,
        simple_rows(
            &source.client,
            &format!(
                "SELECT id, amount FROM {}.t WHERE region = 'us' ORDER BY id",
                source.name
            )
        )
        .await
    );
    // A prepared statement looks the cache up at each execution.
    let statement = replica
        .prepare(&format!("SELECT count(*) FROM {name} WHERE region = $1"))
        .await
        .unwrap();
    let count: i64 = replica
        .query_one(&statement, &[&"us"])
        .await
        .unwrap()
        .get(0);
    assert_eq!(count, 3);
    // Status shows what the cache holds: the keys "eu", "eu AND id > 0"
    // and "us" (the prepared statement's), 2 + 2 + 3 rows.
    let status = server.dataset_status(name).await;
    assert_eq!(status["caching"]["keys"], 3, "{status}");
    assert_eq!(status["caching"]["rows"], 7, "{status}");
    assert!(status["caching"]["bytes"].as_u64().unwrap() > 0, "{status}");
    let (_, metrics) = server.get("/metrics").await;
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("dataset_acceleration_caching_keys")
                && l.contains(name)
                && !l.ends_with(" 0")),
        "{metrics}"
    );

    // An on-demand refresh drops the keys: the next query fetches.
    server.refresh(name).await;
    assert_eq!(simple_rows(&replica, &eu).await, rows(&["9.99", "7.77"]));
    server.runtime.shutdown().await;
}

/// Past `caching_ttl` a key is fetched again: before answering by default;
/// behind the old rows with `caching_stale_while_revalidate_ttl`; and with
/// `caching_stale_if_error: enabled` the old rows answer while the source
/// cannot be reached, where without it the query fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_keys_are_fetched_again_or_served_stale_as_configured() {
    let source = SourceSchema::create("caching_ttl").await;
    source
        .execute("CREATE TABLE {schema}.t (id int PRIMARY KEY, name text); INSERT INTO {schema}.t VALUES (1, 'first')")
        .await;
    let relay = Relay::start(None).await;
    let via_relay = |name: &str, params: &str| {
        source
            .dataset(
                "t",
                name,
                &format!(
                    "    acceleration:\n      refresh_mode: caching\n      params: {{ {params} }}\n"
                ),
            )
            .replace("pg_port: 5432", &format!("pg_port: {}", relay.port))
    };
    let config = [
        via_relay("strict", "caching_ttl: 1s"),
        via_relay(
            "revalidated",
            "caching_ttl: 1s, caching_stale_while_revalidate_ttl: 1h",
        ),
        via_relay(
            "tolerant",
            "caching_ttl: 1s, caching_stale_if_error: enabled",
        ),
    ]
    .join("");
    let server = Server::start(&config).await;
    server.wait_ready().await;
    let replica = server.client().await;
    let query = |name: &str| format!("SELECT name FROM {name} WHERE id = 1");
    for name in ["strict", "revalidated", "tolerant"] {
        assert_eq!(simple_rows(&replica, &query(name)).await, rows(&["first"]));
    }
    source
        .execute("UPDATE {schema}.t SET name = 'second' WHERE id = 1")
        .await;
    // Expired: fetched before answering.
    eventually("the expired key of 'strict' was fetched again", || async {
        simple_rows(&replica, &query("strict")).await == rows(&["second"])
    })
    .await;
    // Stale while revalidating: an answer with the old rows first, then the
    // new ones once the background fetch is done.
    eventually(
        "the stale key of 'revalidated' was fetched again",
        || async { simple_rows(&replica, &query("revalidated")).await == rows(&["second"]) },
    )
    .await;
    assert!(requests(&server, "revalidated", "stale").await >= 1);

    // The source goes away: the tolerant dataset answers with the rows it
    // fetched last, the strict one fails with the source's error.
    let held = simple_rows(&replica, &query("tolerant")).await;
    relay.cut();
    let strict = {
        let replica = server.client().await;
        let query = query("strict");
        tokio::spawn(async move {
            loop {
                // Within its TTL the strict dataset still answers from memory.
                match replica.simple_query(&query).await {
                    Ok(_) => tokio::time::sleep(std::time::Duration::from_millis(100)).await,
                    Err(error) => break error,
                }
            }
        })
    };
    // Fresh for a second more, then expired: each answer is the rows held,
    // and none waits for the source's connection timeout.
    eventually(
        "the tolerant dataset answered from its expired key",
        || async {
            let started = std::time::Instant::now();
            assert_eq!(simple_rows(&replica, &query("tolerant")).await, held);
            assert!(
                started.elapsed() < std::time::Duration::from_secs(20),
                "the stale rows waited {:?} for the source",
                started.elapsed()
            );
            requests(&server, "tolerant", "stale_if_error").await >= 1
        },
    )
    .await;
    // The strict one waits for the source's connection timeout, then fails
    // with its error.
    let failed = strict.await.unwrap();
    let error = failed.as_db_error().expect("a server error");
    assert!(
        error.message().contains("PostgreSQL connection failed"),
        "{error:?}"
    );
    relay.restore();
    server.runtime.shutdown().await;
}

/// `refresh_check_interval` fetches again the keys queries keep reading,
/// so they follow the source within the TTL; retention drops keys fetched
/// longer than `retention_period` ago, and the next query fetches again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_in_use_are_fetched_again_and_old_keys_are_dropped() {
    let source = SourceSchema::create("caching_check").await;
    source
        .execute("CREATE TABLE {schema}.t (id int PRIMARY KEY, name text); INSERT INTO {schema}.t VALUES (1, 'first')")
        .await;
    let config = [
        source.dataset(
            "t",
            "rechecked",
            "    acceleration:\n      refresh_mode: caching\n      refresh_check_interval: 1s\n      on_zero_results: use_source\n      params: { caching_ttl: 1h }\n",
        ),
        source.dataset(
            "t",
            "retained",
            "    acceleration:\n      refresh_mode: caching\n      retention_check_enabled: true\n      retention_check_interval: 1s\n      retention_period: 1s\n      params: { caching_ttl: 1h }\n",
        ),
    ]
    .join("");
    let server = Server::start(&config).await;
    server.wait_ready().await;
    // on_zero_results has nothing to do here, and the log says so.
    assert!(
        logs().iter().any(|line| line.contains("rechecked")
            && line.contains("on_zero_results is ignored when refresh_mode: caching is set")),
        "no warning about on_zero_results"
    );
    let replica = server.client().await;
    let query = |name: &str| format!("SELECT name FROM {name} WHERE id = 1");
    assert_eq!(
        simple_rows(&replica, &query("rechecked")).await,
        rows(&["first"])
    );
    assert_eq!(
        simple_rows(&replica, &query("retained")).await,
        rows(&["first"])
    );
    source
        .execute("UPDATE {schema}.t SET name = 'second' WHERE id = 1")
        .await;
    eventually("the key in use was fetched again", || async {
        simple_rows(&replica, &query("rechecked")).await == rows(&["second"])
    })
    .await;
    assert_eq!(requests(&server, "rechecked", "miss").await, 1);
    eventually("retention dropped the old key", || async {
        let (_, metrics) = server.get("/metrics").await;
        metrics
            .lines()
            .any(|l| l.starts_with("dataset_acceleration_caching_keys{dataset=\"retained\"} 0"))
    })
    .await;
    assert_eq!(
        simple_rows(&replica, &query("retained")).await,
        rows(&["second"])
    );
    assert_eq!(requests(&server, "retained", "miss").await, 2);
    server.runtime.shutdown().await;
}

/// A JSON API on loopback: `/v1/search?q=...` answers `{"q": ..., "n": <how
/// many requests it has served>}`; every request is counted.
async fn api() -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use axum::extract::Query;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let served = std::sync::Arc::new(AtomicUsize::new(0));
    let counter = std::sync::Arc::clone(&served);
    let app = axum::Router::new().route(
        "/v1/search",
        axum::routing::get(
            move |Query(params): Query<std::collections::HashMap<String, String>>| {
                let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
                let q = params.get("q").cloned().unwrap_or_default();
                async move { axum::Json(serde_json::json!({ "q": q, "n": n })) }
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (port, served)
}

/// An HTTP API as a caching dataset: the request path and query string a
/// query filters on are the request made and the cache key, so each request
/// is made once within the TTL; the JSON body is read with PostgreSQL's
/// JSON operators; a path outside `allowed_request_paths` is refused. The
/// same API without acceleration asks at every query.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_api_is_cached_by_request() {
    use std::sync::atomic::Ordering;
    let (port, served) = api().await;
    let params =
        "    params: { allowed_request_paths: '/search', request_query_filters: enabled }\n";
    let config = format!(
        "  - from: http://127.0.0.1:{port}/v1\n    name: api\n{params}    acceleration:\n      refresh_mode: caching\n      params: {{ caching_ttl: 1h }}\n  - from: http://127.0.0.1:{port}/v1\n    name: api_direct\n{params}    acceleration:\n      enabled: false\n"
    );
    let server = Server::start(&config).await;
    server.wait_ready().await;
    let replica = server.client().await;
    let search = |name: &str, q: &str| {
        format!(
            "SELECT content::json ->> 'q', content::json ->> 'n', response_status FROM {name} WHERE request_path = '/search' AND request_query = 'q={q}'"
        )
    };
    let first = simple_rows(&replica, &search("api", "rust")).await;
    assert_eq!(
        first,
        [[
            Some("rust".to_owned()),
            Some("1".to_owned()),
            Some("200".to_owned())
        ]]
    );
    assert_eq!(simple_rows(&replica, &search("api", "rust")).await, first);
    assert_eq!(
        served.load(Ordering::SeqCst),
        1,
        "the second query was a hit"
    );
    let other = simple_rows(&replica, &search("api", "sql")).await;
    assert_eq!(other[0][0].as_deref(), Some("sql"));
    assert_eq!(served.load(Ordering::SeqCst), 2);

    let refused = replica
        .simple_query("SELECT content FROM api WHERE request_path = '/admin'")
        .await
        .expect_err("a path outside allowed_request_paths");
    let error = refused.as_db_error().expect("a server error");
    assert!(
        error.message().contains("allowed_request_paths"),
        "{error:?}"
    );

    // Without acceleration every query is a request.
    simple_rows(&replica, &search("api_direct", "rust")).await;
    simple_rows(&replica, &search("api_direct", "rust")).await;
    assert_eq!(served.load(Ordering::SeqCst), 4);
    server.runtime.shutdown().await;
}
