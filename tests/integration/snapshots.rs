//! Acceleration snapshots: a writer publishes its file acceleration after
//! each refresh; replicas restore the current snapshot and follow newer
//! ones without ever reaching their source (the replicas here are given no
//! connection parameters at all).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use object_store::{ObjectStoreExt, PutPayload};
use pgaccel::config::Secret;
use pgaccel::snapshot::Location;
use pgaccel::snapshot::metadata::{self, MetadataError, Read};
use serde_json::Value;

use crate::support::{
    Endpoint, Process, S3Bucket, Server, SourceSchema, counter, eventually, logs, simple_rows,
    sqlstate,
};

/// A dataset entry reading `{schema}.t` (from the real PostgreSQL with
/// `connected`, otherwise with no connection parameters at all, as a
/// replica that never contacts its source is configured), kept by `engine`
/// in `file`, with `acceleration` keys added.
fn entry(
    source: &SourceSchema,
    connected: bool,
    name: &str,
    engine: &str,
    file: &Path,
    acceleration: &str,
) -> String {
    let params = if connected {
        "    params: { pg_host: 127.0.0.1, pg_port: 5432, pg_db: test, pg_user: postgres, pg_sslmode: disable }\n"
    } else {
        ""
    };
    format!(
        "  - from: postgres:{schema}.t\n    name: {name}\n{params}    acceleration:\n      engine: {engine}\n      mode: file\n      params: {{ {engine}_file: '{file}' }}\n{acceleration}",
        schema = source.name,
        file = file.display(),
    )
}

/// A whole configuration: listeners on free ports, `snapshots` (a
/// top-level block or nothing) and the dataset entries.
fn config(snapshots: &str, datasets: &str) -> String {
    format!(
        "runtime:\n  pg: {{ listen: 127.0.0.1:0 }}\n  http: {{ listen: 127.0.0.1:0 }}\n{snapshots}datasets:\n{datasets}"
    )
}

/// Where a test's snapshots live, and the same location opened through
/// pgaccel's own `Location`, so that the test reads and rewrites
/// metadata.json as another writer would.
struct Place {
    /// The top-level `snapshots` block that names it.
    block: String,
    /// How a `file_format: snapshot` dataset names it: `from` and the
    /// `params` keys besides `file_format`.
    from: String,
    params: String,
    location: Location,
}

impl Place {
    fn folder(path: &Path) -> Place {
        let url = format!("file://{}", path.display());
        Place {
            block: format!("snapshots:\n  enabled: true\n  location: '{url}'\n"),
            from: format!("file:{}", path.display()),
            params: String::new(),
            location: Location::open(&url, &BTreeMap::new()).unwrap(),
        }
    }

    fn s3(bucket: &S3Bucket) -> Place {
        let url = format!("s3://{}/replicas/", bucket.name);
        let params = [
            ("s3_auth", "key"),
            ("s3_key", "test"),
            ("s3_secret", "test"),
            ("s3_region", "us-east-1"),
            ("s3_endpoint", &bucket.endpoint),
            ("allow_http", "true"),
        ]
        .into_iter()
        .map(|(key, value)| (key.to_owned(), Secret::new(value)))
        .collect();
        Place {
            block: format!(
                "snapshots:\n  enabled: true\n  location: '{url}'\n  params: {}\n",
                bucket.params()
            ),
            from: url.clone(),
            params: format!(
                ", s3_auth: key, s3_key: test, s3_secret: test, s3_region: us-east-1, s3_endpoint: '{}', allow_http: true",
                bucket.endpoint
            ),
            location: Location::open(&url, &params).unwrap(),
        }
    }

    async fn metadata(&self) -> Value {
        match self
            .location
            .store
            .get(&self.location.path("metadata.json"))
            .await
        {
            Ok(result) => serde_json::from_slice(&result.bytes().await.unwrap()).unwrap(),
            Err(_) => Value::Null,
        }
    }

    async fn current_id(&self, name: &str) -> Option<String> {
        self.metadata().await["datasets"][name]["current"]
            .as_str()
            .map(str::to_owned)
    }

    /// Replaces metadata.json unconditionally.
    async fn write_metadata(&self, metadata: &Value) {
        self.location
            .store
            .put(
                &self.location.path("metadata.json"),
                PutPayload::from(serde_json::to_vec_pretty(metadata).unwrap()),
            )
            .await
            .unwrap();
    }

    async fn delete_metadata(&self) {
        self.location
            .store
            .delete(&self.location.path("metadata.json"))
            .await
            .unwrap();
    }
}

async fn count(server: &Endpoint, name: &str) -> i64 {
    let rows = simple_rows(
        &server.client().await,
        &format!("SELECT count(*) FROM {name}"),
    )
    .await;
    rows[0][0].as_deref().unwrap().parse().unwrap()
}

/// Asserts that a failed poll left `name` serving: Ready, or Refreshing
/// during the next poll's download, never Error.
async fn still_serving(server: &Endpoint, name: &str) {
    let status = server.dataset_status(name).await;
    assert!(
        status["status"] == "Ready" || status["status"] == "Refreshing",
        "{status}"
    );
}

/// The count of `dataset_acceleration_refresh_errors` for `name` and `reason`.
async fn refresh_errors(server: &Endpoint, name: &str, reason: &str) -> u64 {
    counter(
        server,
        "dataset_acceleration_refresh_errors",
        name,
        "reason",
        reason,
    )
    .await
}

async fn bootstraps(server: &Endpoint, name: &str, outcome: &str) -> u64 {
    counter(
        server,
        "dataset_acceleration_snapshot_bootstraps",
        name,
        "outcome",
        outcome,
    )
    .await
}

#[tokio::test]
async fn replicas_follow_a_writer_through_a_folder() {
    for engine in ["duckdb", "sqlite"] {
        let folder = tempfile::tempdir().unwrap();
        let place = Place::folder(&folder.path().join("snapshots"));
        replicas_restore_and_follow_the_writer(&place, engine, folder.path(), false).await;
    }
}

/// Through S3, the writer and the replicas are processes of their own (the
/// built binary), as on separate machines.
#[tokio::test]
async fn replicas_follow_a_writer_through_s3() {
    for engine in ["duckdb", "sqlite"] {
        let bucket = S3Bucket::create("snapshots").await;
        let folder = tempfile::tempdir().unwrap();
        let place = Place::s3(&bucket);
        replicas_restore_and_follow_the_writer(&place, engine, folder.path(), true).await;
    }
}

/// A pgaccel of the tests: in this process, or the built binary as a
/// process of its own.
enum Node {
    Here(Server),
    Spawned(Process, PathBuf),
}

impl Node {
    /// Starts one with `block` and `datasets`; `spawned` in `folder`.
    async fn start(spawned: bool, folder: &Path, block: &str, datasets: &str) -> Node {
        if spawned {
            std::fs::create_dir_all(folder).unwrap();
            Node::Spawned(
                Process::start(folder, block, datasets),
                folder.join("pgaccel.log"),
            )
        } else {
            Node::Here(Server::start_with_config(&config(block, datasets)).await)
        }
    }

    /// Its log lines.
    fn log(&self) -> Vec<String> {
        match self {
            Node::Here(_) => logs(),
            Node::Spawned(_, log) => std::fs::read_to_string(log)
                .unwrap_or_default()
                .lines()
                .map(str::to_owned)
                .collect(),
        }
    }
}

impl std::ops::Deref for Node {
    type Target = Endpoint;

    fn deref(&self) -> &Endpoint {
        match self {
            Node::Here(server) => server,
            Node::Spawned(process, _) => process,
        }
    }
}

/// One writer and two replicas sharing `place` (`spawned`: as processes of
/// their own); `files` holds their acceleration files.
async fn replicas_restore_and_follow_the_writer(
    place: &Place,
    engine: &str,
    files: &Path,
    spawned: bool,
) {
    {
        let source = SourceSchema::create("snapshots").await;
        source
            .execute("CREATE TABLE {schema}.t (id int PRIMARY KEY, v text); INSERT INTO {schema}.t SELECT g, 'v' || g FROM generate_series(1, 100) g")
            .await;
        let name = format!("snap_{engine}");
        let writer = Node::start(
            spawned,
            &files.join("writer"),
            &place.block,
            &entry(
                &source,
                true,
                &name,
                engine,
                &files.join("writer.db"),
                "      snapshots: enabled\n",
            ),
        )
        .await;
        writer.wait_ready().await;
        eventually("the first snapshot", || async {
            place.current_id(&name).await.is_some()
        })
        .await;
        let first = place.current_id(&name).await.unwrap();
        // Two replicas, each with its own file and no reachable source.
        let replica = |node: &str| {
            let datasets = entry(
                &source,
                false,
                &name,
                engine,
                &files.join(format!("{node}.db")),
                "      refresh_mode: snapshot\n      refresh_check_interval: 1s\n      snapshots: bootstrap_only\n",
            );
            let folder = files.join(node);
            async move { Node::start(spawned, &folder, &place.block, &datasets).await }
        };
        let one = replica("one").await;
        let two = replica("two").await;
        for server in [&one, &two] {
            server.wait_ready().await;
            assert_eq!(count(server, &name).await, 100);
            let status = server.dataset_status(&name).await;
            assert_eq!(status["snapshot"]["id"], first.as_str(), "{status}");
            // Later polls send the ETag they loaded with and stop at "not
            // modified".
            eventually("a poll that stops at not modified", || async {
                counter(
                    server,
                    "dataset_acceleration_snapshot_polls",
                    &name,
                    "outcome",
                    "not_modified",
                )
                .await
                    > 0
            })
            .await;
        }
        // The writer refreshes; both replicas load the newer snapshot, and
        // queries running all along see the old rows or the new, never an
        // error or a mix.
        let watcher = one.client().await;
        let watched = format!("SELECT count(*), max(id) FROM {name}");
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let load = tokio::spawn({
            let stop = std::sync::Arc::clone(&stop);
            async move {
                let mut seen = Vec::new();
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let row = watcher
                        .query_one(&watched, &[])
                        .await
                        .expect("a query during the swap");
                    seen.push((row.get::<_, i64>(0), row.get::<_, Option<i32>>(1)));
                }
                seen
            }
        });
        source
            .execute("INSERT INTO {schema}.t SELECT g, 'v' || g FROM generate_series(101, 150) g")
            .await;
        writer.refresh(&name).await;
        eventually("a second snapshot", || async {
            place.current_id(&name).await.is_some_and(|id| id > first)
        })
        .await;
        for server in [&one, &two] {
            eventually("the replica follows", || async {
                count(server, &name).await == 150
            })
            .await;
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let seen = load.await.unwrap();
        assert!(
            seen.iter()
                .all(|row| *row == (100, Some(100)) || *row == (150, Some(150))),
            "torn reads: {seen:?}"
        );
        assert!(seen.contains(&(150, Some(150))), "{seen:?}");
        // Writes are refused, saying why, however the table is named.
        let client = one.client().await;
        for statement in [
            format!("DELETE FROM {name}"),
            format!("INSERT INTO \"public\".\"{name}\" VALUES (1, 'x')"),
            format!("UPDATE public.{name} SET v = 'x'"),
            format!("TRUNCATE {name}"),
        ] {
            let error = client.execute(&statement, &[]).await.unwrap_err();
            assert_eq!(sqlstate(&error), "25006", "{statement}: {error}");
            let detail = error
                .as_db_error()
                .and_then(|e| e.detail())
                .unwrap_or_default();
            assert!(
                detail.contains("driven by snapshots"),
                "{statement}: {error:?}"
            );
        }
        let loaded = place.current_id(&name).await.unwrap();
        let mut published = place.metadata().await;
        let snapshots = published["datasets"][&name].clone();
        let entry = snapshots["snapshots"]
            .as_array()
            .unwrap()
            .iter()
            .find(|entry| entry["id"] == loaded.as_str())
            .unwrap()
            .clone();
        // A newer snapshot whose file does not match its checksum: the
        // replicas keep serving what they have.
        let mut corrupt = entry.clone();
        corrupt["id"] = "20991231T000000Z".into();
        corrupt["sha256"] = "0".repeat(64).into();
        published["datasets"][&name]["snapshots"]
            .as_array_mut()
            .unwrap()
            .push(corrupt);
        published["datasets"][&name]["current"] = "20991231T000000Z".into();
        place.write_metadata(&published).await;
        eventually("the corrupt snapshot is reported", || async {
            refresh_errors(&one, &name, "snapshot_download_failed").await > 0
        })
        .await;
        for server in [&one, &two] {
            assert_eq!(count(server, &name).await, 150);
            still_serving(server, &name).await;
        }
        let warning = format!(
            "Dataset '{name}' cannot refresh from its snapshot location, so it keeps serving snapshot {loaded}"
        );
        let log = one.log();
        assert!(
            log.iter().any(|line| line.contains(&warning)),
            "the seed's warning is logged: {log:#?}"
        );
        // A current id older than the loaded one.
        published["datasets"][&name]["current"] = first.as_str().into();
        place.write_metadata(&published).await;
        eventually("the older snapshot is reported", || async {
            refresh_errors(&one, &name, "snapshot_older_than_loaded").await > 0
        })
        .await;
        assert_eq!(count(&one, &name).await, 150);
        // No metadata at all.
        place.delete_metadata().await;
        eventually("the missing metadata is reported", || async {
            refresh_errors(&one, &name, "snapshot_not_found").await > 0
        })
        .await;
        assert_eq!(count(&one, &name).await, 150);
        still_serving(&one, &name).await;
        drop((one, two, writer));
    }
}

/// metadata.json is written only over the version its writer read: a
/// writer holding a stale ETag gets a conflict instead of overwriting
/// another's update, and a conditional read of an unchanged file is "not
/// modified", on a folder and on S3 alike.
#[tokio::test]
async fn metadata_writes_are_conditional() {
    let folder = tempfile::tempdir().unwrap();
    let bucket = S3Bucket::create("conditional").await;
    for place in [Place::folder(folder.path()), Place::s3(&bucket)] {
        let location = &place.location;
        assert!(matches!(
            metadata::read(location, None).await.unwrap(),
            Read::Missing
        ));
        let mut first = metadata::Metadata::default();
        first.datasets.insert("a".into(), Default::default());
        metadata::write(location, &first, None).await.unwrap();
        // Creating it again, as a writer that saw none, conflicts.
        let error = metadata::write(location, &first, None).await.unwrap_err();
        assert!(matches!(error, MetadataError::Conflict { .. }), "{error}");
        let Read::Found { version: stale, .. } = metadata::read(location, None).await.unwrap()
        else {
            panic!("metadata.json was written");
        };
        let tag = stale.e_tag.clone().expect("an ETag");
        assert!(matches!(
            metadata::read(location, Some(&tag)).await.unwrap(),
            Read::NotModified
        ));
        // One writer updates over what it read...
        let mut second = first.clone();
        second.datasets.insert("b".into(), Default::default());
        metadata::write(location, &second, Some(&stale))
            .await
            .unwrap();
        // ...and another, holding the same now stale ETag, is refused.
        let mut third = first.clone();
        third.datasets.insert("c".into(), Default::default());
        let error = metadata::write(location, &third, Some(&stale))
            .await
            .unwrap_err();
        assert!(matches!(error, MetadataError::Conflict { .. }), "{error}");
        let Read::Found { metadata, .. } = metadata::read(location, Some(&tag)).await.unwrap()
        else {
            panic!("the update changed the ETag");
        };
        assert_eq!(
            metadata.datasets.keys().collect::<Vec<_>>(),
            ["a", "b"],
            "{}",
            location.url
        );
    }
}

/// A `refresh_mode: snapshot` replica of `name` polling every second, in
/// this process, Ready.
async fn start_replica(
    place: &Place,
    source: &SourceSchema,
    name: &str,
    engine: &str,
    files: &Path,
) -> Server {
    let replica = Server::start_with_config(&config(
        &place.block,
        &entry(
            source,
            false,
            name,
            engine,
            &files.join("replica.db"),
            "      refresh_mode: snapshot\n      refresh_check_interval: 1s\n      snapshots: bootstrap_only\n",
        ),
    ))
    .await;
    replica.wait_ready().await;
    replica
}

/// A source table `{schema}.t` of `rows` rows, and a writer of dataset
/// `name` that has published its `first` snapshot to a folder.
struct Published {
    source: SourceSchema,
    folder: tempfile::TempDir,
    place: Place,
    writer: Server,
    first: String,
}

async fn published(prefix: &str, rows: u32, name: &str, engine: &str) -> Published {
    let source = SourceSchema::create(prefix).await;
    source
        .execute(&format!("CREATE TABLE {{schema}}.t (id int PRIMARY KEY, v text); INSERT INTO {{schema}}.t SELECT g, 'v' || g FROM generate_series(1, {rows}) g"))
        .await;
    let folder = tempfile::tempdir().unwrap();
    let place = Place::folder(&folder.path().join("snapshots"));
    let writer = start_writer(&place, &source, name, engine, folder.path()).await;
    eventually("the first snapshot", || async {
        place.current_id(name).await.is_some()
    })
    .await;
    let first = place.current_id(name).await.unwrap();
    Published {
        source,
        folder,
        place,
        writer,
        first,
    }
}

/// A writer of `name` (`snapshots: create_only`) in this process, Ready.
async fn start_writer(
    place: &Place,
    source: &SourceSchema,
    name: &str,
    engine: &str,
    files: &Path,
) -> Server {
    let writer = Server::start_with_config(&config(
        &place.block,
        &entry(
            source,
            true,
            name,
            engine,
            &files.join("writer.db"),
            "      snapshots: create_only\n",
        ),
    ))
    .await;
    writer.wait_ready().await;
    writer
}

/// A dataset entry whose source cannot be reached (nothing listens on
/// port 1), so that what it serves can only come from a snapshot.
fn unreachable(source: &SourceSchema, name: &str, file: &Path, acceleration: &str) -> String {
    entry(source, false, name, "duckdb", file, acceleration).replace(
        "    acceleration:",
        "    params: { pg_host: 127.0.0.1, pg_port: 1, pg_db: test, pg_user: postgres, pg_sslmode: disable }\n    acceleration:",
    )
}

/// A restore that fails (the current snapshot does not match its checksum)
/// does what `bootstrap_on_failure_behavior` says: `warn` loads from the
/// source, `fallback` restores the newest older snapshot that verifies,
/// `retry` tries the whole restore again until it succeeds.
#[tokio::test]
async fn a_failed_restore_does_what_bootstrap_on_failure_behavior_says() {
    let name = "boot";
    // A writer publishes 100 rows, then 150.
    let Published {
        source,
        folder,
        place,
        writer,
        first,
    } = published("bootstrap", 100, name, "duckdb").await;
    let files = folder.path();
    source
        .execute("INSERT INTO {schema}.t SELECT g, 'v' || g FROM generate_series(101, 150) g")
        .await;
    writer.refresh(name).await;
    eventually("the second snapshot", || async {
        place.current_id(name).await.is_some_and(|id| id > first)
    })
    .await;
    drop(writer);
    let second = place.current_id(name).await.unwrap();
    source
        .execute("INSERT INTO {schema}.t SELECT g, 'v' || g FROM generate_series(151, 175) g")
        .await;
    // The current snapshot's file no longer matches metadata.json.
    let good = place.metadata().await;
    let mut corrupt = good.clone();
    for snapshot in corrupt["datasets"][name]["snapshots"]
        .as_array_mut()
        .unwrap()
    {
        if snapshot["id"] == second.as_str() {
            snapshot["sha256"] = "0".repeat(64).into();
        }
    }
    place.write_metadata(&corrupt).await;
    let with = |behavior: &str| {
        place.block.clone() + &format!("  bootstrap_on_failure_behavior: {behavior}\n")
    };

    // warn: the source, as without snapshots.
    let warned = Server::start_with_config(&config(
        &with("warn"),
        &entry(
            &source,
            true,
            name,
            "duckdb",
            &files.join("warn.db"),
            "      snapshots: bootstrap_only\n",
        ),
    ))
    .await;
    warned.wait_ready().await;
    assert_eq!(count(&warned, name).await, 175);
    assert_eq!(bootstraps(&warned, name, "failed").await, 1);
    assert!(
        logs().iter().any(|line| line.contains(
            "restoring dataset 'boot' from its snapshot failed, loading from the source instead"
        )),
        "warn says so"
    );
    drop(warned);

    // fallback: the older snapshot, with the source out of reach.
    let fell_back = Server::start_with_config(&config(
        &with("fallback"),
        &unreachable(
            &source,
            name,
            &files.join("fallback.db"),
            "      snapshots: bootstrap_only\n",
        ),
    ))
    .await;
    fell_back.wait_ready().await;
    assert_eq!(count(&fell_back, name).await, 100);
    assert_eq!(bootstraps(&fell_back, name, "fallback").await, 1);
    let status = fell_back.dataset_status(name).await;
    assert_eq!(status["snapshot"]["id"], first.as_str(), "{status}");
    // Restored from a snapshot: no last_refresh until a refresh completes
    // in this process (and its source is out of reach).
    assert_eq!(status["last_refresh"], Value::Null, "{status}");
    drop(fell_back);

    // The same for the writer, restarted on its own file without its
    // source: it serves the file but does not report the checkpoint's time.
    let restarted = Server::start_with_config(&config(
        &place.block,
        &unreachable(
            &source,
            name,
            &files.join("writer.db"),
            "      snapshots: create_only\n",
        ),
    ))
    .await;
    restarted.wait_ready().await;
    assert_eq!(count(&restarted, name).await, 150);
    let status = restarted.dataset_status(name).await;
    assert_eq!(status["last_refresh"], Value::Null, "{status}");
    drop(restarted);

    // retry: fails until the metadata is repaired, then restores it.
    let retried = Server::start_with_config(&config(
        &with("retry"),
        &unreachable(
            &source,
            name,
            &files.join("retry.db"),
            "      snapshots: bootstrap_only\n",
        ),
    ))
    .await;
    eventually("a failed attempt", || async {
        bootstraps(&retried, name, "failed").await >= 1
    })
    .await;
    assert_ne!(retried.dataset_status(name).await["status"], "Ready");
    place.write_metadata(&good).await;
    retried.wait_ready().await;
    assert_eq!(count(&retried, name).await, 150);
    assert_eq!(bootstraps(&retried, name, "restored").await, 1);
    let status = retried.dataset_status(name).await;
    assert_eq!(status["snapshot"]["id"], second.as_str(), "{status}");
}

/// A `refresh_mode: snapshot` replica started before any snapshot exists
/// waits for the first one (whatever `bootstrap_on_failure_behavior`
/// says), saying so, then serves it.
#[tokio::test]
async fn a_replica_waits_for_the_first_snapshot() {
    let source = SourceSchema::create("first_wait").await;
    source
        .execute("CREATE TABLE {schema}.t (id int PRIMARY KEY, v text); INSERT INTO {schema}.t SELECT g, 'v' || g FROM generate_series(1, 40) g")
        .await;
    let folder = tempfile::tempdir().unwrap();
    let files = folder.path();
    let place = Place::folder(&files.join("snapshots"));
    let name = "first_wait";
    let replica = Server::start_with_config(&config(
        &(place.block.clone() + "  bootstrap_on_failure_behavior: fallback\n"),
        &entry(
            &source,
            false,
            name,
            "sqlite",
            &files.join("replica.db"),
            "      refresh_mode: snapshot\n      refresh_check_interval: 1s\n      snapshots: bootstrap_only\n",
        ),
    ))
    .await;
    eventually("the waiting line", || async {
        logs().iter().any(|line| {
            line.contains(
                "Snapshot acceleration for dataset 'first_wait' is waiting for its first snapshot",
            )
        })
    })
    .await;
    assert_ne!(replica.dataset_status(name).await["status"], "Ready");
    let _writer = start_writer(&place, &source, name, "sqlite", files).await;
    replica.wait_ready().await;
    assert_eq!(count(&replica, name).await, 40);
    let status = replica.dataset_status(name).await;
    assert_eq!(
        status["snapshot"]["id"].as_str(),
        place.current_id(name).await.as_deref(),
        "{status}"
    );
}

/// A dataset whose `from` is a snapshot location with `file_format:
/// snapshot` names no source, engine or top-level snapshots block: it is not
/// ready (and its queries fail) until a snapshot is published, then serves
/// and follows the writer's snapshots, read-only; in a folder and on S3.
#[tokio::test]
async fn a_file_format_snapshot_dataset_serves_a_location_alone() {
    let folder = tempfile::tempdir().unwrap();
    let bucket = S3Bucket::create("reader").await;
    let places = [
        Place::folder(&folder.path().join("snapshots")),
        Place::s3(&bucket),
    ];
    for (index, place) in places.iter().enumerate() {
        let source = SourceSchema::create("snapshot_reader").await;
        source
            .execute("CREATE TABLE {schema}.t (id int PRIMARY KEY, v text); INSERT INTO {schema}.t SELECT g, 'v' || g FROM generate_series(1, 40) g")
            .await;
        let files = folder.path().join(format!("files{index}"));
        std::fs::create_dir_all(&files).unwrap();
        let name = format!("reader{index}");
        let reader = Server::start_with_config(&config(
            "",
            &format!(
                "  - from: '{}'\n    name: {name}\n    params: {{ file_format: snapshot{} }}\n    acceleration:\n      refresh_check_interval: 1s\n      params: {{ duckdb_file: '{}' }}\n",
                place.from,
                place.params,
                files.join("reader.db").display()
            ),
        ))
        .await;
        let waiting =
            format!("Snapshot acceleration for dataset '{name}' is waiting for its first snapshot");
        eventually("the waiting line", || async {
            logs().iter().any(|line| line.contains(&waiting))
        })
        .await;
        assert_eq!(reader.get("/v1/ready").await.0, 503);
        let error = reader
            .client()
            .await
            .simple_query(&format!("SELECT count(*) FROM {name}"))
            .await
            .unwrap_err();
        assert_eq!(sqlstate(&error), "55000", "{error}");
        let writer = start_writer(place, &source, &name, "sqlite", &files).await;
        reader.wait_ready().await;
        assert_eq!(count(&reader, &name).await, 40);
        source
            .execute("INSERT INTO {schema}.t SELECT g, 'v' || g FROM generate_series(41, 60) g")
            .await;
        writer.refresh(&name).await;
        eventually("the reader follows", || async {
            count(&reader, &name).await == 60
        })
        .await;
        let error = reader
            .client()
            .await
            .execute(&format!("DELETE FROM {name}"), &[])
            .await
            .unwrap_err();
        assert_eq!(sqlstate(&error), "25006", "{error}");
    }
}

/// A newer snapshot whose columns differ from the loaded one is refused from
/// metadata.json alone, before anything is downloaded: the replica keeps
/// serving, counts `snapshot_schema_mismatch` and logs the seed's warning.
#[tokio::test]
async fn a_snapshot_with_other_columns_is_refused_before_download() {
    let name = "reshaped";
    let Published {
        source,
        folder,
        place,
        writer,
        first,
    } = published("schema_change", 30, name, "duckdb").await;
    let files = folder.path();
    let replica = start_replica(&place, &source, name, "duckdb", files).await;
    assert_eq!(count(&replica, name).await, 30);
    let downloaded = || {
        counter(
            &replica,
            "dataset_acceleration_snapshot_bytes",
            name,
            "direction",
            "download",
        )
    };
    let before = downloaded().await;
    assert!(before > 0);
    // The writer's source gains a column. The writer blocks the change
    // (on_schema_change: block); a new writer, with a file of its own,
    // publishes a snapshot that has it.
    drop(writer);
    source
        .execute("ALTER TABLE {schema}.t ADD COLUMN extra int; INSERT INTO {schema}.t VALUES (31, 'v31', 1)")
        .await;
    let files_again = files.join("again");
    std::fs::create_dir_all(&files_again).unwrap();
    let _writer = start_writer(&place, &source, name, "duckdb", &files_again).await;
    eventually("a second snapshot", || async {
        place.current_id(name).await.is_some_and(|id| id > first)
    })
    .await;
    eventually("the mismatch is reported", || async {
        refresh_errors(&replica, name, "snapshot_schema_mismatch").await > 0
    })
    .await;
    assert_eq!(downloaded().await, before, "nothing was downloaded");
    assert_eq!(count(&replica, name).await, 30);
    still_serving(&replica, name).await;
    let status = replica.dataset_status(name).await;
    assert_eq!(status["snapshot"]["id"], first.as_str(), "{status}");
}

/// metadata.json may arrive before the snapshot file it names: the replica
/// looks for the file again (every 10 s, for up to 90 s) and loads it once
/// it is there.
#[tokio::test]
async fn a_snapshot_file_that_arrives_after_its_metadata_is_waited_for() {
    let name = "late";
    let Published {
        source,
        folder,
        place,
        writer,
        ..
    } = published("late_file", 20, name, "sqlite").await;
    drop(writer);
    let files = folder.path();
    let location = files.join("snapshots");
    let replica = start_replica(&place, &source, name, "sqlite", files).await;
    // A newer snapshot whose file is still on its way.
    let mut published = place.metadata().await;
    let current = place.current_id(name).await.unwrap();
    let mut late = published["datasets"][name]["snapshots"]
        .as_array()
        .unwrap()
        .iter()
        .find(|entry| entry["id"] == current.as_str())
        .unwrap()
        .clone();
    let existing = location.join(late["path"].as_str().unwrap());
    late["id"] = "20991231T000000Z".into();
    late["path"] = "late/late_20991231T000000Z.sqlite".into();
    published["datasets"][name]["snapshots"]
        .as_array_mut()
        .unwrap()
        .push(late);
    published["datasets"][name]["current"] = "20991231T000000Z".into();
    place.write_metadata(&published).await;
    eventually("the replica waits for the file", || async {
        logs().iter().any(|line| {
            line.contains(
                "snapshot 20991231T000000Z of dataset 'late' is listed in metadata.json but not at",
            )
        })
    })
    .await;
    std::fs::create_dir_all(location.join("late")).unwrap();
    std::fs::copy(
        &existing,
        location.join("late/late_20991231T000000Z.sqlite"),
    )
    .unwrap();
    replica
        .wait_for_status(name, |status| {
            status["snapshot"]["id"] == "20991231T000000Z"
        })
        .await;
    assert_eq!(count(&replica, name).await, 20);
}

/// An append dataset restored from a snapshot catches up from the newest
/// `time_column` value it holds, as the seed says: it appends what is newer
/// and does not reload (a row deleted at the source meanwhile stays).
#[tokio::test]
async fn an_append_dataset_restored_from_a_snapshot_catches_up() {
    let source = SourceSchema::create("append_restore").await;
    source
        .execute("CREATE TABLE {schema}.t (id int PRIMARY KEY, v text, at timestamptz NOT NULL); INSERT INTO {schema}.t SELECT g, 'v' || g, now() - interval '1 day' + g * interval '1 second' FROM generate_series(1, 100) g")
        .await;
    let folder = tempfile::tempdir().unwrap();
    let files = folder.path();
    let place = Place::folder(&files.join("snapshots"));
    let name = "appended";
    let append = |file: &str, mode: &str| {
        entry(
            &source,
            true,
            name,
            "duckdb",
            &files.join(file),
            &format!("      refresh_mode: append\n      snapshots: {mode}\n"),
        )
        .replace(
            "    acceleration:",
            "    time_column: at\n    acceleration:",
        )
    };
    let writer =
        Server::start_with_config(&config(&place.block, &append("writer.db", "create_only"))).await;
    writer.wait_ready().await;
    eventually("the first snapshot", || async {
        place.current_id(name).await.is_some()
    })
    .await;
    drop(writer);
    source
        .execute("DELETE FROM {schema}.t WHERE id = 1; INSERT INTO {schema}.t SELECT g, 'v' || g, now() + g * interval '1 second' FROM generate_series(101, 150) g")
        .await;
    let restored = Server::start_with_config(&config(
        &place.block,
        &append("restored.db", "bootstrap_only"),
    ))
    .await;
    restored.wait_ready().await;
    eventually("the append catches up", || async {
        count(&restored, name).await == 150
    })
    .await;
    let status = restored.dataset_status(name).await;
    assert_eq!(
        status["snapshot"]["id"].as_str(),
        place.current_id(name).await.as_deref(),
        "{status}"
    );
    let rows = simple_rows(
        &restored.client().await,
        &format!("SELECT count(*) FROM {name} WHERE id = 1"),
    )
    .await;
    assert_eq!(rows, [[Some("1".to_owned())]], "restored, not reloaded");
}

/// With `snapshots.params.s3_queue_url`, a replica that checks its location
/// only once an hour restores its first snapshot and follows the next one
/// as soon as the writer rewrites metadata.json: the bucket's notifications
/// reach it through SQS. The notifications it handled are deleted; one for
/// an object outside the location is logged and left on the queue.
#[tokio::test]
async fn replicas_reload_on_s3_notifications() {
    let bucket = S3Bucket::create("notified").await;
    let queue = bucket.notify_queue(&bucket.name).await;
    let place = Place::s3(&bucket);
    let block = place.block.replace(
        "allow_http: true }",
        &format!("allow_http: true, s3_queue_url: '{queue}' }}"),
    );
    assert_ne!(block, place.block);
    let source = SourceSchema::create("notified").await;
    source
        .execute("CREATE TABLE {schema}.t (id int PRIMARY KEY, v text); INSERT INTO {schema}.t SELECT g, 'v' || g FROM generate_series(1, 100) g")
        .await;
    let folder = tempfile::tempdir().unwrap();
    let name = "notified";
    // The replica is the built binary, a process of its own.
    let replica = Node::start(
        true,
        &folder.path().join("replica"),
        &block,
        &entry(
            &source,
            false,
            name,
            "duckdb",
            &folder.path().join("replica.db"),
            "      refresh_mode: snapshot\n      refresh_check_interval: 1h\n      snapshots: bootstrap_only\n",
        ),
    )
    .await;
    let waiting = format!("dataset '{name}' is waiting for its first snapshot");
    eventually("the replica waits for its first snapshot", || async {
        replica.log().iter().any(|line| line.contains(&waiting))
    })
    .await;
    let serves = |id: String| {
        let replica = &replica;
        async move {
            let status = replica.dataset_status(name).await;
            status["snapshot"]["id"].as_str() == Some(id.as_str())
        }
    };

    let writer = start_writer(&place, &source, name, "duckdb", folder.path()).await;
    eventually("the first snapshot", || async {
        place.current_id(name).await.is_some()
    })
    .await;
    let first = place.current_id(name).await.unwrap();
    eventually("the replica restores it on the notification", || {
        serves(first.clone())
    })
    .await;
    assert_eq!(count(&replica, name).await, 100);

    source
        .execute("INSERT INTO {schema}.t SELECT g, 'v' || g FROM generate_series(101, 150) g")
        .await;
    writer.refresh(name).await;
    eventually("a newer snapshot", || async {
        place.current_id(name).await.is_some_and(|id| id != first)
    })
    .await;
    let second = place.current_id(name).await.unwrap();
    eventually("the replica follows it on the notification", || {
        serves(second.clone())
    })
    .await;
    assert_eq!(count(&replica, name).await, 150);

    // An object outside the location: an error, and the message stays.
    place
        .location
        .store
        .put(
            &object_store::path::Path::from("elsewhere/readme.txt"),
            PutPayload::from_static(b"not a snapshot"),
        )
        .await
        .unwrap();
    eventually("the outside notification is reported", || async {
        replica.log().iter().any(|line| {
            line.contains("is not for a snapshot location")
                && line.contains(&format!("s3://{}/elsewhere/readme.txt", bucket.name))
        })
    })
    .await;
    eventually(
        "handled notifications deleted, the outside one kept",
        || async { bucket.queue_messages(&queue).await == 1 },
    )
    .await;
    assert_eq!(count(&replica, name).await, 150);
}

/// A queue that cannot be reached is a warning (datasets keep checking
/// every refresh_check_interval), and a queue with no `refresh_mode:
/// snapshot` dataset to reload is not read, which a warning says.
#[tokio::test]
async fn an_unreachable_or_unused_queue_is_logged() {
    let bucket = S3Bucket::create("queueless").await;
    let place = Place::s3(&bucket);
    // Nothing listens on port 1.
    let queue = "http://127.0.0.1:1/123456789012/unreachable";
    let block = place.block.replace(
        "allow_http: true }",
        &format!("allow_http: true, s3_queue_url: '{queue}' }}"),
    );
    let source = SourceSchema::create("queueless").await;
    let folder = tempfile::tempdir().unwrap();
    let name = "queueless";
    let _replica = Server::start_with_config(&config(
        &block,
        &entry(
            &source,
            false,
            name,
            "duckdb",
            &folder.path().join("replica.db"),
            "      refresh_mode: snapshot\n      snapshots: bootstrap_only\n",
        ),
    ))
    .await;
    eventually("the outage is reported", || async {
        logs().iter().any(|line| {
            line.contains("WARN")
                && line.contains(&format!(
                    "cannot receive snapshot notifications from {queue}"
                ))
        })
    })
    .await;

    // The same queue on a process whose datasets do not follow snapshots.
    let csv = folder.path().join("t.csv");
    std::fs::write(&csv, "id\n1\n").unwrap();
    let unused = "http://127.0.0.1:1/123456789012/unused";
    let _writer = Server::start_with_config(&config(
        &block.replace(queue, unused),
        &format!("  - from: file:{}\n    name: queue_unused\n", csv.display()),
    ))
    .await;
    eventually("the unused queue is reported", || async {
        logs().iter().any(|line| {
            line.contains(&format!(
                "snapshots.params.s3_queue_url is set but no dataset uses refresh_mode: snapshot; {unused} is not read"
            ))
        })
    })
    .await;
}
