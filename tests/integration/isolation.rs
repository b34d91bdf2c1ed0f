//! Refresh work runs on the `refresh-worker` threads, apart from queries,
//! unless `runtime.params.dedicated_thread_pool: disabled`.

use crate::support::{Server, SourceSchema, logs};

/// The thread names of the log lines saying a refresh of `dataset` completed.
fn refresh_threads(dataset: &str) -> Vec<String> {
    let field = format!("dataset={dataset} ");
    logs()
        .into_iter()
        .filter(|line| line.contains("refresh completed") && line.contains(&field))
        .collect()
}

#[tokio::test]
async fn refreshes_run_on_the_refresh_worker_threads_unless_disabled() {
    let source = SourceSchema::create("isolation").await;
    source
        .execute("CREATE TABLE {schema}.t (id int PRIMARY KEY); INSERT INTO {schema}.t VALUES (1)")
        .await;
    for (dataset, pool, apart) in [
        ("iso_dedicated", "enabled", true),
        ("iso_shared", "disabled", false),
    ] {
        let yaml = format!(
            "runtime:\n  pg: {{ listen: 127.0.0.1:0 }}\n  http: {{ listen: 127.0.0.1:0 }}\n  params: {{ dedicated_thread_pool: {pool} }}\ndatasets:\n{}",
            source.dataset("t", dataset, "")
        );
        let server = Server::start_with_config(&yaml).await;
        server.wait_ready().await;
        // The line is logged just after the dataset turns ready.
        let mut lines = refresh_threads(dataset);
        for _ in 0..100 {
            if !lines.is_empty() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            lines = refresh_threads(dataset);
        }
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert_eq!(lines[0].contains(" refresh-worker "), apart, "{}", lines[0]);
    }
}
