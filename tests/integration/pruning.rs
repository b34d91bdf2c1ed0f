//! `acceleration.sort_by` and batch pruning: a full refresh sorts an
//! in-memory acceleration's rows, and a scan skips the batches whose range
//! of values its filters cannot match. The answers must be PostgreSQL's,
//! sorted or not, pruned or not.

use crate::support::{Server, SourceSchema, simple_rows};

/// 100 000 rows over a year of days, inserted in an order unrelated to
/// the day, with NULL days, so that only sorting clusters them.
const TABLE: &str = "
  CREATE TABLE {schema}.events (id int8 PRIMARY KEY, day date, amount numeric(12,2), kind text,
                                 at timestamptz, n int4);
  INSERT INTO {schema}.events
    SELECT g, CASE WHEN g % 97 = 0 THEN NULL ELSE date '2024-01-01' + (g * 7919) % 366 END,
           (g % 1000) * 1.01, 'kind ' || g % 5,
           timestamptz '2024-01-01 00:00:00+00' + ((g * 7919) % 366) * interval '1 day' + (g % 86400) * interval '1 second',
           (g * 7919) % 366 - 100
    FROM generate_series(1, 100000) g ORDER BY md5(g::text);";

/// The batches a scan reads, summed over `partition_sizes=[…]` in the plan
/// (0 when every batch is skipped and DataFusion plans no scan at all).
fn scanned_batches(plan: &[Vec<Option<String>>]) -> usize {
    let text = format!("{plan:?}");
    if !text.contains("DataSourceExec") {
        return 0;
    }
    let start = text
        .find("partition_sizes=[")
        .unwrap_or_else(|| panic!("no memory scan in {text}"))
        + "partition_sizes=[".len();
    let end = start + text[start..].find(']').unwrap();
    text[start..end]
        .split(',')
        .map(|n| n.trim().parse::<usize>().unwrap())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sorted_acceleration_skips_batches_and_answers_as_postgres() {
    let source = SourceSchema::create("pruning").await;
    source.execute(TABLE).await;
    let datasets = [
        source.dataset("events", "events", ""),
        source.dataset(
            "events",
            "sorted",
            "    acceleration:\n      primary_key: id\n      sort_by: day\n",
        ),
        source.dataset(
            "events",
            "by_kind",
            "    acceleration:\n      sort_by: [kind, day]\n",
        ),
    ]
    .concat();
    let server = Server::start(&datasets).await;
    server.wait_ready().await;
    let replica = server.client().await;

    let queries = [
        "SELECT count(*), sum(amount) FROM {t} WHERE day >= date '2024-03-01' AND day < date '2024-04-01'",
        "SELECT count(*) FROM {t} WHERE day IS NULL",
        "SELECT count(*), min(id), max(id) FROM {t} WHERE day = date '2024-02-29'",
        "SELECT kind, count(*), sum(amount) FROM {t} WHERE day BETWEEN date '2024-06-10' AND date '2024-06-20' GROUP BY kind ORDER BY 1",
        "SELECT count(*), min(id) FROM {t} WHERE day > date '2030-01-01'",
        "SELECT count(*) FROM {t} WHERE day < date '2024-01-15' OR amount > 1000",
        "SELECT count(*) FROM {t} WHERE day >= date '2024-12-01' AND kind = 'kind 3'",
        "SELECT count(*) FROM {t} WHERE id BETWEEN 100 AND 2000",
        "SELECT id, day, amount FROM {t} WHERE day = date '2024-07-04' ORDER BY id LIMIT 5",
        "SELECT count(*) FROM {t} WHERE NOT (day >= date '2024-02-01')",
        "SELECT count(*), sum(amount) FROM {t} WHERE kind = 'kind 3'",
        "SELECT kind, count(*) FROM {t} WHERE kind > 'kind 2' AND kind <= 'kind 4' GROUP BY kind ORDER BY 1",
        "SELECT count(*) FROM {t} WHERE kind IN ('kind 0', 'kind 9') AND day < date '2024-03-01'",
        "SELECT count(*) FROM {t} WHERE kind LIKE 'kind 1%' AND day <> date '2024-03-01'",
        "SELECT count(*) FROM {t} WHERE day NOT BETWEEN date '2024-02-01' AND date '2024-11-30'",
        "SELECT count(*) FROM {t} WHERE day IS NOT NULL AND day IN (date '2024-01-01', date '2024-12-31')",
        "SELECT count(*) FROM {t} WHERE coalesce(day, date '2024-06-01') = date '2024-06-01'",
        "SELECT count(*) FROM {t} WHERE day + 30 < date '2024-02-15'",
        "SELECT count(*) FROM {t} WHERE day < '2024-02-01'",
        "SELECT count(*) FROM {t} WHERE amount BETWEEN 10.5 AND 20 AND day >= date '2024-10-01'",
        "SELECT count(*) FROM {t} WHERE amount = 101 OR amount > 1008.99",
        "SELECT count(*) FROM {t} WHERE id > 99990 OR id = -1",
        "SELECT count(*) FROM {t} WHERE at >= timestamptz '2024-04-01 00:00:00+02' AND at < timestamptz '2024-04-02 12:00:00-05'",
        "SELECT count(*) FROM {t} WHERE at < '2024-01-03'",
        "SELECT count(*) FROM {t} WHERE n < 0 AND n >= -5",
        "SELECT count(*) FROM {t} WHERE n::int8 * 2 > 500",
        "SELECT count(*) FROM {t} WHERE day = NULL",
    ];
    for sql in queries {
        let theirs = simple_rows(
            &source.client,
            &sql.replace("{t}", &format!("{}.events", source.name)),
        )
        .await;
        for table in ["events", "sorted", "by_kind"] {
            let ours = simple_rows(&replica, &sql.replace("{t}", table)).await;
            assert_eq!(ours, theirs, "{table}: {sql}");
        }
    }

    // The month's rows lie in a few batches once sorted; unsorted, every
    // batch holds some of them.
    let month =
        "SELECT count(*) FROM {t} WHERE day >= date '2024-03-01' AND day < date '2024-04-01'";
    let explain = |table: &str| format!("EXPLAIN {}", month.replace("{t}", table));
    let all = scanned_batches(&simple_rows(&replica, &explain("events")).await);
    let sorted = scanned_batches(&simple_rows(&replica, &explain("sorted")).await);
    assert!(all >= 12, "100 000 rows are at least 12 batches: {all}");
    assert!(
        sorted <= 3,
        "a month of a year sorted by day is in at most 3 of {all} batches: {sorted}"
    );
    // Text ranges: a fifth of the rows, sorted by kind first.
    let kind = "EXPLAIN SELECT count(*) FROM by_kind WHERE kind = 'kind 3'";
    let of_kind = scanned_batches(&simple_rows(&replica, kind).await);
    assert!(
        of_kind <= 4,
        "one kind of five is in at most 4 of {all} batches: {of_kind}"
    );
    let (_, metrics) = server.get("/metrics").await;
    let skipped: u64 = metrics
        .lines()
        .find_map(|line| line.strip_prefix("query_batches_skipped{dataset=\"sorted\"} "))
        .map_or(0, |value| value.trim().parse().unwrap());
    assert!(skipped >= (all - sorted) as u64, "{metrics}");
    let nothing = "EXPLAIN SELECT count(*) FROM sorted WHERE day > date '2030-01-01'";
    assert_eq!(scanned_batches(&simple_rows(&replica, nothing).await), 0);

    // A bound parameter prunes as a literal does, with the same answer.
    let bound = "SELECT count(*) FROM sorted WHERE day >= $1 AND day < $2";
    let from = chrono::NaiveDate::from_ymd_opt(2024, 5, 1).unwrap();
    let to = chrono::NaiveDate::from_ymd_opt(2024, 5, 8).unwrap();
    let ours: i64 = replica
        .query_one(bound, &[&from, &to])
        .await
        .unwrap()
        .get(0);
    let theirs: i64 = source
        .client
        .query_one(
            &bound.replace("sorted", &format!("{}.events", source.name)),
            &[&from, &to],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(ours, theirs);

    // The key index is built over the sorted rows.
    for id in [1i64, 97, 4242, 99_999, 100_000] {
        let sql = "SELECT id, day, amount, kind FROM {t} WHERE id = $1";
        let ours = replica
            .query(&sql.replace("{t}", "sorted"), &[&id])
            .await
            .unwrap();
        let theirs = source
            .client
            .query(
                &sql.replace("{t}", &format!("{}.events", source.name)),
                &[&id],
            )
            .await
            .unwrap();
        let render =
            |rows: &[tokio_postgres::Row]| -> Vec<(i64, Option<chrono::NaiveDate>, String)> {
                rows.iter()
                    .map(|row| (row.get(0), row.get(1), row.get(3)))
                    .collect()
            };
        assert_eq!(render(&ours), render(&theirs), "id {id}");
        assert_eq!(ours.len(), 1, "id {id}");
    }

    // After the source changes, the next refresh sorts the new rows.
    source
        .execute(
            "UPDATE {schema}.events SET day = date '2024-03-15' WHERE id % 10 = 1;
             DELETE FROM {schema}.events WHERE id % 7 = 0",
        )
        .await;
    server.refresh("sorted").await;
    let theirs = simple_rows(
        &source.client,
        &month.replace("{t}", &format!("{}.events", source.name)),
    )
    .await;
    assert_eq!(
        simple_rows(&replica, &month.replace("{t}", "sorted")).await,
        theirs
    );
    let sorted = scanned_batches(&simple_rows(&replica, &explain("sorted")).await);
    assert!(sorted <= 4, "the month after the refresh: {sorted} batches");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sort_by_column_the_table_lacks_fails_the_refresh_naming_it() {
    let source = SourceSchema::create("pruning_missing").await;
    source.execute(TABLE).await;
    let datasets = source.dataset(
        "events",
        "events",
        "    acceleration:\n      sort_by: [day, hour]\n",
    );
    let server = Server::start(&datasets).await;
    let status = server
        .wait_for_status("events", |status| status["status"] == "Error")
        .await;
    let message = status["error_message"].as_str().unwrap_or_default();
    assert!(
        message.contains("sort_by column `hour` is not a column of the table"),
        "{status}"
    );
}
