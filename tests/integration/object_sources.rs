//! Parquet, CSV and JSON files read from `s3://` (the S3-compatible server
//! of the tests), appended by object modification time, and each read
//! pinned to one generation of every object it lists.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use datafusion::arrow::array::{Int64Array, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::parquet::arrow::ArrowWriter;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use pgaccel::config::Secret;

use crate::support::{S3Bucket, Server, counter, simple_rows};

/// The bucket's store, as another writer of it would use it.
fn store(bucket: &S3Bucket) -> Arc<dyn ObjectStore> {
    let params = [
        ("s3_auth", "key"),
        ("s3_key", "test"),
        ("s3_secret", "test"),
        ("s3_region", "us-east-1"),
        ("s3_endpoint", bucket.endpoint.as_str()),
        ("allow_http", "true"),
    ]
    .into_iter()
    .map(|(key, value)| (key.to_owned(), Secret::new(value)))
    .collect();
    let location =
        pgaccel::snapshot::Location::open(&format!("s3://{}/", bucket.name), &params).unwrap();
    location.store
}

async fn put(store: &Arc<dyn ObjectStore>, key: &str, bytes: Vec<u8>) {
    store
        .put(&Path::from(key), PutPayload::from(bytes))
        .await
        .unwrap();
}

/// A dataset entry reading `prefix` of the bucket.
fn entry(bucket: &S3Bucket, name: &str, prefix: &str, format: &str, extra: &str) -> String {
    format!(
        "  - from: s3://{}/{prefix}\n    name: {name}\n    params: {{ file_format: {format}, s3_auth: key, s3_key: test, s3_secret: test, s3_region: us-east-1, s3_endpoint: '{}', allow_http: true }}\n{extra}",
        bucket.name, bucket.endpoint
    )
}

async fn rows(server: &Server, sql: &str) -> Vec<Vec<Option<String>>> {
    simple_rows(&server.client().await, sql).await
}

fn parquet(ids: &[i64], values: &[&str]) -> Vec<u8> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("v", DataType::Utf8, false),
    ]));
    let batch = RecordBatch::try_new(
        Arc::clone(&schema),
        vec![
            Arc::new(Int64Array::from(ids.to_vec())),
            Arc::new(StringArray::from(values.to_vec())),
        ],
    )
    .unwrap();
    let mut bytes = Vec::new();
    let mut writer = ArrowWriter::try_new(&mut bytes, schema, None).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    bytes
}

/// Every format from S3, files of other names ignored; an append by
/// `last_modified` reads the objects written since.
#[tokio::test]
async fn data_files_are_read_from_s3() {
    let bucket = S3Bucket::create("objects").await;
    let store = store(&bucket);
    put(&store, "csv/part-1.csv", b"id,v\n1,a\n2,b\n".to_vec()).await;
    put(&store, "csv/part-2.csv", b"id,v\n3,c\n".to_vec()).await;
    put(&store, "csv/readme.txt", b"not data".to_vec()).await;
    put(
        &store,
        "json/a.json",
        b"{\"id\": 1, \"v\": \"x\"}\n{\"id\": 2, \"v\": \"y\"}\n".to_vec(),
    )
    .await;
    put(&store, "pq/a.parquet", parquet(&[7, 8], &["p", "q"])).await;
    let datasets = [
        entry(&bucket, "csv_t", "csv/", "csv", ""),
        entry(&bucket, "json_t", "json/", "json", ""),
        entry(&bucket, "pq_t", "pq/", "parquet", ""),
        // Holds only id < 3; a query that finds nothing there asks S3.
        entry(
            &bucket,
            "fallback_t",
            "csv/",
            "csv",
            "    acceleration:\n      refresh_sql: SELECT * FROM fallback_t WHERE id < 3\n      on_zero_results: use_source\n",
        ),
        entry(
            &bucket,
            "appended_t",
            "csv/",
            "csv",
            "    time_partition_column: last_modified\n    acceleration:\n      refresh_mode: append\n",
        ),
    ]
    .concat();
    let server = Server::start(&datasets).await;
    server.wait_ready().await;
    let text = |values: &[&str]| -> Vec<Vec<Option<String>>> {
        values
            .iter()
            .map(|row| row.split(',').map(|v| Some(v.to_owned())).collect())
            .collect()
    };
    assert_eq!(
        rows(&server, "SELECT id, v FROM csv_t ORDER BY id").await,
        text(&["1,a", "2,b", "3,c"])
    );
    assert_eq!(
        rows(&server, "SELECT id, v FROM json_t ORDER BY id").await,
        text(&["1,x", "2,y"])
    );
    assert_eq!(
        rows(&server, "SELECT id, v FROM pq_t ORDER BY id").await,
        text(&["7,p", "8,q"])
    );
    assert_eq!(
        rows(
            &server,
            "SELECT count(*), count(DISTINCT last_modified) > 0 FROM appended_t"
        )
        .await,
        text(&["3,t"])
    );

    assert_eq!(
        rows(&server, "SELECT count(*) FROM fallback_t").await,
        text(&["2"])
    );
    assert_eq!(
        rows(&server, "SELECT id, v FROM fallback_t WHERE id = 3").await,
        text(&["3,c"])
    );

    put(&store, "csv/part-3.csv", b"id,v\n4,d\n5,e\n".to_vec()).await;
    server.refresh("appended_t").await;
    assert_eq!(
        rows(&server, "SELECT id, v FROM appended_t ORDER BY id").await,
        text(&["1,a", "2,b", "3,c", "4,d", "5,e"])
    );
}

/// What `name` serves is `rows` rows of one generation.
async fn one_generation(server: &Server, name: &str, rows: usize) {
    let found = simple_rows(
        &server.client().await,
        &format!("SELECT count(*), count(DISTINCT generation) FROM {name}"),
    )
    .await;
    assert_eq!(
        found,
        [[Some(rows.to_string()), Some("1".to_owned())]],
        "one whole generation"
    );
}

/// An object rewritten while a refresh reads it: the read is refused by
/// the object's listed ETag, counted as `object_generation_changed`, and
/// retried with a new listing; what is served is always one generation.
#[tokio::test]
async fn an_object_overwritten_during_a_refresh_is_read_again_whole() {
    const ROWS: usize = 40_000;
    let bucket = S3Bucket::create("generations").await;
    let store = store(&bucket);
    let generation = |number: usize| {
        let mut csv = String::from("id,generation\n");
        for id in 0..ROWS {
            csv.push_str(&format!("{id},{number}\n"));
        }
        csv.into_bytes()
    };
    put(&store, "data/t.csv", generation(0)).await;
    let name = "generations_t";
    let server = Server::start(&entry(&bucket, name, "data/", "csv", "")).await;
    server.wait_ready().await;
    one_generation(&server, name, ROWS).await;

    // A writer rewrites the object again and again while refreshes run.
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (store, stop) = (Arc::clone(&store), Arc::clone(&stop));
        tokio::spawn(async move {
            let mut number = 1;
            while !stop.load(Ordering::Relaxed) {
                put(&store, "data/t.csv", generation(number)).await;
                number += 1;
            }
        })
    };
    let changed = || {
        counter(
            &server,
            "dataset_acceleration_refresh_errors",
            name,
            "reason",
            "object_generation_changed",
        )
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    while changed().await == 0 {
        assert!(
            Instant::now() < deadline,
            "no refresh met a rewritten object"
        );
        let before = server.dataset_status(name).await["last_refresh"].clone();
        let (status, body) = server
            .post(&format!("/v1/datasets/{name}/acceleration/refresh"))
            .await;
        assert_eq!(status, 201, "{body}");
        // This refresh ends: loaded whole, or stopped by the change.
        while server.dataset_status(name).await["last_refresh"] == before && changed().await == 0 {
            assert!(Instant::now() < deadline, "the refresh did not end");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        one_generation(&server, name, ROWS).await;
    }
    stop.store(true, Ordering::Relaxed);
    writer.await.unwrap();
    // Retried with a new listing, the refresh completes.
    server.refresh(name).await;
    one_generation(&server, name, ROWS).await;
}
