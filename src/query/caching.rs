//! `refresh_mode: caching`: the dataset keeps, in memory, the rows each
//! query's filters fetched from the source, keyed by those filters. A query
//! whose filters were fetched within `caching_ttl` is answered from memory;
//! a miss fetches from the source, keeps the rows with their fetch time, and
//! answers with them. Past the TTL, `caching_stale_while_revalidate_ttl`
//! answers with the old rows while they are fetched again in the background,
//! and `caching_stale_if_error` answers with them when the source fails.
//! Keys are bounded by count and bytes, the least recently used going first.
//!
//! The lookup happens when the plan runs, not when it is made, so a prepared
//! statement executed again sees the cache as it is then.

use std::collections::HashMap;
use std::fmt;
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::datasource::TableType;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties, collect,
};
use futures::{StreamExt, TryStreamExt};
use tokio::time::Instant;
use tracing::{debug, warn};

use super::zero_results::{plan, unqualified};
use crate::config::Caching;
use crate::metrics;

/// How long a fetch may take when expired rows can answer instead
/// (`caching_stale_if_error`).
const STALE_IF_ERROR_WAIT: Duration = Duration::from_secs(5);

/// The rows one key fetched.
#[derive(Clone)]
struct Entry {
    batches: Arc<Vec<RecordBatch>>,
    bytes: u64,
    fetched: Instant,
    fetched_at: DateTime<Utc>,
    /// When a query last read it.
    used: Instant,
    /// How to fetch it again (the source's plan with the key's filters),
    /// and the context of the query that fetched it.
    fetch: Arc<dyn ExecutionPlan>,
    context: Arc<TaskContext>,
}

struct Entries {
    lru: lru::LruCache<String, Entry>,
    bytes: u64,
}

/// The cache of one dataset.
pub struct Cache {
    dataset: String,
    settings: Caching,
    entries: Mutex<Entries>,
    /// One fetch per key at a time: a query that misses while another
    /// fetches the same key waits for that fetch.
    fetching: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl fmt::Debug for Cache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cache")
            .field("dataset", &self.dataset)
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// What a cache lookup found, for the metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Hit,
    Miss,
    /// Served after the TTL while fetched again in the background.
    Stale,
    /// Served after the TTL because the source failed.
    StaleIfError,
}

impl Outcome {
    fn label(self) -> &'static str {
        match self {
            Outcome::Hit => "hit",
            Outcome::Miss => "miss",
            Outcome::Stale => "stale",
            Outcome::StaleIfError => "stale_if_error",
        }
    }
}

/// The fetch lock of one key. It leaves the cache's map when the last query
/// holding or awaiting it is done, so the map holds only keys being fetched.
struct Flight<'a> {
    cache: &'a Cache,
    key: &'a str,
    lock: Arc<tokio::sync::Mutex<()>>,
}

impl Drop for Flight<'_> {
    fn drop(&mut self) {
        let mut fetching = self.cache.fetching.lock().expect("fetch lock");
        // The map's reference and this one: nobody else waits.
        if Arc::strong_count(&self.lock) <= 2 {
            fetching.remove(self.key);
        }
    }
}

/// How a cached entry of some age may answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Freshness {
    /// Within the TTL: answers.
    Fresh,
    /// Past the TTL, within the stale-while-revalidate window: answers while
    /// it is fetched again.
    Stale,
    /// Fetched again before answering.
    Expired,
}

fn freshness(age: Duration, settings: &Caching) -> Freshness {
    if age <= settings.ttl {
        Freshness::Fresh
    } else if age <= settings.ttl + settings.stale_while_revalidate {
        Freshness::Stale
    } else {
        Freshness::Expired
    }
}

/// What the cache holds, for status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Held {
    pub keys: usize,
    pub rows: usize,
    pub bytes: u64,
}

impl Cache {
    pub fn new(dataset: &str, settings: Caching) -> Cache {
        let capacity = NonZeroUsize::new(settings.max_keys).unwrap_or(NonZeroUsize::MIN);
        Cache {
            dataset: dataset.to_owned(),
            settings,
            entries: Mutex::new(Entries {
                lru: lru::LruCache::new(capacity),
                bytes: 0,
            }),
            fetching: Mutex::new(HashMap::new()),
        }
    }

    pub fn held(&self) -> Held {
        let entries = self.entries.lock().expect("cache lock");
        Held {
            keys: entries.lru.len(),
            rows: entries
                .lru
                .iter()
                .map(|(_, e)| e.batches.iter().map(RecordBatch::num_rows).sum::<usize>())
                .sum(),
            bytes: entries.bytes,
        }
    }

    /// The entry of `key`, marked used now.
    fn get(&self, key: &str) -> Option<Entry> {
        let mut entries = self.entries.lock().expect("cache lock");
        let entry = entries.lru.get_mut(key)?;
        entry.used = Instant::now();
        Some(entry.clone())
    }

    /// Keeps `entry` for `key`, evicting the least recently used keys
    /// beyond the bounds; an entry larger than the whole cache is served but
    /// not kept.
    fn put(&self, key: String, entry: Entry) {
        let mut entries = self.entries.lock().expect("cache lock");
        if let Some(old) = entries.lru.pop(&key) {
            entries.bytes -= old.bytes;
        }
        if entry.bytes > self.settings.max_bytes {
            debug!(dataset = %self.dataset, key, bytes = entry.bytes, "the rows of this key are larger than caching_max_size: served, not kept");
            self.report(&entries);
            return;
        }
        entries.bytes += entry.bytes;
        if let Some((_, evicted)) = entries.lru.push(key, entry) {
            entries.bytes -= evicted.bytes;
        }
        while entries.bytes > self.settings.max_bytes {
            match entries.lru.pop_lru() {
                Some((_, evicted)) => entries.bytes -= evicted.bytes,
                None => break,
            }
        }
        self.report(&entries);
    }

    fn report(&self, entries: &Entries) {
        metrics::caching_held(&self.dataset, entries.lru.len(), entries.bytes);
    }

    /// Drops every key (an on-demand refresh): the next queries fetch again.
    pub fn clear(&self) {
        let mut entries = self.entries.lock().expect("cache lock");
        entries.lru.clear();
        entries.bytes = 0;
        self.report(&entries);
    }

    /// Drops the keys fetched longer than `period` ago (retention).
    pub fn evict_fetched_before(&self, period: Duration) -> usize {
        let mut entries = self.entries.lock().expect("cache lock");
        let now = Instant::now();
        let old: Vec<String> = entries
            .lru
            .iter()
            .filter(|(_, e)| now.duration_since(e.fetched) >= period)
            .map(|(key, _)| key.clone())
            .collect();
        for key in &old {
            if let Some(entry) = entries.lru.pop(key) {
                entries.bytes -= entry.bytes;
            }
        }
        self.report(&entries);
        old.len()
    }

    /// Fetches again the keys queries read since `since` (the refresh
    /// check); a key that fails keeps its rows.
    pub async fn revalidate_used_since(self: &Arc<Self>, since: Instant) -> usize {
        let used: Vec<(String, Entry)> = {
            let entries = self.entries.lock().expect("cache lock");
            entries
                .lru
                .iter()
                .filter(|(_, e)| e.used >= since)
                .map(|(key, e)| (key.clone(), e.clone()))
                .collect()
        };
        let mut fetched = 0;
        for (key, entry) in used {
            if self.refetch(key, entry).await.is_ok() {
                fetched += 1;
            }
        }
        fetched
    }

    /// The lock of `key`'s fetch, shared by the queries that wait for it.
    fn flight<'a>(&'a self, key: &'a str) -> Flight<'a> {
        let mut fetching = self.fetching.lock().expect("fetch lock");
        Flight {
            cache: self,
            key,
            lock: Arc::clone(fetching.entry(key.to_owned()).or_default()),
        }
    }

    fn in_flight(&self, key: &str) -> bool {
        self.fetching.lock().expect("fetch lock").contains_key(key)
    }

    /// Fetches `key` again with the plan and context `entry` was fetched
    /// with, keeping its last use.
    async fn refetch(self: &Arc<Self>, key: String, entry: Entry) -> Result<()> {
        let flight = self.flight(&key);
        let _fetching = flight.lock.lock().await;
        let fresh = self
            .fetch(Arc::clone(&entry.fetch), Arc::clone(&entry.context))
            .await;
        match fresh {
            Ok(mut fresh) => {
                fresh.used = entry.used;
                self.put(key.clone(), fresh);
                Ok(())
            }
            Err(e) => {
                warn!(dataset = %self.dataset, key, "fetching a cached key again failed; its rows stay: {e}");
                Err(e)
            }
        }
    }

    async fn fetch(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        context: Arc<TaskContext>,
    ) -> Result<Entry> {
        let fetched_at = Utc::now();
        let batches = collect(Arc::clone(&plan), Arc::clone(&context)).await?;
        let bytes = batches
            .iter()
            .map(|b| b.get_array_memory_size() as u64)
            .sum();
        let now = Instant::now();
        Ok(Entry {
            batches: Arc::new(batches),
            bytes,
            fetched: now,
            fetched_at,
            used: now,
            fetch: plan,
            context,
        })
    }

    /// The rows of `key`: from memory while fresh, else fetched with `plan`.
    async fn rows(
        self: &Arc<Self>,
        key: &str,
        plan: Arc<dyn ExecutionPlan>,
        context: Arc<TaskContext>,
    ) -> Result<Arc<Vec<RecordBatch>>> {
        let found = self.get(key);
        if let Some(entry) = &found {
            let age = entry.fetched.elapsed();
            if freshness(age, &self.settings) == Freshness::Fresh {
                return Ok(self.served(entry, Outcome::Hit));
            }
            if freshness(age, &self.settings) == Freshness::Stale {
                // One revalidation at a time; a query meanwhile serves the
                // old rows without starting another.
                if !self.in_flight(key) {
                    let (cache, key, entry) = (Arc::clone(self), key.to_owned(), entry.clone());
                    tokio::spawn(async move {
                        let _ = cache.refetch(key, entry).await;
                    });
                }
                return Ok(self.served(entry, Outcome::Stale));
            }
        }
        let flight = self.flight(key);
        let _fetching = flight.lock.lock().await;
        // Another query may have fetched it while this one waited.
        if let Some(entry) = self.get(key)
            && freshness(entry.fetched.elapsed(), &self.settings) == Freshness::Fresh
            && found.as_ref().is_none_or(|old| entry.fetched > old.fetched)
        {
            return Ok(self.served(&entry, Outcome::Hit));
        }
        // With rows to fall back on, the source gets a bounded time: a
        // source that cannot be reached otherwise holds the query for its
        // whole connection timeout before the stale rows answer.
        let fetched = match &found {
            Some(_) if self.settings.stale_if_error => {
                tokio::time::timeout(STALE_IF_ERROR_WAIT, self.fetch(plan, context))
                    .await
                    .unwrap_or_else(|_| {
                        Err(DataFusionError::Execution(format!(
                            "the source did not answer within {}s",
                            STALE_IF_ERROR_WAIT.as_secs()
                        )))
                    })
            }
            _ => self.fetch(plan, context).await,
        };
        match fetched {
            Ok(entry) => {
                let batches = Arc::clone(&entry.batches);
                metrics::caching_request(&self.dataset, Outcome::Miss.label());
                self.put(key.to_owned(), entry);
                Ok(batches)
            }
            Err(error) => match found {
                Some(entry) if self.settings.stale_if_error => {
                    warn!(dataset = %self.dataset, key, fetched_at = %entry.fetched_at, "the source failed; answering with the rows cached before (caching_stale_if_error): {error}");
                    Ok(self.served(&entry, Outcome::StaleIfError))
                }
                _ => Err(error),
            },
        }
    }

    fn served(&self, entry: &Entry, outcome: Outcome) -> Arc<Vec<RecordBatch>> {
        metrics::caching_request(&self.dataset, outcome.label());
        Arc::clone(&entry.batches)
    }
}

/// The cache key of a scan's filters: each filter's text, sorted, so that
/// the same conditions written in another order meet the same key. No
/// filter: the whole table.
fn key_of(filters: &[Expr]) -> Result<String> {
    let mut parts = filters
        .iter()
        .map(|filter| unqualified(filter).map(|f| f.to_string()))
        .collect::<Result<Vec<_>>>()?;
    parts.sort();
    parts.dedup();
    Ok(parts.join(" AND "))
}

/// The table a caching dataset answers queries with.
#[derive(Debug)]
pub struct CachingTable {
    cache: Arc<Cache>,
    source: Arc<dyn TableProvider>,
}

impl CachingTable {
    pub fn new(cache: Arc<Cache>, source: Arc<dyn TableProvider>) -> Self {
        CachingTable { cache, source }
    }
}

#[async_trait]
impl TableProvider for CachingTable {
    fn schema(&self) -> SchemaRef {
        self.source.schema()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    /// Every filter is part of the key and is sent to the source; DataFusion
    /// applies them again to the cached rows, which changes nothing.
    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        Ok(vec![TableProviderFilterPushDown::Inexact; filters.len()])
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        _limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let schema = self.schema();
        let columns: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
        // Every column and no limit: the entry holds all the key's rows.
        let fetch = plan(state, Arc::clone(&self.source), filters, &columns, None).await?;
        let projection: Vec<usize> = match projection {
            Some(indices) => indices.clone(),
            None => (0..schema.fields().len()).collect(),
        };
        Ok(Arc::new(CachingExec::new(
            Arc::clone(&self.cache),
            key_of(filters)?,
            fetch,
            Arc::new(schema.project(&projection)?),
            projection,
        )))
    }
}

/// Answers one scan from the cache, fetching on a miss when it runs.
#[derive(Debug)]
struct CachingExec {
    cache: Arc<Cache>,
    key: String,
    /// The source's plan for the key (every column, no limit).
    fetch: Arc<dyn ExecutionPlan>,
    projection: Vec<usize>,
    properties: Arc<PlanProperties>,
}

impl CachingExec {
    fn new(
        cache: Arc<Cache>,
        key: String,
        fetch: Arc<dyn ExecutionPlan>,
        schema: SchemaRef,
        projection: Vec<usize>,
    ) -> Self {
        let properties = PlanProperties::new(
            EquivalenceProperties::new(schema),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Final,
            Boundedness::Bounded,
        );
        CachingExec {
            cache,
            key,
            fetch,
            projection,
            properties: Arc::new(properties),
        }
    }
}

impl DisplayAs for CachingExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "CachingExec: dataset={}, key=[{}]",
            self.cache.dataset, self.key
        )
    }
}

impl ExecutionPlan for CachingExec {
    fn name(&self) -> &str {
        "CachingExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    /// The fetch plan runs only on a miss, inside `execute`: it is not a
    /// child the optimizer may rewrite or run.
    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        Vec::new()
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if children.is_empty() {
            return Ok(self);
        }
        Err(DataFusionError::Internal(
            "CachingExec has no children".into(),
        ))
    }

    fn execute(
        &self,
        _partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let schema = self.schema();
        let (cache, key, fetch, projection) = (
            Arc::clone(&self.cache),
            self.key.clone(),
            Arc::clone(&self.fetch),
            self.projection.clone(),
        );
        let rows = futures::stream::once(async move {
            let batches = cache.rows(&key, fetch, context).await?;
            let projected = batches
                .iter()
                .map(|batch| batch.project(&projection).map_err(DataFusionError::from))
                .collect::<Vec<_>>();
            Ok::<_, DataFusionError>(futures::stream::iter(projected))
        })
        .try_flatten();
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            schema,
            rows.boxed(),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::Int64Array;
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::datasource::memory::MemorySourceConfig;
    use datafusion::prelude::{col, lit};

    fn batch(values: &[i64]) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, false)]));
        RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from(values.to_vec()))]).unwrap()
    }

    fn source(values: &[i64]) -> Arc<dyn ExecutionPlan> {
        let batch = batch(values);
        MemorySourceConfig::try_new_exec(&[vec![batch.clone()]], batch.schema(), None).unwrap()
    }

    fn values(batches: &[RecordBatch]) -> Vec<i64> {
        batches
            .iter()
            .flat_map(|b| {
                b.column(0)
                    .as_any()
                    .downcast_ref::<Int64Array>()
                    .unwrap()
                    .values()
                    .to_vec()
            })
            .collect()
    }

    fn settings(ttl: u64, stale: u64) -> Caching {
        Caching {
            ttl: Duration::from_secs(ttl),
            stale_while_revalidate: Duration::from_secs(stale),
            ..Caching::default()
        }
    }

    #[test]
    fn the_same_filters_in_another_order_share_a_key() {
        let a = col("a").eq(lit(1));
        let b = col("b").gt(lit("x"));
        assert_eq!(
            key_of(&[a.clone(), b.clone()]).unwrap(),
            key_of(&[b, a.clone()]).unwrap()
        );
        assert_ne!(key_of(&[a]).unwrap(), key_of(&[]).unwrap());
    }

    #[test]
    fn an_entry_is_fresh_then_stale_then_expired() {
        let windowed = settings(30, 60);
        let at = |seconds| freshness(Duration::from_secs(seconds), &windowed);
        assert_eq!(at(0), Freshness::Fresh);
        assert_eq!(at(30), Freshness::Fresh);
        assert_eq!(at(31), Freshness::Stale);
        assert_eq!(at(90), Freshness::Stale);
        assert_eq!(at(91), Freshness::Expired);
        let strict = settings(30, 0);
        assert_eq!(
            freshness(Duration::from_secs(31), &strict),
            Freshness::Expired
        );
    }

    /// A fresh key answers from memory; an expired one is fetched again
    /// with the query's plan.
    #[tokio::test]
    async fn a_fresh_key_answers_from_memory() {
        let cache = Arc::new(Cache::new("t", settings(3600, 0)));
        let context = Arc::new(TaskContext::default());
        let rows = cache
            .rows("k", source(&[1]), Arc::clone(&context))
            .await
            .unwrap();
        assert_eq!(values(&rows), [1]);
        let rows = cache
            .rows("k", source(&[2]), Arc::clone(&context))
            .await
            .unwrap();
        assert_eq!(values(&rows), [1], "fresh: from memory");
        let expiring = Arc::new(Cache::new(
            "t",
            Caching {
                ttl: Duration::ZERO,
                ..settings(0, 0)
            },
        ));
        expiring
            .rows("k", source(&[1]), Arc::clone(&context))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(2)).await;
        let rows = expiring.rows("k", source(&[2]), context).await.unwrap();
        assert_eq!(values(&rows), [2], "expired: fetched before answering");
    }

    #[tokio::test]
    async fn keys_beyond_the_bounds_go_least_recently_used_first() {
        let cache = Arc::new(Cache::new(
            "t",
            Caching {
                max_keys: 2,
                ..settings(30, 0)
            },
        ));
        let context = Arc::new(TaskContext::default());
        for key in ["a", "b"] {
            cache
                .rows(key, source(&[1]), Arc::clone(&context))
                .await
                .unwrap();
        }
        // "a" is used again, so "b" is the least recently used.
        cache
            .rows("a", source(&[1]), Arc::clone(&context))
            .await
            .unwrap();
        cache
            .rows("c", source(&[1]), Arc::clone(&context))
            .await
            .unwrap();
        assert!(cache.get("a").is_some() && cache.get("c").is_some());
        assert!(cache.get("b").is_none());
        assert_eq!(cache.held().keys, 2);
        assert!(
            cache.fetching.lock().unwrap().is_empty(),
            "no fetch lock is left behind"
        );
        assert_eq!(cache.evict_fetched_before(Duration::from_secs(3600)), 0);
        assert_eq!(cache.evict_fetched_before(Duration::ZERO), 2);
        assert_eq!(cache.held().bytes, 0);
    }
}
