//! Reloading on S3 event notifications: with `snapshots.params.s3_queue_url`,
//! the `refresh_mode: snapshot` datasets of this process reload as soon as a
//! writer rewrites metadata.json, instead of up to one
//! `refresh_check_interval` later.
//!
//! The queue is read by long polling. Each batch of notifications leads to
//! at most one read of each location's metadata.json, and only the datasets
//! whose current snapshot changed are handed that read (the same id, schema
//! and checksum checks as a poll follow). Notifications for snapshot files
//! and for removed objects are deleted without a reload; one for an object
//! outside every watched location is logged as an error and left on the
//! queue.
//!
//! The SQS client is written here, on the HTTP client and the SigV4 signer
//! of the `object_store` crate the locations already use: two calls
//! (ReceiveMessage, DeleteMessageBatch) of the JSON protocol do not justify
//! the AWS SDK's dependency tree and its second TLS stack.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use object_store::aws::{AwsAuthorizer, AwsCredentialProvider};
use object_store::client::HttpRequest;
use percent_encoding::percent_decode_str;
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

use crate::config::{QueueUrl, RefreshMode, Secret, SnapshotStore, SourceParams, parse_queue_url};
use crate::dataset::Dataset;
use crate::metrics;
use crate::refresh::retry;
use crate::snapshot::location::{Location, s3_builder};
use crate::snapshot::metadata::{self, METADATA, Read};
use crate::snapshot::{Setup, restore};

/// How long one ReceiveMessage waits for a notification (the SQS maximum).
const LONG_POLL: Duration = Duration::from_secs(20);
/// An outage of the queue this long is logged as an error.
const OUTAGE_ERROR_AFTER: Duration = Duration::from_secs(300);
/// The longest wait between attempts to reach an unreachable queue.
const RETRY_CAP: Duration = Duration::from_secs(30);

/// The newest metadata.json read on a notification, handed to a dataset
/// whose current snapshot changed.
pub type Notified = watch::Receiver<Option<Arc<Read>>>;

/// What one object notification is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectEvent {
    pub bucket: String,
    /// The object key, decoded.
    pub key: String,
    /// An ObjectCreated event (else removal, restore, tagging…).
    pub created: bool,
}

/// The object events in one message body: an S3 event notification, the
/// same wrapped by SNS (the fan-out the seed recommends for several
/// readers), or S3's test event (no events). `Err` for anything else.
pub fn object_events(body: &str) -> Result<Vec<ObjectEvent>, String> {
    let value: Value =
        serde_json::from_str(body).map_err(|e| format!("not an S3 event notification: {e}"))?;
    if value.get("Type").and_then(Value::as_str) == Some("Notification")
        && let Some(inner) = value.get("Message").and_then(Value::as_str)
    {
        return object_events(inner);
    }
    if value.get("Event").and_then(Value::as_str) == Some("s3:TestEvent") {
        return Ok(Vec::new());
    }
    let records = value
        .get("Records")
        .and_then(Value::as_array)
        .ok_or("not an S3 event notification: no Records")?;
    records
        .iter()
        .map(|record| {
            let text = |pointer: &str| record.pointer(pointer).and_then(Value::as_str);
            let (Some(event), Some(bucket), Some(key)) = (
                text("/eventName"),
                text("/s3/bucket/name"),
                text("/s3/object/key"),
            ) else {
                return Err("an S3 event record without eventName, bucket or key".to_owned());
            };
            // Keys arrive URL-encoded, with '+' for a space.
            let key = percent_decode_str(&key.replace('+', " "))
                .decode_utf8_lossy()
                .into_owned();
            Ok(ObjectEvent {
                bucket: bucket.to_owned(),
                key,
                created: event.starts_with("ObjectCreated"),
            })
        })
        .collect()
}

/// A dataset that reloads on notifications.
pub struct Watch {
    pub dataset: Arc<Dataset>,
    pub location: Location,
    pub notify: watch::Sender<Option<Arc<Read>>>,
}

/// What a notification asks for.
#[derive(Debug, PartialEq, Eq)]
enum Verdict {
    /// metadata.json of the location with this URL was rewritten.
    Reload(String),
    /// A snapshot file, a removal or a test event: deleted, no reload.
    Ignore,
    /// Not about a watched location: logged and left on the queue.
    Outside(String),
}

/// Classifies one message against the watched locations, given as
/// `(url, bucket, prefix)` with the prefix free of slashes at its ends.
fn classify(body: &str, locations: &[(String, String, String)]) -> Vec<Verdict> {
    let events = match object_events(body) {
        Ok(events) => events,
        Err(message) => return vec![Verdict::Outside(message)],
    };
    if events.is_empty() {
        return vec![Verdict::Ignore];
    }
    events
        .into_iter()
        .map(|event| {
            let location = locations.iter().find(|(_, bucket, prefix)| {
                *bucket == event.bucket
                    && (prefix.is_empty()
                        || event
                            .key
                            .strip_prefix(prefix.as_str())
                            .is_some_and(|rest| rest.starts_with('/')))
            });
            match location {
                None => Verdict::Outside(format!(
                    "s3://{}/{} is outside every snapshot location this process follows",
                    event.bucket, event.key
                )),
                Some((url, _, prefix)) => {
                    let metadata_key = if prefix.is_empty() {
                        METADATA.to_owned()
                    } else {
                        format!("{prefix}/{METADATA}")
                    };
                    if event.created && event.key == metadata_key {
                        Verdict::Reload(url.clone())
                    } else {
                        Verdict::Ignore
                    }
                }
            }
        })
        .collect()
}

/// The log line an outage of the queue calls for.
#[derive(Debug, PartialEq, Eq)]
enum OutageLog {
    Started,
    Lasting,
    Recovered(Duration),
}

/// Tracks an outage of the queue: a warning when it starts, an error once
/// it has lasted five minutes, an info message when it ends.
#[derive(Debug, Default)]
struct Outage {
    since: Option<Instant>,
    escalated: bool,
}

impl Outage {
    fn failed(&mut self, now: Instant) -> Option<OutageLog> {
        match self.since {
            None => {
                self.since = Some(now);
                self.escalated = false;
                Some(OutageLog::Started)
            }
            Some(since) if !self.escalated && now.duration_since(since) >= OUTAGE_ERROR_AFTER => {
                self.escalated = true;
                Some(OutageLog::Lasting)
            }
            Some(_) => None,
        }
    }

    fn succeeded(&mut self, now: Instant) -> Option<OutageLog> {
        let since = self.since.take()?;
        Some(OutageLog::Recovered(now.duration_since(since)))
    }

    fn log(&self, entry: OutageLog, url: &str, cause: &str) {
        match entry {
            OutageLog::Started => warn!(
                "cannot receive snapshot notifications from {url}: {cause}; datasets reload every refresh_check_interval until it recovers"
            ),
            OutageLog::Lasting => error!(
                "snapshot notifications from {url} have failed for more than {} minutes: {cause}; datasets reload every refresh_check_interval",
                OUTAGE_ERROR_AFTER.as_secs() / 60
            ),
            OutageLog::Recovered(lasted) => info!(
                "snapshot notifications from {url} are received again after {}s",
                lasted.as_secs()
            ),
        }
    }
}

/// A message received from the queue.
#[derive(Debug)]
struct Message {
    body: String,
    receipt: String,
}

/// The two calls of SQS that reloading needs.
pub struct Sqs {
    http: reqwest::Client,
    queue: QueueUrl,
    region: String,
    credentials: AwsCredentialProvider,
}

impl Sqs {
    /// A client for `queue` with the credentials of the snapshot location
    /// (`s3_key`/`s3_secret` when both are set, otherwise the default AWS
    /// chain) and the region of the queue URL (else `s3_region`, else the
    /// environment's, else us-east-1).
    pub fn new(queue: QueueUrl, params: &BTreeMap<String, Secret>) -> Result<Sqs, String> {
        let region = queue
            .region
            .clone()
            .or_else(|| params.get("s3_region").map(|s| s.expose().to_owned()))
            .or_else(|| std::env::var("AWS_REGION").ok())
            .or_else(|| std::env::var("AWS_DEFAULT_REGION").ok())
            .unwrap_or_else(|| "us-east-1".to_owned());
        // The builder resolves credentials exactly as the location does; the
        // bucket name is a placeholder, no S3 request is made with it.
        let store = s3_builder("pgaccel-queue", params)
            .with_region(&region)
            .build()
            .map_err(|e| format!("credentials for {}: {e}", queue.url))?;
        let http = reqwest::Client::builder()
            .timeout(LONG_POLL + Duration::from_secs(10))
            .build()
            .map_err(|e| format!("HTTP client for {}: {e}", queue.url))?;
        Ok(Sqs {
            http,
            queue,
            region,
            credentials: Arc::clone(store.credentials()),
        })
    }

    /// One call of the JSON protocol.
    async fn call(&self, action: &str, mut body: Value) -> Result<Value, String> {
        body["QueueUrl"] = Value::from(self.queue.url.clone());
        let payload = bytes::Bytes::from(body.to_string());
        let mut request: HttpRequest = http::Request::post(&self.queue.endpoint)
            .header("content-type", "application/x-amz-json-1.0")
            .header("x-amz-target", format!("AmazonSQS.{action}"))
            .body(payload.clone().into())
            .map_err(|e| e.to_string())?;
        let credential = self
            .credentials
            .get_credential()
            .await
            .map_err(|e| format!("no AWS credentials: {e}"))?;
        AwsAuthorizer::new(&credential, "sqs", &self.region).authorize(&mut request, None);
        let (parts, _) = request.into_parts();
        let request = reqwest::Request::try_from(http::Request::from_parts(parts, payload))
            .map_err(|e| e.to_string())?;
        let response = self
            .http
            .execute(request)
            .await
            .map_err(|e| format!("{action}: {e}"))?;
        let status = response.status();
        let text = response
            .text()
            .await
            .map_err(|e| format!("{action}: {e}"))?;
        if !status.is_success() {
            return Err(format!("{action} answered {status}: {}", text.trim()));
        }
        if text.trim().is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_str(&text).map_err(|e| format!("{action} answered unreadable JSON: {e}"))
    }

    /// Waits up to `wait` for up to ten messages.
    async fn receive(&self, wait: Duration) -> Result<Vec<Message>, String> {
        let answer = self
            .call(
                "ReceiveMessage",
                json!({ "MaxNumberOfMessages": 10, "WaitTimeSeconds": wait.as_secs() }),
            )
            .await?;
        let messages = answer.get("Messages").and_then(Value::as_array);
        Ok(messages
            .into_iter()
            .flatten()
            .filter_map(|message| {
                Some(Message {
                    body: message.get("Body")?.as_str()?.to_owned(),
                    receipt: message.get("ReceiptHandle")?.as_str()?.to_owned(),
                })
            })
            .collect())
    }

    /// Deletes the messages with these receipt handles (at most ten).
    async fn delete(&self, receipts: &[String]) -> Result<(), String> {
        if receipts.is_empty() {
            return Ok(());
        }
        let entries: Vec<Value> = receipts
            .iter()
            .enumerate()
            .map(|(id, receipt)| json!({ "Id": id.to_string(), "ReceiptHandle": receipt }))
            .collect();
        let answer = self
            .call("DeleteMessageBatch", json!({ "Entries": entries }))
            .await?;
        match answer.get("Failed").and_then(Value::as_array) {
            Some(failed) if !failed.is_empty() => Err(format!(
                "DeleteMessageBatch left {} messages: {}",
                failed.len(),
                Value::from(failed.clone())
            )),
            _ => Ok(()),
        }
    }
}

/// The queue of `store` and the datasets that reload on it: every
/// `refresh_mode: snapshot` dataset of `datasets` with a snapshot setup in
/// `setups`, which is given the receiving end of its notifications.
/// `Ok(None)` without a queue, or when no dataset follows snapshots (that
/// is logged: the queue is not read).
pub fn plan(
    store: Option<&SnapshotStore>,
    datasets: &[Arc<Dataset>],
    setups: &mut HashMap<String, Setup>,
) -> Result<Option<(Sqs, Vec<Watch>)>, String> {
    let Some(store) = store.filter(|store| store.enabled) else {
        return Ok(None);
    };
    let Some(url) = store.params.get("s3_queue_url") else {
        return Ok(None);
    };
    let queue = parse_queue_url(url.expose())?;
    let mut watches = Vec::new();
    for dataset in datasets {
        let config = &dataset.config;
        if config.acceleration.refresh_mode != RefreshMode::Snapshot
            || matches!(config.params, SourceParams::Snapshot { .. })
        {
            continue;
        }
        let Some(setup) = setups.get_mut(&dataset.name()) else {
            continue;
        };
        let (notify, notified) = watch::channel(None);
        setup.notified = Some(notified);
        watches.push(Watch {
            dataset: Arc::clone(dataset),
            location: setup.location.clone(),
            notify,
        });
    }
    if watches.is_empty() {
        warn!(
            "snapshots.params.s3_queue_url is set but no dataset uses refresh_mode: snapshot; {} is not read",
            queue.url
        );
        return Ok(None);
    }
    Ok(Some((Sqs::new(queue, &store.params)?, watches)))
}

/// Reads the queue until `shutdown`, reloading the watched datasets.
pub async fn listen(sqs: Sqs, watches: Vec<Watch>, shutdown: CancellationToken) {
    let url = sqs.queue.url.clone();
    let mut locations: Vec<(String, String, String)> = Vec::new();
    for watch in &watches {
        let url = watch.location.url.clone();
        let Some(rest) = url.strip_prefix("s3://") else {
            continue;
        };
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if !locations.iter().any(|(known, ..)| *known == url) {
            let prefix = prefix.trim_matches('/').to_owned();
            locations.push((url.clone(), bucket.to_owned(), prefix));
        }
    }
    info!(queue = %url, datasets = watches.len(), "reloading snapshots on the notifications of {url}");
    let mut outage = Outage::default();
    let mut failures = 0u32;
    loop {
        let received = tokio::select! {
            _ = shutdown.cancelled() => return,
            received = sqs.receive(LONG_POLL) => received,
        };
        let messages = match received {
            Ok(messages) => {
                failures = 0;
                if let Some(entry) = outage.succeeded(Instant::now()) {
                    outage.log(entry, &url, "");
                }
                messages
            }
            Err(cause) => {
                failures += 1;
                if let Some(entry) = outage.failed(Instant::now()) {
                    outage.log(entry, &url, &cause);
                }
                let wait = retry::delay(failures).min(RETRY_CAP);
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    _ = tokio::time::sleep(wait) => continue,
                }
            }
        };
        let mut reload = BTreeSet::new();
        let mut done = Vec::new();
        for message in messages {
            let verdicts = classify(&message.body, &locations);
            let outside: Vec<&String> = verdicts
                .iter()
                .filter_map(|verdict| match verdict {
                    Verdict::Outside(why) => Some(why),
                    _ => None,
                })
                .collect();
            if !outside.is_empty() {
                metrics::snapshot_notification("outside");
                for why in outside {
                    error!(queue = %url, "a notification on {url} is not for a snapshot location: {why}; it is left on the queue");
                }
                continue;
            }
            let reloads = verdicts.into_iter().filter_map(|verdict| match verdict {
                Verdict::Reload(location) => Some(location),
                _ => None,
            });
            let before = reload.len();
            reload.extend(reloads);
            metrics::snapshot_notification(if reload.len() > before {
                "reload"
            } else {
                "ignored"
            });
            done.push(message.receipt);
        }
        for location in reload {
            hand_over(&location, &watches).await;
        }
        if let Err(cause) = sqs.delete(&done).await {
            warn!(queue = %url, "cannot delete {} handled notifications from {url}: {cause}", done.len());
        }
    }
}

/// Reads the metadata.json of the location at `url` once and hands it to
/// every dataset there whose current snapshot is not the one it serves.
async fn hand_over(url: &str, watches: &[Watch]) {
    let mut here = watches.iter().filter(|watch| watch.location.url == url);
    let Some(first) = here.next() else { return };
    let read = match metadata::read(&first.location, None).await {
        Ok(read) => Arc::new(read),
        Err(e) => {
            warn!(
                "a notification for {url} could not be followed: {e}; datasets reload at their next check"
            );
            return;
        }
    };
    for watch in std::iter::once(first).chain(here) {
        let name = watch.dataset.name();
        let current = restore::of_dataset(&read, &name)
            .and_then(|snapshots| snapshots.current())
            .map(|entry| entry.id.clone());
        if current.is_some() && current != watch.dataset.snapshot_id() {
            watch.notify.send_replace(Some(Arc::clone(&read)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s3_event(event: &str, bucket: &str, key: &str) -> String {
        json!({ "Records": [{
            "eventVersion": "2.1", "eventSource": "aws:s3", "eventName": event,
            "s3": { "bucket": { "name": bucket }, "object": { "key": key, "size": 1 } }
        }]})
        .to_string()
    }

    #[test]
    fn notifications_are_read_directly_and_through_sns() {
        let direct = s3_event("ObjectCreated:Put", "b", "snap%20shots/metadata+copy.json");
        let events = object_events(&direct).unwrap();
        assert_eq!(
            events,
            vec![ObjectEvent {
                bucket: "b".into(),
                key: "snap shots/metadata copy.json".into(),
                created: true
            }]
        );
        let wrapped = json!({ "Type": "Notification", "Message": direct }).to_string();
        assert_eq!(object_events(&wrapped).unwrap(), events);
        let test = json!({ "Service": "Amazon S3", "Event": "s3:TestEvent" }).to_string();
        assert_eq!(object_events(&test).unwrap(), vec![]);
        assert!(
            object_events("{\"hello\": 1}")
                .unwrap_err()
                .contains("no Records")
        );
    }

    #[test]
    fn only_a_rewritten_metadata_json_reloads() {
        let locations = vec![
            (
                "s3://b/snaps/".to_owned(),
                "b".to_owned(),
                "snaps".to_owned(),
            ),
            ("s3://root/".to_owned(), "root".to_owned(), String::new()),
        ];
        let verdict = |event: &str, bucket: &str, key: &str| {
            classify(&s3_event(event, bucket, key), &locations)
        };
        assert_eq!(
            verdict("ObjectCreated:Put", "b", "snaps/metadata.json"),
            vec![Verdict::Reload("s3://b/snaps/".into())]
        );
        assert_eq!(
            verdict("ObjectCreated:Put", "root", "metadata.json"),
            vec![Verdict::Reload("s3://root/".into())]
        );
        // A snapshot file, a removed metadata.json: no reload.
        assert_eq!(
            verdict(
                "ObjectCreated:CompleteMultipartUpload",
                "b",
                "snaps/month=2026-12/day=2026-12-03/dataset=t/t_20261203T000000Z.duckdb"
            ),
            vec![Verdict::Ignore]
        );
        assert_eq!(
            verdict("ObjectRemoved:Delete", "b", "snaps/metadata.json"),
            vec![Verdict::Ignore]
        );
        // Another prefix, another bucket, a prefix that only starts alike.
        for (bucket, key) in [
            ("b", "other/metadata.json"),
            ("c", "snaps/metadata.json"),
            ("b", "snapshots/metadata.json"),
        ] {
            let verdicts = verdict("ObjectCreated:Put", bucket, key);
            assert!(
                matches!(&verdicts[..], [Verdict::Outside(why)] if why.contains(key)),
                "{bucket}/{key}: {verdicts:?}"
            );
        }
        assert!(matches!(
            &classify("not json", &locations)[..],
            [Verdict::Outside(why)] if why.contains("not an S3 event notification")
        ));
    }

    #[test]
    fn an_outage_warns_then_errors_once_then_recovers() {
        let start = Instant::now();
        let mut outage = Outage::default();
        assert_eq!(outage.succeeded(start), None);
        assert_eq!(outage.failed(start), Some(OutageLog::Started));
        assert_eq!(outage.failed(start + Duration::from_secs(60)), None);
        assert_eq!(
            outage.failed(start + Duration::from_secs(300)),
            Some(OutageLog::Lasting)
        );
        assert_eq!(outage.failed(start + Duration::from_secs(900)), None);
        assert_eq!(
            outage.succeeded(start + Duration::from_secs(901)),
            Some(OutageLog::Recovered(Duration::from_secs(901)))
        );
        assert_eq!(outage.succeeded(start + Duration::from_secs(902)), None);
        // A new outage starts over.
        assert_eq!(
            outage.failed(start + Duration::from_secs(1000)),
            Some(OutageLog::Started)
        );
    }
}
