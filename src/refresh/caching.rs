//! `refresh_mode: caching`: nothing is loaded ahead of the queries; the
//! dataset is Ready once its source answers, and queries fill its cache
//! ([`crate::query::caching`]). This loop keeps the cache: at each
//! `refresh_check_interval` (or cron time) it fetches again the keys that
//! queries read since the last check, so keys in use stay fresh; retention
//! drops keys fetched longer than `retention_period` ago (never rows just
//! fetched); an on-demand refresh drops every key, so the next queries fetch
//! from the source.

use std::sync::Arc;

use chrono::Utc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use super::{retry, schedule};
use crate::config::ZeroResults;
use crate::dataset::Dataset;
use crate::metrics;
use crate::source::Source;

pub async fn run(dataset: Arc<Dataset>, shutdown: CancellationToken) {
    let name = dataset.name();
    let Some(cache) = dataset.cache.clone() else {
        return;
    };
    let acceleration = &dataset.config.acceleration;
    if acceleration.on_zero_results == ZeroResults::UseSource {
        warn!(dataset = %name, "on_zero_results is ignored when refresh_mode: caching is set: a cache miss always queries the source. Remove on_zero_results from dataset '{name}' to silence this warning");
    }
    if acceleration.retention.sql.is_some() {
        warn!(dataset = %name, "retention_sql does not apply to refresh_mode: caching: retention drops the cached keys fetched more than retention_period ago");
    }
    let mut attempts = 0;
    loop {
        match Source::connect(&dataset.config).await {
            Ok(source) => {
                dataset.source_reached(source.federated());
                dataset.refresh_succeeded(Utc::now(), None);
                info!(dataset = %name, "the source answers; queries fill the cache (refresh_mode: caching)");
                break;
            }
            Err(error) => {
                attempts += 1;
                metrics::refresh_failed(&name, error.reason());
                dataset.refresh_failed(error.to_string());
                let wait = retry::delay(attempts);
                warn!(dataset = %name, retry_in_ms = wait.as_millis() as u64, "cannot reach the source of a caching dataset: {error}");
                tokio::select! {
                    _ = shutdown.cancelled() => {
                        dataset.shutting_down();
                        return;
                    }
                    _ = tokio::time::sleep(wait) => {}
                }
            }
        }
    }
    let retention = acceleration
        .retention
        .period
        .filter(|_| acceleration.retention.check_enabled)
        .zip(acceleration.retention.check_interval);
    let mut retention_check = tokio::time::interval(
        retention.map_or(std::time::Duration::from_secs(3600), |(_, every)| every),
    );
    let mut checked = Instant::now();
    loop {
        let due = schedule::next_due(
            acceleration.schedule.as_ref(),
            acceleration.jitter,
            Utc::now(),
            &mut rand::rng(),
        );
        dataset.set_next_refresh(due);
        let wake = async {
            match due {
                Some(at) => tokio::time::sleep_until(schedule::instant_of(at)).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = wake => {
                let since = std::mem::replace(&mut checked, Instant::now());
                let fetched = cache.revalidate_used_since(since).await;
                dataset.refresh_succeeded(Utc::now(), None);
                info!(dataset = %name, keys = fetched, "fetched again the cached keys queries read since the last check");
            }
            _ = retention_check.tick(), if retention.is_some() => {
                let (period, _) = retention.expect("guarded");
                let evicted = cache.evict_fetched_before(period);
                info!(dataset = %name, evicted, "[retention] Dataset '{name}': dropped {evicted} cached keys fetched more than the retention period ago");
            }
            _ = dataset.refresh_requested() => {
                cache.clear();
                dataset.refresh_succeeded(Utc::now(), None);
                info!(dataset = %name, "on-demand refresh: dropped every cached key; the next queries fetch from the source");
            }
        }
    }
    dataset.shutting_down();
}
