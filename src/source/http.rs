//! `http://` and `https://` sources: an HTTP API, one request per query.
//! The table has one row per response:
//!
//! | column            | type        |                                        |
//! |-------------------|-------------|----------------------------------------|
//! | `request_path`    | text        | the path asked for, after the `from` URL |
//! | `request_query`   | text        | the query string, without `?`          |
//! | `content`         | text        | the response body                      |
//! | `response_status` | int4        | the HTTP status                        |
//! | `fetched_at`      | timestamptz | when the response came                 |
//!
//! A query chooses the request with `WHERE request_path = '/search' AND
//! request_query = 'q=rust'` (the query string only with
//! `request_query_filters: enabled`); without them it asks for the `from`
//! URL itself. With `refresh_mode: caching` those filters are the cache key,
//! so each request is made once per `caching_ttl`. The body is kept as text:
//! JSON is read with PostgreSQL's JSON operators (`content::json -> 'name'`).
//!
//! The request is made when the plan runs, not when it is made, so a
//! prepared statement asks again at each execution.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::Utc;
use datafusion::arrow::array::{ArrayRef, Int32Array, StringArray, TimestampMicrosecondArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::ScalarValue;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::datasource::TableType;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::{Expr, Operator, TableProviderFilterPushDown};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
};
use datafusion::prelude::SessionContext;

use super::{ReadFilter, Snapshot, SourceError};
use crate::config::HttpParams;

/// How long one request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

pub const REQUEST_PATH: &str = "request_path";
pub const REQUEST_QUERY: &str = "request_query";

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new(REQUEST_PATH, DataType::Utf8, false),
        Field::new(REQUEST_QUERY, DataType::Utf8, false),
        Field::new("content", DataType::Utf8, true),
        Field::new("response_status", DataType::Int32, false),
        Field::new(
            "fetched_at",
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            false,
        ),
    ]))
}

#[derive(Debug)]
pub struct HttpSource {
    dataset: String,
    table: Arc<HttpTable>,
}

impl HttpSource {
    /// Checks the URL; the API is first asked when a query needs it.
    pub fn connect(dataset: String, url: &str, params: &HttpParams) -> Result<Self, SourceError> {
        let base = reqwest::Url::parse(url).map_err(|e| SourceError::Schema {
            dataset: dataset.clone(),
            message: format!("'{url}' is not a URL: {e}"),
        })?;
        let client = reqwest::Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .build()
            .map_err(|e| SourceError::Connect {
                dataset: dataset.clone(),
                message: e.to_string(),
            })?;
        let table = Arc::new(HttpTable {
            dataset: dataset.clone(),
            base,
            client,
            params: params.clone(),
        });
        Ok(HttpSource { dataset, table })
    }

    pub fn federated(&self) -> Arc<dyn TableProvider> {
        Arc::clone(&self.table) as Arc<dyn TableProvider>
    }

    /// A refresh reads the `from` URL itself: one row.
    pub async fn read_all(&self, filter: &ReadFilter) -> Result<Snapshot, SourceError> {
        let read_error = |message: String| SourceError::reading(&self.dataset, message);
        let frame = SessionContext::new()
            .read_table(self.federated())
            .map_err(|e| read_error(e.to_string()))?;
        let frame = super::restrict(&self.dataset, frame, filter)?;
        let schema = SchemaRef::new(frame.schema().as_arrow().clone());
        let stream = super::execute(&self.dataset, frame).await?;
        Ok(Snapshot {
            stream,
            schema,
            primary_key: Vec::new(),
        })
    }
}

/// The API as a table.
pub struct HttpTable {
    dataset: String,
    base: reqwest::Url,
    client: reqwest::Client,
    params: HttpParams,
}

impl fmt::Debug for HttpTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpTable")
            .field("dataset", &self.dataset)
            .field("base", &self.base.as_str())
            .finish_non_exhaustive()
    }
}

/// `column = 'text'` (either way round): the column and the text.
fn equality(filter: &Expr) -> Option<(&str, &str)> {
    let Expr::BinaryExpr(binary) = filter else {
        return None;
    };
    if binary.op != Operator::Eq {
        return None;
    }
    fn text(expr: &Expr) -> Option<&str> {
        match expr {
            Expr::Literal(ScalarValue::Utf8(Some(text)), _)
            | Expr::Literal(ScalarValue::Utf8View(Some(text)), _)
            | Expr::Literal(ScalarValue::LargeUtf8(Some(text)), _) => Some(text.as_str()),
            _ => None,
        }
    }
    fn column(expr: &Expr) -> Option<&str> {
        match expr {
            Expr::Column(column)
                if [REQUEST_PATH, REQUEST_QUERY].contains(&column.name.as_str()) =>
            {
                Some(column.name.as_str())
            }
            _ => None,
        }
    }
    match (column(&binary.left), text(&binary.right)) {
        (Some(column), Some(text)) => Some((column, text)),
        _ => Some((column(&binary.right)?, text(&binary.left)?)),
    }
}

impl HttpTable {
    /// The request `filters` ask for: its path and query string, checked
    /// against the dataset's params; `None` when two filters contradict
    /// each other (no row).
    fn request(&self, filters: &[Expr]) -> Result<Option<(String, String)>> {
        let refused = |message: String| {
            DataFusionError::Plan(format!("dataset '{}': {message}", self.dataset))
        };
        let (mut path, mut query): (Option<&str>, Option<&str>) = (None, None);
        for (column, text) in filters.iter().filter_map(equality) {
            let slot = if column == REQUEST_PATH {
                &mut path
            } else {
                &mut query
            };
            match slot {
                Some(other) if *other != text => return Ok(None),
                _ => *slot = Some(text),
            }
        }
        let path = path.unwrap_or("");
        let query = query.unwrap_or("");
        if !path.is_empty() && !path.starts_with('/') {
            return Err(refused(format!(
                "request_path '{path}' does not start with '/'"
            )));
        }
        let allowed = &self.params.allowed_paths;
        if !path.is_empty()
            && !allowed.is_empty()
            && !allowed
                .iter()
                .any(|pattern| match pattern.strip_suffix('*') {
                    Some(prefix) => path.starts_with(prefix),
                    None => path == pattern,
                })
        {
            return Err(refused(format!(
                "request_path '{path}' is not one of params.allowed_request_paths ({})",
                allowed.join(", ")
            )));
        }
        if !query.is_empty() && !self.params.query_filters {
            return Err(refused(
                "a filter on request_query needs params.request_query_filters: enabled".to_owned(),
            ));
        }
        if query.len() > self.params.max_query_length {
            return Err(refused(format!(
                "request_query is {} bytes, more than params.max_request_query_length ({})",
                query.len(),
                self.params.max_query_length
            )));
        }
        Ok(Some((path.to_owned(), query.to_owned())))
    }

    fn url(&self, path: &str, query: &str) -> String {
        let mut url = self.base.as_str().trim_end_matches('/').to_owned();
        if path.is_empty() && self.base.path() != "/" {
            url = self.base.as_str().to_owned();
        }
        url.push_str(path);
        if !query.is_empty() {
            url.push(if url.contains('?') { '&' } else { '?' });
            url.push_str(query);
        }
        url
    }
}

#[async_trait]
impl TableProvider for HttpTable {
    fn schema(&self) -> SchemaRef {
        schema()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    /// The request's path and query string are chosen by these filters;
    /// the response row matches them exactly.
    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        Ok(filters
            .iter()
            .map(|filter| match equality(filter) {
                Some(_) => TableProviderFilterPushDown::Exact,
                None => TableProviderFilterPushDown::Unsupported,
            })
            .collect())
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        _limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let request = self.request(filters)?;
        let schema = schema();
        let projection: Vec<usize> = match projection {
            Some(indices) => indices.clone(),
            None => (0..schema.fields().len()).collect(),
        };
        Ok(Arc::new(RequestExec::new(
            self.dataset.clone(),
            self.client.clone(),
            request.map(|(path, query)| (self.url(&path, &query), path, query)),
            Arc::new(schema.project(&projection)?),
            projection,
        )))
    }
}

/// One request, made when the plan runs.
#[derive(Debug)]
struct RequestExec {
    dataset: String,
    client: reqwest::Client,
    /// The URL, path and query string; `None`: no row.
    request: Option<(String, String, String)>,
    projection: Vec<usize>,
    properties: Arc<PlanProperties>,
}

impl RequestExec {
    fn new(
        dataset: String,
        client: reqwest::Client,
        request: Option<(String, String, String)>,
        schema: SchemaRef,
        projection: Vec<usize>,
    ) -> Self {
        let properties = PlanProperties::new(
            EquivalenceProperties::new(schema),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Final,
            Boundedness::Bounded,
        );
        RequestExec {
            dataset,
            client,
            request,
            projection,
            properties: Arc::new(properties),
        }
    }
}

impl DisplayAs for RequestExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.request {
            Some((url, _, _)) => write!(f, "RequestExec: dataset={}, GET {url}", self.dataset),
            None => write!(f, "RequestExec: dataset={}, no request", self.dataset),
        }
    }
}

impl ExecutionPlan for RequestExec {
    fn name(&self) -> &str {
        "RequestExec"
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

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        Vec::new()
    }

    fn with_new_children(
        self: Arc<Self>,
        _children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn execute(
        &self,
        _partition: usize,
        _context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let projected = self.schema();
        let (dataset, client, request, projection) = (
            self.dataset.clone(),
            self.client.clone(),
            self.request.clone(),
            self.projection.clone(),
        );
        let rows = futures::stream::once(async move {
            let Some((url, path, query)) = request else {
                return Ok(RecordBatch::new_empty(Arc::new(schema_of(&projection))));
            };
            let failed = |e: reqwest::Error| {
                DataFusionError::Execution(format!(
                    "dataset '{dataset}': the request GET {url} failed: {e}"
                ))
            };
            let response = client.get(&url).send().await.map_err(failed)?;
            let status = i32::from(response.status().as_u16());
            let content = response.text().await.map_err(failed)?;
            let columns: Vec<ArrayRef> = vec![
                Arc::new(StringArray::from(vec![path])),
                Arc::new(StringArray::from(vec![query])),
                Arc::new(StringArray::from(vec![content])),
                Arc::new(Int32Array::from(vec![status])),
                Arc::new(
                    TimestampMicrosecondArray::from(vec![Utc::now().timestamp_micros()])
                        .with_timezone("UTC"),
                ),
            ];
            let batch = RecordBatch::try_new(schema(), columns)?;
            Ok(batch.project(&projection)?)
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(projected, rows)))
    }
}

fn schema_of(projection: &[usize]) -> Schema {
    schema()
        .project(projection)
        .expect("projection of the HTTP table's own columns")
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::prelude::{col, lit};

    fn table(params: HttpParams) -> HttpTable {
        HttpTable {
            dataset: "api".into(),
            base: reqwest::Url::parse("http://127.0.0.1:9/v1").unwrap(),
            client: reqwest::Client::new(),
            params,
        }
    }

    #[test]
    fn filters_choose_the_request_within_the_params() {
        let open = table(HttpParams {
            allowed_paths: vec!["/search".into(), "/shows/*".into()],
            query_filters: true,
            max_query_length: 8,
        });
        let path = |p: &str| col(REQUEST_PATH).eq(lit(p.to_owned()));
        let query = |q: &str| lit(q.to_owned()).eq(col(REQUEST_QUERY));
        assert_eq!(
            open.request(&[path("/search"), query("q=a")]).unwrap(),
            Some(("/search".into(), "q=a".into()))
        );
        assert_eq!(
            open.url("/search", "q=a"),
            "http://127.0.0.1:9/v1/search?q=a"
        );
        assert_eq!(open.url("", ""), "http://127.0.0.1:9/v1");
        assert!(open.request(&[path("/shows/12")]).is_ok());
        assert_eq!(open.request(&[path("/a"), path("/b")]).unwrap(), None);
        let refused = open.request(&[path("/admin")]).unwrap_err().to_string();
        assert!(refused.contains("allowed_request_paths"), "{refused}");
        let long = open
            .request(&[query("q=123456789")])
            .unwrap_err()
            .to_string();
        assert!(long.contains("max_request_query_length"), "{long}");
        let closed = table(HttpParams {
            allowed_paths: Vec::new(),
            query_filters: false,
            max_query_length: 1024,
        });
        let refused = closed.request(&[query("q=a")]).unwrap_err().to_string();
        assert!(
            refused.contains("request_query_filters: enabled"),
            "{refused}"
        );
    }
}
