//! File accelerations queried in place (`engine: duckdb | sqlite` with a
//! file mode, refreshed in full or by appends): refreshes write the file
//! and queries read it, so a dataset several times larger than the memory
//! pgaccel may use is loaded, refreshed and answered as PostgreSQL answers.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::support::{Process, SourceSchema, simple_rows};

/// Polls the status of `name` until `done` holds, for up to `limit`.
async fn wait_for(
    server: &Process,
    name: &str,
    limit: Duration,
    mut done: impl FnMut(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let deadline = Instant::now() + limit;
    // Not listening yet: no answer.
    while server.http.get(server.url("/health")).send().await.is_err() {
        assert!(Instant::now() < deadline, "pgaccel does not listen");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    loop {
        let status = server.dataset_status(name).await;
        if done(&status) {
            return status;
        }
        assert!(
            Instant::now() < deadline,
            "{name}: still {status}; log:\n{}",
            server.log_text()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The configuration of a process serving `datasets` with `runtime`
/// entries besides its listeners.
fn config(runtime: &str, datasets: &str) -> impl FnOnce(u16, u16) -> String {
    let (runtime, datasets) = (runtime.to_owned(), datasets.to_owned());
    move |pg, http| {
        format!(
            "runtime:\n  pg: {{ listen: 127.0.0.1:{pg} }}\n  http: {{ listen: 127.0.0.1:{http} }}\n{runtime}datasets:\n{datasets}"
        )
    }
}

/// The rows of the source table: `id` 0.., a key `k` of 97 values, a text
/// column, a decimal and a date.
const ROWS: u64 = 5_000_000;

/// DataFusion's memory pool (`runtime.query.memory_limit`) in this test.
const QUERY_LIMIT_MB: u64 = 32;

/// DuckDB's memory (`params.duckdb_memory_limit`): its cache of the file's
/// blocks. A key index of these rows would not fit, so lookups by key read
/// the key column, skipping row groups by their key range.
const DUCKDB_LIMIT_MB: u64 = 64;

/// What the process may add to the memory it holds idle: both limits, the
/// batches in flight, the threads reading and writing, and the allocator's
/// slack.
const PROCESS_HEADROOM_MB: u64 = 2 * (QUERY_LIMIT_MB + DUCKDB_LIMIT_MB);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_dataset_larger_than_memory_is_served_in_place() {
    let source = SourceSchema::create("in_place").await;
    source
        .execute(&format!(
            "CREATE TABLE {{schema}}.facts (id bigint PRIMARY KEY, k int NOT NULL, name text,
                 amount numeric(12, 2), day date);
             INSERT INTO {{schema}}.facts
             SELECT i, i % 97, 'a customer named number ' || i || ', who lives at ' || (i % 5000) || ' Long Street in the town of Springfield',
                    ((i * 37) % 100000) / 100.0,
                    DATE '2020-01-01' + (i % 1000)::int
             FROM generate_series(0, {last}) i;
             ANALYZE {{schema}}.facts",
            last = ROWS - 1
        ))
        .await;
    let postgres = |sql: &str| {
        let sql = sql.replace("facts", &format!("{}.facts", source.name));
        let client = &source.client;
        async move { simple_rows(client, &sql).await }
    };
    // What the rows take in Arrow: 8 + 4 + 16 + 4 bytes of fixed-width
    // values, and the text with its 4-byte offset.
    let text_bytes: u64 = postgres("SELECT sum(length(name)) FROM facts").await[0][0]
        .as_deref()
        .unwrap()
        .parse()
        .unwrap();
    let arrow_bytes = ROWS * (8 + 4 + 16 + 4 + 4) + text_bytes;
    let folder = tempfile::tempdir().unwrap();
    let file = folder.path().join("facts.duckdb");
    let datasets = source.dataset(
        "facts",
        "facts",
        &format!(
            "    acceleration:\n      engine: duckdb\n      mode: file\n      params: {{ duckdb_file: '{}', duckdb_memory_limit: {DUCKDB_LIMIT_MB}MB }}\n",
            file.display()
        ),
    );
    // The memory a process serving nothing allocates (the allocators'
    // arenas, the catalogs, thread stacks), so that the limit bounds what
    // serving the dataset adds. The limit is a memory cgroup, as a container
    // runtime sets, where this machine lets a test create one.
    let idle = {
        let empty = tempfile::tempdir().unwrap();
        let process = Process::start_config(empty.path(), config("", "  []\n"), &[]);
        process.wait_ready().await;
        process.memory("RssAnon")
    };
    let memory_limit = idle + (PROCESS_HEADROOM_MB << 20);
    assert!(
        arrow_bytes > 3 * (PROCESS_HEADROOM_MB << 20),
        "the rows ({arrow_bytes} bytes) are several times what serving may add ({PROCESS_HEADROOM_MB} MB)"
    );
    let mut server = Process::start_limited(
        folder.path(),
        config(
            &format!("  query: {{ memory_limit: {QUERY_LIMIT_MB}MB }}\n"),
            &datasets,
        ),
        &[],
        Some(memory_limit),
    );
    let loaded = wait_for(&server, "facts", Duration::from_secs(600), |status| {
        status["status"] == "Ready" || status["status"] == "Error"
    })
    .await;
    assert_eq!(loaded["status"], "Ready", "{loaded}");
    assert_eq!(loaded["rows"], ROWS, "{loaded}");

    let replica = server.client().await;
    // A lookup by key (the file's index), selective filters, whole-table
    // and grouped aggregates, a top-k over every row, a sort spilling
    // beyond the query memory limit: each as PostgreSQL answers it.
    let found = replica
        .query(
            "SELECT name, amount::text, day::text FROM facts WHERE id = $1",
            &[&4_345_678i64],
        )
        .await
        .unwrap();
    let found: Vec<Option<String>> = (0..3).map(|i| found[0].get(i)).collect();
    let expected =
        postgres("SELECT name, amount::text, day::text FROM facts WHERE id = 4345678").await;
    assert_eq!(vec![found], expected);
    let checks = [
        "SELECT count(*) FROM facts WHERE id BETWEEN 1000 AND 1999 AND k = 5",
        "SELECT sum(amount), count(*), min(day), max(name) FROM facts",
        "SELECT k, count(*), sum(amount) FROM facts GROUP BY k ORDER BY k",
        "SELECT id, amount FROM facts ORDER BY amount DESC, id LIMIT 5",
        "SELECT max(day) FROM facts WHERE name > 'a customer named number 9'",
        "SELECT count(DISTINCT day) FROM facts WHERE k < 40",
        "SELECT id FROM facts WHERE k = 96 ORDER BY name DESC OFFSET 20000 LIMIT 3",
    ];
    for sql in checks {
        assert_eq!(
            simple_rows(&replica, sql).await,
            postgres(sql).await,
            "{sql}"
        );
    }
    // A refresh streams the changed source into the file while the
    // previous version answers every query until it commits.
    let count_sql = "SELECT count(*) FROM facts WHERE k = 3";
    let old = postgres(count_sql).await;
    source
        .execute(
            "UPDATE {schema}.facts SET name = 'renamed' WHERE id = 7;
             DELETE FROM {schema}.facts WHERE id >= 4999000",
        )
        .await;
    let new = postgres(count_sql).await;
    let before = server.dataset_status("facts").await["last_refresh"].clone();
    let (status, body) = server.post("/v1/datasets/facts/acceleration/refresh").await;
    assert_eq!(status, 201, "{body}");
    let done = Arc::new(AtomicBool::new(false));
    let reading = {
        let (reader, done) = (server.client().await, Arc::clone(&done));
        tokio::spawn(async move {
            let mut counts = Vec::new();
            while !done.load(Ordering::Acquire) {
                counts.push(simple_rows(&reader, count_sql).await);
            }
            counts
        })
    };
    let refreshed = wait_for(&server, "facts", Duration::from_secs(600), |status| {
        status["last_refresh"] != before && status["status"] == "Ready"
    })
    .await;
    done.store(true, Ordering::Release);
    let counts = reading.await.unwrap();
    assert!(!counts.is_empty());
    assert!(
        counts.iter().all(|count| *count == old || *count == new),
        "each count is the old version's ({old:?}) or the new one's ({new:?}): {counts:?}"
    );
    assert_eq!(refreshed["rows"], ROWS - 1000, "{refreshed}");
    assert_eq!(simple_rows(&replica, count_sql).await, new);
    for sql in [
        "SELECT name FROM facts WHERE id = 7",
        "SELECT count(*), sum(amount) FROM facts",
    ] {
        assert_eq!(
            simple_rows(&replica, sql).await,
            postgres(sql).await,
            "{sql}"
        );
    }
    assert!(server.is_running(), "{}", server.log_text());
    match server.cgroup().and_then(|cgroup| cgroup.peak()) {
        Some(peak) => eprintln!(
            "in place: {arrow_bytes} bytes of rows served in a memory cgroup of {memory_limit} bytes ({idle} allocated idle); its peak {peak} bytes"
        ),
        None => {
            // No cgroup: what the process holds allocated now.
            let held = server.memory("RssAnon");
            eprintln!(
                "in place: {arrow_bytes} bytes of rows served; {held} bytes allocated after the refresh ({idle} idle)"
            );
            assert!(
                held < memory_limit,
                "{held} bytes allocated, beyond {memory_limit}"
            );
        }
    }
    let log = server.log_text();
    assert!(!log.contains("refresh failed"), "{log}");
}

/// An SQLite file queried in place: loaded, looked up by key through its
/// index, refreshed while queries read it, and served again after a
/// restart without reading the source.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_sqlite_file_is_queried_in_place_and_kept_across_a_restart() {
    let source = SourceSchema::create("in_place_sqlite").await;
    source
        .execute(
            "CREATE TABLE {schema}.items (id int PRIMARY KEY, name text, price numeric(8, 2));
             INSERT INTO {schema}.items
             SELECT i, 'item ' || i, (i % 1000) / 10.0 FROM generate_series(1, 20000) i",
        )
        .await;
    let folder = tempfile::tempdir().unwrap();
    let file = folder.path().join("items.sqlite");
    let datasets = source.dataset(
        "items",
        "items",
        &format!(
            "    acceleration:\n      engine: sqlite\n      mode: file\n      params: {{ sqlite_file: '{}' }}\n",
            file.display()
        ),
    );
    let postgres = |sql: &str| {
        let sql = sql.replace("items", &format!("{}.items", source.name));
        let client = &source.client;
        async move { simple_rows(client, &sql).await }
    };
    let checks = [
        "SELECT name, price FROM items WHERE id = 4321",
        "SELECT count(*), sum(price) FROM items WHERE name >= 'item 5' AND id <> 5000",
        "SELECT id FROM items WHERE id IN (3, 30, 300, 30000) ORDER BY id",
    ];
    {
        let server = Process::start(folder.path(), "", &datasets);
        server.wait_ready().await;
        let replica = server.client().await;
        for sql in checks {
            assert_eq!(
                simple_rows(&replica, sql).await,
                postgres(sql).await,
                "{sql}"
            );
        }
        let plan = simple_rows(&replica, "EXPLAIN SELECT name FROM items WHERE id = 4321").await;
        let plan = format!("{plan:?}");
        assert!(plan.contains(r#"condition=\"id\" = 4321"#), "{plan}");
        source
            .execute("UPDATE {schema}.items SET name = 'changed' WHERE id = 4321")
            .await;
        server.refresh("items").await;
        for sql in checks {
            assert_eq!(
                simple_rows(&replica, sql).await,
                postgres(sql).await,
                "{sql}"
            );
        }
        server.kill();
    }
    // The source goes away; the file's version answers after a restart.
    source.execute("DROP TABLE {schema}.items").await;
    let server = Process::start(folder.path(), "", &datasets);
    server.wait_ready().await;
    let replica = server.client().await;
    let rows = simple_rows(&replica, "SELECT name FROM items WHERE id = 4321").await;
    assert_eq!(rows, vec![vec![Some("changed".to_owned())]]);
    assert_eq!(
        server.dataset_status("items").await["rows"],
        serde_json::json!(20000)
    );
    let log = server.log_text();
    assert!(
        log.contains("serving the acceleration file from the last run, in place"),
        "{log}"
    );
}

/// Appends and retention revise a file acceleration in place, on both
/// engines: new rows are added (read from the partition the file's rows
/// reach), a re-read row with a newer time replaces the held one by key, rows the overlap reads again are not added twice
/// (with a key and without, where identical rows count), evicted rows leave
/// the file, and after a restart the next append resumes from what the
/// file holds. Every answer is PostgreSQL's own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn appends_and_retention_revise_the_file_in_place() {
    let source = SourceSchema::create("in_place_append").await;
    source
        .execute(
            "CREATE TABLE {schema}.orders (id int PRIMARY KEY, status text,
                 updated_at timestamptz NOT NULL, deleted boolean NOT NULL DEFAULT false,
                 day date GENERATED ALWAYS AS ((updated_at AT TIME ZONE 'UTC')::date) STORED);
             INSERT INTO {schema}.orders
             SELECT i, 'new', now() - interval '2 hours' + i * interval '1 second', false
             FROM generate_series(1, 3000) i;
             CREATE TABLE {schema}.log (at timestamptz NOT NULL, message text);
             INSERT INTO {schema}.log
             SELECT now() - interval '2 hours' + (i / 3) * interval '5 seconds', 'm' || (i % 3)
             FROM generate_series(1, 3000) i;
             INSERT INTO {schema}.log VALUES (now() - interval '1 minute', 'twice'),
                 (now() - interval '1 minute', 'twice')",
        )
        .await;
    let folder = tempfile::tempdir().unwrap();
    let engines = ["duckdb", "sqlite"];
    let mut datasets = Vec::new();
    for engine in engines {
        let file = |table: &str| folder.path().join(format!("{table}_{engine}.db"));
        let common = format!(
            "      engine: {engine}\n      mode: file\n      refresh_mode: append\n      refresh_check_interval: 1h\n      refresh_append_overlap: 1h\n"
        );
        datasets.push(source.dataset(
            "orders",
            &format!("orders_{engine}"),
            &format!(
                "    time_column: updated_at\n    time_partition_column: day\n    time_partition_format: date\n    acceleration:\n{common}      params: {{ {engine}_file: '{}' }}\n      retention_check_enabled: true\n      retention_check_interval: 1s\n      retention_sql: DELETE FROM orders_{engine} WHERE deleted\n      on_zero_results: use_source\n",
                file("orders").display()
            ),
        ));
        datasets.push(source.dataset(
            "log",
            &format!("log_{engine}"),
            &format!(
                "    time_column: at\n    acceleration:\n{common}      params: {{ {engine}_file: '{}' }}\n",
                file("log").display()
            ),
        ));
    }
    let datasets = datasets.join("");
    {
        let server = Process::start(folder.path(), "", &datasets);
        server.wait_ready().await;
        let replica = server.client().await;
        same_orders_and_log(&replica, &source, &engines).await;
        let log_text = server.log_text();
        assert!(!log_text.contains("read into memory"), "{log_text}");
        for engine in engines {
            let plan = simple_rows(
                &replica,
                &format!("EXPLAIN SELECT status FROM orders_{engine} WHERE id = 10"),
            )
            .await;
            let plan = format!("{plan:?}");
            assert!(plan.contains("FileScanExec"), "{plan}");
        }
        // A row updated (newer time), one soft-deleted, new rows; in the
        // log, new rows and two identical ones.
        source
            .execute(
                "UPDATE {schema}.orders SET status = 'shipped', updated_at = now() WHERE id = 2990;
                 UPDATE {schema}.orders SET deleted = true, updated_at = now() WHERE id = 2995;
                 INSERT INTO {schema}.orders
                 SELECT i, 'new', now(), false FROM generate_series(3001, 3100) i;
                 INSERT INTO {schema}.log
                 SELECT now() - i * interval '1 millisecond', 'late' FROM generate_series(1, 50) i;
                 INSERT INTO {schema}.log VALUES (now(), 'again'), (now(), 'again')",
            )
            .await;
        let kept = rows_kept(&source).await;
        for engine in engines {
            server.refresh(&format!("orders_{engine}")).await;
            server.refresh(&format!("log_{engine}")).await;
            // The soft-deleted row came with the append; a check evicts it.
            server
                .wait_for_status(&format!("orders_{engine}"), |status| {
                    status["rows"] == serde_json::json!(kept)
                })
                .await;
        }
        same_orders_and_log(&replica, &source, &engines).await;
        // Nothing new: the overlap reads the last hour again, adding nothing.
        for engine in engines {
            server.refresh(&format!("orders_{engine}")).await;
            server.refresh(&format!("log_{engine}")).await;
        }
        same_orders_and_log(&replica, &source, &engines).await;
        server.kill();
    }
    // A restart serves the files as they are and appends from what they hold.
    source
        .execute(
            "UPDATE {schema}.orders SET status = 'returned', updated_at = now() WHERE id = 3050;
             INSERT INTO {schema}.orders SELECT i, 'new', now(), false FROM generate_series(3101, 3120) i;
             INSERT INTO {schema}.log VALUES (now(), 'after the restart')",
        )
        .await;
    let server = Process::start(folder.path(), "", &datasets);
    server.wait_ready().await;
    let log_text = server.log_text();
    assert!(
        log_text.contains("serving the acceleration file from the last run, in place"),
        "{log_text}"
    );
    let kept = rows_kept(&source).await;
    for engine in engines {
        server.refresh(&format!("orders_{engine}")).await;
        server.refresh(&format!("log_{engine}")).await;
        // The overlap read the soft-deleted row again; a check evicts it.
        server
            .wait_for_status(&format!("orders_{engine}"), |status| {
                status["rows"] == serde_json::json!(kept)
            })
            .await;
    }
    let replica = server.client().await;
    same_orders_and_log(&replica, &source, &engines).await;
    // A scan of the file that finds nothing is answered by the source,
    // less the rows retention evicts.
    source
        .execute("INSERT INTO {schema}.orders VALUES (4000, 'not appended yet', now(), false)")
        .await;
    for engine in engines {
        let status = |id: u32| format!("SELECT status FROM orders_{engine} WHERE id = {id}");
        assert_eq!(
            simple_rows(&replica, &status(4000)).await,
            vec![vec![Some("not appended yet".to_owned())]]
        );
        assert_eq!(
            simple_rows(&replica, &status(2995)).await,
            Vec::<Vec<Option<String>>>::new()
        );
        assert_eq!(
            simple_rows(&replica, &status(2990)).await,
            vec![vec![Some("shipped".to_owned())]]
        );
    }
}

/// Asserts that the `orders_*` and `log_*` datasets of each of `engines`
/// answer as `source`'s tables do.
async fn same_orders_and_log(
    replica: &tokio_postgres::Client,
    source: &SourceSchema,
    engines: &[&str],
) {
    let orders = "SELECT id, status, updated_at FROM orders WHERE NOT deleted ORDER BY id";
    let log = "SELECT at, message, count(*) FROM log GROUP BY at, message ORDER BY at, message";
    for engine in engines {
        for sql in [orders, log] {
            let served = sql
                .replace("FROM orders", &format!("FROM orders_{engine}"))
                .replace("FROM log", &format!("FROM log_{engine}"));
            let primary = sql
                .replace("FROM orders", &format!("FROM {}.orders", source.name))
                .replace("FROM log", &format!("FROM {}.log", source.name));
            assert_eq!(
                simple_rows(replica, &served).await,
                simple_rows(&source.client, &primary).await,
                "{served}"
            );
        }
    }
}

/// The rows of the source's `orders` that retention keeps.
async fn rows_kept(source: &SourceSchema) -> u64 {
    let sql = format!(
        "SELECT count(*) FROM {}.orders WHERE NOT deleted",
        source.name
    );
    simple_rows(&source.client, &sql).await[0][0]
        .as_deref()
        .unwrap()
        .parse()
        .unwrap()
}

/// Aggregates over a DuckDB file queried in place are computed by DuckDB
/// where it answers as DataFusion does (grouping by integer, text, date and
/// decimal columns, `count`, `min`, `max`, `sum` of integers and of
/// decimals, `avg` of integers and decimals, over columns or decimal
/// arithmetic), and by DataFusion otherwise, as every aggregate over an
/// SQLite file is; every answer is PostgreSQL's own, before and after a
/// refresh changes the rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aggregates_are_computed_in_the_file_where_they_answer_the_same() {
    for engine in ["duckdb", "sqlite"] {
        file_aggregates(engine).await;
    }
}

async fn file_aggregates(engine: &str) {
    use crate::support::Server;
    let source = SourceSchema::create(&format!("in_place_aggregates_{engine}")).await;
    source
        .execute(
            "CREATE TABLE {schema}.sales (id int PRIMARY KEY, region text, status text,
                qty int, small smallint, big bigint, price numeric(12, 2), day date,
                at timestamp, ratio float8);
             INSERT INTO {schema}.sales
             SELECT i, CASE WHEN i % 7 = 0 THEN NULL ELSE 'r' || (i % 5) END,
                    (ARRAY['open', 'shipped', 'Closed', 'é', ''])[1 + i % 5],
                    CASE WHEN i % 11 = 0 THEN NULL ELSE i % 100 END, (i % 30000)::smallint,
                    i::bigint * 1000000000, (i % 997) * 1.25, date '2020-01-01' + i % 400,
                    timestamp '2020-01-01' + i * interval '1 minute', i / 3.0
             FROM generate_series(1, 5000) i",
        )
        .await;
    let folder = tempfile::tempdir().unwrap();
    let datasets = source.dataset(
        "sales",
        "sales",
        &format!(
            "    acceleration:\n      engine: {engine}\n      mode: file\n      params: {{ {engine}_file: '{}' }}\n",
            folder.path().join("sales.db").display()
        ),
    );
    let server = Server::start(&datasets).await;
    server.wait_ready().await;
    let replica = server.client().await;
    let duckdb = engine == "duckdb";
    // (query, whether DuckDB computes its aggregate)
    let checks = [
        (
            "SELECT region, count(*), count(qty), sum(qty), min(status), max(status) FROM sales GROUP BY region ORDER BY region",
            duckdb,
        ),
        ("SELECT count(*) FROM sales WHERE qty > 50", duckdb),
        (
            "SELECT count(*), sum(qty), max(status), min(region) FROM sales WHERE id < 0",
            duckdb,
        ),
        (
            "SELECT status, sum(small), count(DISTINCT region) FROM sales GROUP BY status ORDER BY 1",
            duckdb,
        ),
        (
            "SELECT region, count(*) FROM sales GROUP BY region HAVING count(*) > 900 ORDER BY 1",
            duckdb,
        ),
        (
            "SELECT s.status, count(*) AS n FROM sales s WHERE s.qty BETWEEN 10 AND 20 OR s.region IS NULL GROUP BY s.status ORDER BY n DESC, 1",
            duckdb,
        ),
        (
            "SELECT sum(price), min(price), max(day) FROM sales WHERE region = 'r1'",
            duckdb,
        ),
        (
            "SELECT day, count(*) FROM sales GROUP BY day ORDER BY 2 DESC, 1 LIMIT 3",
            duckdb,
        ),
        ("SELECT sum(big) FROM sales", duckdb),
        ("SELECT avg(qty) FROM sales", duckdb),
        (
            "SELECT region, avg(price), avg(small), avg(big), count(*) FROM sales GROUP BY region ORDER BY 1",
            duckdb,
        ),
        (
            "SELECT status, round(avg(price), 1) AS a FROM sales WHERE day < DATE '2020-06-01' GROUP BY status HAVING avg(price) > 600 ORDER BY avg(qty) DESC, 1",
            duckdb,
        ),
        (
            "SELECT avg(qty), avg(price) FROM sales WHERE id < 0",
            duckdb,
        ),
        ("SELECT avg(price) * 2, avg(qty) / 3 FROM sales", duckdb),
        (
            "SELECT region, sum(price * 2), sum(price * price), avg(price * 3), min(price - 1.5), max(-price) FROM sales GROUP BY region ORDER BY 1",
            duckdb,
        ),
        (
            "SELECT status, sum(price * qty), avg(price * (1 - price / 1000.0) + 1) FROM sales GROUP BY status ORDER BY 1",
            false,
        ),
        (
            "SELECT sum(price * qty), avg(price * 2 + 1), sum(small * 0.5) FROM sales WHERE day >= DATE '2020-03-01'",
            duckdb,
        ),
        (
            "SELECT sum(price * price * price * price) FROM sales",
            duckdb,
        ),
        ("SELECT max(price * ratio) FROM sales", false),
        ("SELECT avg(DISTINCT qty) FROM sales", false),
        ("SELECT avg(ratio) FROM sales", false),
        (
            "SELECT region, max(ratio) FROM sales GROUP BY region ORDER BY 1",
            false,
        ),
        ("SELECT count(*) FROM sales WHERE status LIKE 'o%'", false),
        ("SELECT min(at) FROM sales", false),
        ("SELECT sum(qty + 1) FROM sales", false),
    ];
    let run = |label: &'static str| {
        let (replica, source) = (&replica, &source);
        let checks = &checks;
        async move {
            for (sql, in_file) in checks {
                let theirs = simple_rows(
                    &source.client,
                    &sql.replace(" sales", &format!(" {}.sales", source.name)),
                )
                .await;
                assert_eq!(
                    simple_rows(replica, sql).await,
                    theirs,
                    "{engine} {label}: {sql}"
                );
                let plan = format!(
                    "{:?}",
                    simple_rows(replica, &format!("EXPLAIN {sql}")).await
                );
                assert_eq!(
                    plan.contains("aggregate=SELECT"),
                    *in_file,
                    "{engine} {label}: {sql}\n{plan}"
                );
            }
        }
    };
    run("loaded").await;
    // Over the extended protocol, with the filter's value bound.
    let sql =
        "SELECT status, count(*), max(region) FROM sales WHERE qty < $1 GROUP BY status ORDER BY 1";
    let rows = |rows: Vec<tokio_postgres::Row>| -> Vec<(String, i64, Option<String>)> {
        rows.iter()
            .map(|row| (row.get(0), row.get(1), row.get(2)))
            .collect()
    };
    let ours = rows(replica.query(sql, &[&30i32]).await.unwrap());
    let theirs = rows(
        source
            .client
            .query(
                &sql.replace(" sales", &format!(" {}.sales", source.name)),
                &[&30i32],
            )
            .await
            .unwrap(),
    );
    assert_eq!(ours, theirs, "{engine}: {sql}");
    source
        .execute(
            "UPDATE {schema}.sales SET status = 'returned', qty = qty + 1 WHERE id % 3 = 0;
             DELETE FROM {schema}.sales WHERE id % 13 = 0",
        )
        .await;
    server.refresh("sales").await;
    run("refreshed").await;
}
