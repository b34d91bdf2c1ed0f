//! Faults under load: the source cut or restarted in the middle of a
//! refresh, a full disk under a file acceleration, a refresh cancelled while
//! it commits. Clients query all along: none of their queries fails, every
//! answer is one whole version (the old or the new), and what the file keeps
//! is what the source holds.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::support::{
    Endpoint, Process, Relay, Server, SourceSchema, connect, counter, eventually, free_port,
    simple_rows, text_rows,
};

/// Clients querying pgaccel in a loop until stopped.
struct QueryLoad {
    stop: Arc<AtomicBool>,
    tasks: Vec<tokio::task::JoinHandle<Seen>>,
}

/// What the clients of a [`QueryLoad`] saw.
#[derive(Debug, Default)]
struct Seen {
    answered: u64,
    failures: Vec<String>,
    /// Each distinct answer, as its rows' text.
    answers: BTreeSet<String>,
}

impl QueryLoad {
    /// `clients` connections to `server`, each running `sql` again and
    /// again (paced a little, so that the refresh under test gets the CPU).
    async fn start(server: &Endpoint, clients: usize, sql: &str) -> QueryLoad {
        let stop = Arc::new(AtomicBool::new(false));
        let mut tasks = Vec::new();
        for _ in 0..clients {
            let client = server.client().await;
            let (stop, sql) = (Arc::clone(&stop), sql.to_owned());
            tasks.push(tokio::spawn(async move {
                let mut seen = Seen::default();
                while !stop.load(Ordering::SeqCst) {
                    match client.simple_query(&sql).await {
                        Ok(messages) => {
                            seen.answered += 1;
                            seen.answers.insert(format!("{:?}", text_rows(messages)));
                        }
                        Err(e) => seen.failures.push(e.to_string()),
                    }
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                seen
            }));
        }
        QueryLoad { stop, tasks }
    }

    /// Stops the clients and checks what they saw: answers, no failure, and
    /// only the answers `allowed`.
    async fn stop_and_check(self, allowed: &[&str]) {
        self.stop.store(true, Ordering::SeqCst);
        let mut all = Seen::default();
        for task in self.tasks {
            let seen = task.await.unwrap();
            all.answered += seen.answered;
            all.failures.extend(seen.failures);
            all.answers.extend(seen.answers);
        }
        assert!(all.answered > 0, "no query was answered");
        assert!(
            all.failures.is_empty(),
            "failed queries: {:?}",
            all.failures
        );
        let allowed: BTreeSet<String> = allowed.iter().map(|a| (*a).to_owned()).collect();
        assert!(
            all.answers.is_subset(&allowed),
            "answers {:?}, allowed {allowed:?}",
            all.answers
        );
    }
}

/// The answer of `SELECT count(*), min(version), max(version)` as
/// [`Seen::answers`] keeps it.
fn whole(rows: i64, version: i64) -> String {
    format!(
        "{:?}",
        vec![vec![
            Some(rows.to_string()),
            Some(version.to_string()),
            Some(version.to_string()),
        ]]
    )
}

/// Failed refreshes of dataset `name`, all reasons.
async fn refresh_errors(server: &Endpoint, name: &str) -> u64 {
    counter(
        server,
        "dataset_acceleration_refresh_errors",
        name,
        "dataset",
        name,
    )
    .await
}

#[tokio::test]
async fn a_source_cut_mid_refresh_fails_no_query_and_the_refresh_completes_after() {
    let source = SourceSchema::create("fault_cut").await;
    source
        .execute(
            "CREATE TABLE {schema}.t (id int PRIMARY KEY, version int NOT NULL, pad text);
             INSERT INTO {schema}.t SELECT i, 0, 'p' FROM generate_series(1, 1000) AS i",
        )
        .await;
    // The connection that has carried 256 KiB goes silent: the refresh
    // below reads about 800 KiB, the first load about 20 KiB.
    let relay = Relay::start(Some(256 * 1024)).await;
    let server = Server::start(&format!(
        "  - from: postgres:{schema}.t\n    name: cut_mid\n    params: {{ pg_host: 127.0.0.1, pg_port: {port}, pg_db: test, pg_user: postgres, pg_sslmode: disable }}\n    acceleration:\n      refresh_check_interval: 1h\n",
        schema = source.name,
        port = relay.port,
    ))
    .await;
    server.wait_ready().await;
    let load = QueryLoad::start(
        &server,
        2,
        "SELECT count(*), min(version), max(version) FROM cut_mid",
    )
    .await;
    source
        .execute(
            "UPDATE {schema}.t SET version = 1;
             INSERT INTO {schema}.t SELECT i, 1, repeat('p', 200) FROM generate_series(1001, 5000) AS i",
        )
        .await;
    let (status, body) = server
        .post("/v1/datasets/cut_mid/acceleration/refresh")
        .await;
    assert_eq!(status, 201, "{body}");
    eventually("the refresh is stalled mid-read", || async {
        relay.has_stalled()
    })
    .await;
    assert_eq!(
        server.dataset_status("cut_mid").await["refresh_phase"],
        "reading"
    );
    relay.cut();
    eventually("the cut refresh fails", || async {
        refresh_errors(&server, "cut_mid").await >= 1
    })
    .await;
    relay.restore();
    server
        .wait_for_status("cut_mid", |s| s["status"] == "Ready" && s["rows"] == 5000)
        .await;
    load.stop_and_check(&[&whole(1000, 0), &whole(5000, 1)])
        .await;
}

/// A PostgreSQL server of this test's own (the shared one cannot be
/// restarted under the tests running beside this one), in a temporary
/// folder, owned by the `postgres` user as the server requires.
struct PrivatePostgres {
    folder: tempfile::TempDir,
    bin: PathBuf,
    port: u16,
}

impl PrivatePostgres {
    fn start() -> PrivatePostgres {
        let bin = std::fs::read_dir("/usr/lib/postgresql")
            .expect("a PostgreSQL server installed under /usr/lib/postgresql")
            .filter_map(|entry| Some(entry.ok()?.path().join("bin")))
            .find(|bin| bin.join("initdb").exists())
            .expect("initdb under /usr/lib/postgresql/*/bin");
        let folder = tempfile::tempdir().unwrap();
        run(Command::new("chown")
            .arg("postgres:postgres")
            .arg(folder.path()));
        let server = PrivatePostgres {
            folder,
            bin,
            port: free_port(),
        };
        run(server
            .as_postgres("initdb")
            .arg("-D")
            .arg(server.data())
            .args(["-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync"]));
        let options = format!(
            "-p {} -c listen_addresses=127.0.0.1 -k {}",
            server.port,
            server.folder.path().display()
        );
        run(server.pg_ctl().args(["-o", &options, "start"]));
        server
    }

    fn data(&self) -> PathBuf {
        self.folder.path().join("data")
    }

    fn dsn(&self) -> String {
        format!(
            "host=127.0.0.1 port={} user=postgres dbname=postgres",
            self.port
        )
    }

    fn as_postgres(&self, program: &str) -> Command {
        let mut command = Command::new("runuser");
        command
            .args(["-u", "postgres", "--"])
            .arg(self.bin.join(program));
        command
    }

    /// `pg_ctl` on this server. The server logs to a file: one that
    /// inherited the command's output would hold it open, and waiting for
    /// the command would never end.
    fn pg_ctl(&self) -> Command {
        let mut command = self.as_postgres("pg_ctl");
        command
            .arg("-D")
            .arg(self.data())
            .arg("-l")
            .arg(self.folder.path().join("server.log"))
            .args(["-w", "-t", "60"]);
        command
    }

    /// Restarts the server, ending every session at once. `-m immediate`,
    /// as a crash would: a fast shutdown ends sessions one by one, and a
    /// session waiting for a lock could be granted it, as the holder ends,
    /// and finish its statement before its own turn to end.
    fn restart(&self) {
        run(self.pg_ctl().args(["-m", "immediate", "restart"]));
    }
}

impl Drop for PrivatePostgres {
    fn drop(&mut self) {
        let _ = self.pg_ctl().args(["-m", "immediate", "stop"]).output();
    }
}

fn run(command: &mut Command) {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("{command:?}: {e}"));
    assert!(
        output.status.success(),
        "{command:?}: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[tokio::test]
async fn a_postgresql_restart_during_a_refresh_is_retried_while_queries_are_answered() {
    let postgres = Arc::new(
        tokio::task::spawn_blocking(PrivatePostgres::start)
            .await
            .unwrap(),
    );
    let admin = connect(&postgres.dsn()).await;
    admin
        .batch_execute(
            "CREATE TABLE t (id int PRIMARY KEY, version int NOT NULL);
             INSERT INTO t SELECT i, 0 FROM generate_series(1, 1000) AS i",
        )
        .await
        .unwrap();
    let server = Server::start(&format!(
        "  - from: postgres:public.t\n    name: restarted\n    params: {{ pg_host: 127.0.0.1, pg_port: {}, pg_db: postgres, pg_user: postgres, pg_sslmode: disable }}\n    acceleration:\n      refresh_check_interval: 1h\n",
        postgres.port
    ))
    .await;
    server.wait_ready().await;
    let load = QueryLoad::start(
        &server,
        2,
        "SELECT count(*), min(version), max(version) FROM restarted",
    )
    .await;
    admin
        .batch_execute("UPDATE t SET version = 1")
        .await
        .unwrap();
    // The refresh waits for this lock, so the restart lands in its middle.
    let locker = connect(&postgres.dsn()).await;
    locker
        .batch_execute("BEGIN; LOCK TABLE t IN ACCESS EXCLUSIVE MODE")
        .await
        .unwrap();
    let (status, body) = server
        .post("/v1/datasets/restarted/acceleration/refresh")
        .await;
    assert_eq!(status, 201, "{body}");
    eventually("the refresh waits for the table's lock", || async {
        admin
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'",
                &[],
            )
            .await
            .is_ok_and(|row| row.get::<_, i64>(0) > 0)
    })
    .await;
    let restarting = Arc::clone(&postgres);
    tokio::task::spawn_blocking(move || restarting.restart())
        .await
        .unwrap();
    eventually("the refresh is retried and serves version 1", || async {
        simple_rows(&server.client().await, "SELECT min(version) FROM restarted").await[0][0]
            .as_deref()
            == Some("1")
    })
    .await;
    assert!(
        refresh_errors(&server, "restarted").await >= 1,
        "the restart did not fail the refresh in flight"
    );
    load.stop_and_check(&[&whole(1000, 0), &whole(1000, 1)])
        .await;
}

/// A tmpfs of `bytes` mounted at `path` (tests run as root, as CI does),
/// unmounted when dropped.
struct SmallDisk {
    path: PathBuf,
}

impl SmallDisk {
    fn mount(path: &Path, bytes: u64) -> SmallDisk {
        std::fs::create_dir_all(path).unwrap();
        run(Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={bytes}")])
            .arg("tmpfs")
            .arg(path));
        SmallDisk {
            path: path.to_owned(),
        }
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.path).output();
    }
}

#[tokio::test]
async fn a_full_disk_fails_a_file_refresh_and_the_previous_version_is_served_and_kept() {
    for engine in ["duckdb", "sqlite"] {
        let source = SourceSchema::create(&format!("fault_disk_{engine}")).await;
        source
            .execute(
                "CREATE TABLE {schema}.t (id int PRIMARY KEY, pad text NOT NULL);
                 INSERT INTO {schema}.t SELECT i, 'p' FROM generate_series(1, 1000) AS i",
            )
            .await;
        let folder = tempfile::tempdir().unwrap();
        let disk = SmallDisk::mount(&folder.path().join("disk"), 8 * 1024 * 1024);
        let file = disk.path.join(format!("t.{engine}"));
        let datasets = format!(
            "  - from: postgres:{schema}.t\n    name: full_disk\n    params: {{ pg_host: 127.0.0.1, pg_port: 5432, pg_db: test, pg_user: postgres, pg_sslmode: disable }}\n    acceleration:\n      engine: {engine}\n      mode: file\n      params: {{ {engine}_file: '{file}' }}\n      refresh_check_interval: 1h\n      refresh_retry_enabled: false\n",
            schema = source.name,
            file = file.display(),
        );
        let process = Process::start(folder.path(), "", &datasets);
        process.wait_ready().await;
        let sql = "SELECT count(*), min(id), max(id) FROM full_disk";
        let before = simple_rows(&process.client().await, sql).await;
        assert_eq!(before[0][0].as_deref(), Some("1000"), "{engine}");
        // About 40 MB of new rows for an 8 MiB disk.
        source
            .execute(
                "INSERT INTO {schema}.t SELECT i, repeat(md5(i::text), 4) FROM generate_series(1001, 300000) AS i",
            )
            .await;
        let load = QueryLoad::start(&process, 2, sql).await;
        let (status, body) = process
            .post("/v1/datasets/full_disk/acceleration/refresh")
            .await;
        assert_eq!(status, 201, "{body}");
        let failed = process
            .wait_for_status("full_disk", |s| s["status"] == "Error")
            .await;
        let message = failed["error_message"].as_str().unwrap_or_default();
        assert!(
            message.contains("full_disk") && message.contains(&file.display().to_string()),
            "{engine}: the error names the dataset and the file: {failed}"
        );
        load.stop_and_check(&[&format!("{before:?}")]).await;
        // The file still holds the previous version: a restart serves it.
        process.kill();
        let process = Process::start(folder.path(), "", &datasets);
        process.wait_ready().await;
        assert_eq!(
            simple_rows(&process.client().await, sql).await,
            before,
            "{engine}: after a restart"
        );
        process.kill();
    }
}

#[tokio::test]
async fn a_refresh_cancelled_while_it_commits_writes_no_row_twice() {
    let source = SourceSchema::create("fault_commit").await;
    source
        .execute(
            "CREATE TABLE {schema}.e (at timestamptz NOT NULL, v int NOT NULL);
             INSERT INTO {schema}.e SELECT timestamptz '2024-01-01' + i * interval '1 second', i
             FROM generate_series(1, 1000) AS i",
        )
        .await;
    let folder = tempfile::tempdir().unwrap();
    let datasets = format!(
        "  - from: postgres:{schema}.e\n    name: no_twice\n    params: {{ pg_host: 127.0.0.1, pg_port: 5432, pg_db: test, pg_user: postgres, pg_sslmode: disable }}\n    time_column: at\n    acceleration:\n      engine: duckdb\n      mode: file\n      params: {{ duckdb_file: '{file}' }}\n      refresh_mode: append\n      refresh_check_interval: 1h\n",
        schema = source.name,
        file = folder.path().join("e.duckdb").display(),
    );
    let mut process = Process::start(folder.path(), "", &datasets);
    process.wait_ready().await;
    let mut held = 1000u64;
    /// The SQL adding the next 100,000 rows to the `held` at the source.
    fn append(held: &mut u64) -> String {
        let from = *held + 1;
        *held += 100_000;
        format!(
            "INSERT INTO {{schema}}.e SELECT timestamptz '2024-01-01' + i * interval '1 second', i
             FROM generate_series({from}, {held}) AS i"
        )
    }
    // An append (no primary key: a row written twice would stay twice)
    // whose commit an on-demand refresh interrupts; tried until the status
    // is seen in the commit phase.
    let mut interrupted = false;
    for _ in 0..10 {
        source.execute(&append(&mut held)).await;
        let (status, body) = process
            .post("/v1/datasets/no_twice/acceleration/refresh")
            .await;
        assert_eq!(status, 201, "{body}");
        let status = process
            .wait_for_status("no_twice", |s| {
                s["refresh_phase"] == "committing" || (s["status"] == "Ready" && s["rows"] == held)
            })
            .await;
        if status["refresh_phase"] == "committing" {
            let (status, body) = process
                .post("/v1/datasets/no_twice/acceleration/refresh")
                .await;
            assert_eq!(status, 201, "{body}");
            interrupted = true;
        }
        process
            .wait_for_status("no_twice", |s| {
                s["status"] == "Ready" && s["refresh_phase"].is_null() && s["rows"] == held
            })
            .await;
        if interrupted {
            break;
        }
    }
    assert!(interrupted, "no refresh was seen committing");
    // Then a shutdown, as soon as the next append commits.
    source.execute(&append(&mut held)).await;
    let (status, body) = process
        .post("/v1/datasets/no_twice/acceleration/refresh")
        .await;
    assert_eq!(status, 201, "{body}");
    process
        .wait_for_status("no_twice", |s| {
            s["refresh_phase"] == "committing" || (s["status"] == "Ready" && s["rows"] == held)
        })
        .await;
    process.terminate();
    assert!(process.exited().await.success());
    drop(process);
    // The file, read back and caught up, holds each source row once.
    let process = Process::start(folder.path(), "", &datasets);
    process.wait_ready().await;
    process
        .wait_for_status("no_twice", |s| s["status"] == "Ready" && s["rows"] == held)
        .await;
    let sql = "SELECT count(*), count(DISTINCT v), sum(v) FROM {table}";
    assert_eq!(
        simple_rows(&process.client().await, &sql.replace("{table}", "no_twice")).await,
        simple_rows(
            &source.client,
            &sql.replace("{table}", &format!("{}.e", source.name))
        )
        .await
    );
    process.kill();
}
