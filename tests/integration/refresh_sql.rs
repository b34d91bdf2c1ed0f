//! `refresh_sql` against a real PostgreSQL: its predicate runs in the
//! source, its column list shapes the acceleration, it applies from the
//! initial load on, and `PATCH /v1/datasets/{name}/acceleration` replaces it
//! until restart.

use serde_json::{Value, json};

use crate::support::{Server, SourceSchema, sqlstate};

async fn patch(server: &Server, name: &str, body: Value) -> (u16, Value) {
    let response = server
        .http
        .patch(server.url(&format!("/v1/datasets/{name}/acceleration")))
        .json(&body)
        .send()
        .await
        .expect("PATCH");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn refresh_sql_filters_in_the_source_and_can_be_replaced_at_runtime() {
    let source = SourceSchema::create("refresh_sql").await;
    // Reading the view's row with n = 0 raises division_by_zero in
    // PostgreSQL, so the initial load succeeds only if the WHERE of
    // refresh_sql is evaluated by PostgreSQL itself, before that row's
    // q is computed.
    source
        .execute(
            "CREATE TABLE {schema}.t (id int PRIMARY KEY, city text, n int);
             INSERT INTO {schema}.t VALUES (1, 'Seattle', 1), (2, 'Bellevue', 2), (3, 'Seattle', 0);
             CREATE VIEW {schema}.v AS SELECT id, city, n, 10 / n AS q FROM {schema}.t;",
        )
        .await;
    let server = Server::start(&source.dataset(
        "v",
        "cities",
        "    acceleration:\n      refresh_sql: SELECT id, q FROM cities WHERE n > 0\n",
    ))
    .await;
    server.wait_ready().await;
    let status = server.dataset_status("cities").await;
    assert_eq!(status["status"], "Ready", "{status}");

    let replica = server.client().await;
    let rows: Vec<(i32, i32)> = replica
        .query("SELECT id, q FROM cities ORDER BY id", &[])
        .await
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect();
    assert_eq!(rows, vec![(1, 10), (2, 5)]);
    let error = replica
        .query("SELECT city FROM cities", &[])
        .await
        .unwrap_err();
    assert_eq!(
        sqlstate(&error),
        "42703",
        "only the selected columns are loaded"
    );

    // Refused changes leave the dataset as it was.
    for (body, says) in [
        (
            json!({"refresh_sql": "SELECT upper(city) FROM cities"}),
            "expression",
        ),
        (json!({"refresh_sql": "SELECT * FROM other"}), "FROM cities"),
        (json!({"refresh_mode": "append"}), "only refresh_sql"),
        (json!({"refresh_sql": 7}), "string or null"),
    ] {
        let (code, answer) = patch(&server, "cities", body.clone()).await;
        assert_eq!(code, 400, "{body}: {answer}");
        let message = answer.to_string();
        assert!(message.contains(says), "{body}: {message}");
    }
    let (code, _) = patch(&server, "nope", json!({"refresh_sql": null})).await;
    assert_eq!(code, 404);

    let (code, answer) = patch(
        &server,
        "cities",
        json!({"refresh_sql": "SELECT id, city FROM cities WHERE city = 'Bellevue'"}),
    )
    .await;
    assert_eq!(code, 200, "{answer}");
    // The new statement does not select n, so the row with n = 0 must be
    // filtered out by the predicate on city (again in PostgreSQL: q is not
    // read at all).
    server.refresh("cities").await;
    let rows: Vec<(i32, String)> = replica
        .query("SELECT id, city FROM cities", &[])
        .await
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect();
    assert_eq!(rows, vec![(2, "Bellevue".to_owned())]);

    // A statement of the right shape that does not fit the source's columns
    // fails the refresh without retries, names the dataset, and keeps the
    // data already loaded.
    let (code, _) = patch(
        &server,
        "cities",
        json!({"refresh_sql": "SELECT id FROM cities WHERE nope = 1"}),
    )
    .await;
    assert_eq!(code, 200);
    let (code, _) = server
        .post("/v1/datasets/cities/acceleration/refresh")
        .await;
    assert_eq!(code, 201);
    let status = server
        .wait_for_status("cities", |status| status["status"] == "Error")
        .await;
    let message = status["error_message"].as_str().unwrap();
    assert!(
        message.contains("refresh_sql")
            && message.contains("dataset 'cities'")
            && message.contains("nope"),
        "{message}"
    );
    let count: i64 = replica
        .query_one("SELECT count(*) FROM cities", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(count, 1);
}
