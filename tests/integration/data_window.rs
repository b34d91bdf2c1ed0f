//! `refresh_data_window` against a real PostgreSQL: only rows whose
//! `time_column` is within the window are loaded, for every `time_format`,
//! and the window is AND-ed with `refresh_sql`.

use crate::support::{Server, SourceSchema};

/// (dataset, time_column, time_format, window, refresh_sql, expected ids)
type Case<'a> = (
    &'a str,
    &'a str,
    Option<&'a str>,
    &'a str,
    Option<&'a str>,
    &'a [i32],
);

#[tokio::test]
async fn the_data_window_keeps_recent_rows_for_every_time_format() {
    let source = SourceSchema::create("window").await;
    // Rows 1, 2 and 3 are one hour, three hours and three days old.
    // `timestamp` columns hold UTC wall-clock time.
    source
        .execute(
            "CREATE TABLE {schema}.e (id int PRIMARY KEY, ts timestamp, tstz timestamptz,
                 secs bigint, millis bigint, nanos bigint, iso text, day date);
             INSERT INTO {schema}.e
             SELECT id, (at AT TIME ZONE 'UTC'), at,
                    extract(epoch FROM at)::bigint,
                    (extract(epoch FROM at) * 1000)::bigint,
                    (extract(epoch FROM at) * 1000000)::bigint * 1000,
                    to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),
                    (at AT TIME ZONE 'UTC')::date
             FROM (VALUES (1, now() - interval '1 hour'), (2, now() - interval '3 hours'),
                          (3, now() - interval '3 days')) AS rows(id, at);",
        )
        .await;
    let cases: &[Case] = &[
        ("w_ts", "ts", None, "2h", None, &[1]),
        ("w_ts_named", "ts", Some("timestamp"), "4h", None, &[1, 2]),
        ("w_tstz", "tstz", Some("timestamptz"), "2h", None, &[1]),
        ("w_secs", "secs", Some("unix_seconds"), "2h", None, &[1]),
        (
            "w_millis",
            "millis",
            Some("unix_millis"),
            "4h",
            None,
            &[1, 2],
        ),
        ("w_nanos", "nanos", Some("unix_nanos"), "2h", None, &[1]),
        ("w_iso", "iso", Some("iso8601"), "2h", None, &[1]),
        ("w_day", "day", Some("date"), "2d", None, &[1, 2]),
        (
            "w_and",
            "tstz",
            None,
            "4h",
            Some("SELECT * FROM w_and WHERE id <> 1"),
            &[2],
        ),
    ];
    let datasets: String = cases
        .iter()
        .map(|(name, column, format, window, refresh_sql, _)| {
            let mut entry = source.dataset("e", name, "");
            entry.push_str(&format!("    time_column: {column}\n"));
            if let Some(format) = format {
                entry.push_str(&format!("    time_format: {format}\n"));
            }
            entry.push_str(&format!(
                "    acceleration:\n      refresh_data_window: {window}\n"
            ));
            if let Some(sql) = refresh_sql {
                entry.push_str(&format!("      refresh_sql: \"{sql}\"\n"));
            }
            entry
        })
        .collect();
    let server = Server::start(&datasets).await;
    server.wait_ready().await;
    let replica = server.client().await;
    for (name, _, _, _, _, expected) in cases {
        let status = server.dataset_status(name).await;
        assert_eq!(status["status"], "Ready", "{status}");
        let ids: Vec<i32> = replica
            .query(&format!("SELECT id FROM {name} ORDER BY id"), &[])
            .await
            .unwrap()
            .iter()
            .map(|row| row.get(0))
            .collect();
        assert_eq!(&ids, expected, "{name}");
    }
}
