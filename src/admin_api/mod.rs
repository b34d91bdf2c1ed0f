//! The HTTP admin API: health, readiness, dataset status, on-demand refresh
//! and Prometheus metrics. Handlers only read the registry or wake a
//! dataset's refresh loop; they never do refresh work themselves.

use std::sync::Arc;

use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, patch, post};
use axum::{Json, Router};
use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::accelerator::ProgressReport;
use crate::config::{HttpConfig, RefreshMode, RefreshSql, Secret};
use crate::dataset::{Dataset, DatasetStatus, Registry};
use crate::metrics;
use crate::query::caching::Held;

mod tls;

#[derive(Clone)]
struct ApiState {
    registry: Arc<Registry>,
    api_key: Option<Arc<Secret>>,
}

/// Who may use the API and how it is reached (`runtime.http`).
#[derive(Clone, Default)]
pub struct Access {
    /// Every `/v1` route but `/v1/ready` needs it, and `/metrics` too
    /// unless `metrics_public`; `/health` stays open.
    pub api_key: Option<Secret>,
    pub metrics_public: bool,
    /// HTTPS only, when set.
    pub tls: Option<tokio_rustls::TlsAcceptor>,
}

impl Access {
    /// Loads the certificate `runtime.http.tls` names; the error names the
    /// key and file at fault.
    pub fn load(config: &HttpConfig) -> Result<Access, String> {
        let tls = match &config.tls {
            Some(tls) => {
                let (server, _) = crate::wire::tls::server_config(tls, b"http/1.1")?;
                Some(tokio_rustls::TlsAcceptor::from(server))
            }
            None => None,
        };
        Ok(Access {
            api_key: config.api_key.clone(),
            metrics_public: config.metrics_public,
            tls,
        })
    }
}

/// Serves the admin API on `listener` until `shutdown` fires.
pub async fn serve(
    listener: TcpListener,
    registry: Arc<Registry>,
    access: Access,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let state = ApiState {
        registry,
        api_key: access.api_key.map(Arc::new),
    };
    let app = router(state, access.metrics_public);
    match access.tls {
        None => {
            axum::serve(listener, app)
                .with_graceful_shutdown(shutdown.cancelled_owned())
                .await
        }
        Some(acceptor) => {
            let listener = tls::Listener::new(listener, acceptor, shutdown.clone())?;
            axum::serve(listener, app)
                .with_graceful_shutdown(shutdown.cancelled_owned())
                .await
        }
    }
}

fn router(state: ApiState, metrics_public: bool) -> Router {
    let guard = || middleware::from_fn_with_state(state.clone(), require_api_key);
    let v1 = Router::new()
        .route("/datasets", get(datasets))
        .route("/datasets/{name}/acceleration/refresh", post(refresh))
        .route("/datasets/{name}/acceleration", patch(patch_acceleration))
        .layer(guard());
    let mut metrics = Router::new().route("/metrics", get(render_metrics));
    if !metrics_public {
        metrics = metrics.layer(guard());
    }
    // `/health` and `/v1/ready` stay open: probes (Kubernetes, load
    // balancers) cannot carry the key, and they tell nothing but up/ready.
    Router::new()
        .route("/health", get(|| async { "ok" }))
        .route("/v1/ready", get(ready))
        .merge(metrics)
        .nest("/v1", v1)
        .with_state(state)
}

async fn require_api_key(State(state): State<ApiState>, request: Request, next: Next) -> Response {
    let Some(expected) = &state.api_key else {
        return next.run(request).await;
    };
    // Constant time, so that the time of a refusal tells nothing of how
    // much of a guess was right.
    let matches = presented_key(request.headers()).is_some_and(|key| {
        bool::from(subtle::ConstantTimeEq::ct_eq(
            key.as_bytes(),
            expected.expose().as_bytes(),
        ))
    });
    if matches {
        next.run(request).await
    } else {
        error(StatusCode::UNAUTHORIZED, "missing or invalid API key")
    }
}

fn presented_key(headers: &HeaderMap) -> Option<&str> {
    if let Some(key) = headers
        .get("x-api-key")
        .and_then(|value| value.to_str().ok())
    {
        return Some(key);
    }
    headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
}

fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, Json(json!({ "message": message.into() }))).into_response()
}

async fn ready(State(state): State<ApiState>) -> Response {
    if state.registry.all_ready() {
        (StatusCode::OK, "ready").into_response()
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "not ready").into_response()
    }
}

#[derive(Debug, Deserialize)]
struct DatasetsQuery {
    #[serde(default)]
    status: bool,
    source: Option<String>,
}

/// One entry of `GET /v1/datasets`.
#[derive(Debug, Serialize, Deserialize)]
pub struct DatasetInfo {
    pub from: String,
    pub name: String,
    pub acceleration_enabled: bool,
    /// `full`, `append`, `changes`, `caching`, `snapshot` or `disabled`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_mode: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<DatasetStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_refresh: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_refresh: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rows: Option<usize>,
    /// The snapshot served (restored or followed) or last published.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<SnapshotInfo>,
    /// `starting`, `reading` or `committing` while a refresh is in flight.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refresh_phase: Option<String>,
    /// `refresh_mode: changes`: the stream position applied and the lag.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changes: Option<ChangesInfo>,
    /// `refresh_mode: caching`: the keys, rows and bytes the cache holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caching: Option<Held>,
    /// While a refresh reads its source: rows and bytes read so far and
    /// their rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_progress: Option<ProgressReport>,
    /// When the last refresh attempt started, whatever its outcome.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_refresh_attempt: Option<String>,
    /// When a failed refresh is tried again, while it waits to be.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_retry: Option<String>,
    /// `computing` while the column statistics of the version served in
    /// memory are computed, then `ready`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column_statistics: Option<String>,
}

/// The `changes` of a [`DatasetInfo`].
#[derive(Debug, Serialize, Deserialize)]
pub struct ChangesInfo {
    pub position: String,
    pub lag_ms: u64,
    pub applied_at: String,
}

/// The `snapshot` of a [`DatasetInfo`].
#[derive(Debug, Serialize, Deserialize)]
pub struct SnapshotInfo {
    pub id: String,
    pub created_at: String,
    pub origin: String,
}

async fn datasets(
    State(state): State<ApiState>,
    Query(query): Query<DatasetsQuery>,
) -> Json<Vec<DatasetInfo>> {
    let list = state
        .registry
        .iter()
        .filter(|dataset| {
            query
                .source
                .as_deref()
                .is_none_or(|prefix| dataset.config.from_raw.starts_with(prefix))
        })
        .map(|dataset| info(dataset, query.status))
        .collect();
    Json(list)
}

fn info(dataset: &Dataset, with_status: bool) -> DatasetInfo {
    let mut info = DatasetInfo {
        from: dataset.config.from_raw.clone(),
        name: dataset.name(),
        acceleration_enabled: dataset.config.acceleration.enabled,
        refresh_mode: dataset
            .config
            .acceleration
            .enabled
            .then(|| dataset.config.acceleration.refresh_mode.as_str().to_owned()),
        status: None,
        error_message: None,
        last_refresh: None,
        next_refresh: None,
        rows: None,
        snapshot: None,
        refresh_phase: None,
        changes: None,
        caching: None,
        refresh_progress: None,
        last_refresh_attempt: None,
        next_retry: None,
        column_statistics: None,
    };
    if with_status {
        let report = dataset.report();
        info.status = Some(report.status);
        info.error_message = report.error_message;
        info.last_refresh = report.last_refresh.map(rfc3339);
        info.next_refresh = report.next_refresh.map(rfc3339);
        info.rows = report.rows;
        info.refresh_phase = report.refresh_phase.map(str::to_owned);
        info.snapshot = report.snapshot.map(|snapshot| SnapshotInfo {
            id: snapshot.id,
            created_at: rfc3339(snapshot.created_at),
            origin: snapshot.origin.to_owned(),
        });
        info.caching = report.caching;
        info.refresh_progress = report.refresh_progress;
        info.last_refresh_attempt = report.last_refresh_attempt.map(rfc3339);
        info.next_retry = report.next_retry.map(rfc3339);
        info.column_statistics = report.column_statistics.map(str::to_owned);
        info.changes = report.changes.map(|changes| ChangesInfo {
            position: changes.position,
            lag_ms: changes.lag_ms,
            applied_at: rfc3339(changes.applied_at),
        });
    }
    info
}

fn rfc3339(time: DateTime<Utc>) -> String {
    time.to_rfc3339_opts(SecondsFormat::Micros, true)
}

async fn refresh(State(state): State<ApiState>, Path(name): Path<String>) -> Response {
    let Some(dataset) = state.registry.get(&name) else {
        return error(StatusCode::NOT_FOUND, format!("dataset '{name}' not found"));
    };
    if !dataset.config.acceleration.enabled {
        return error(
            StatusCode::BAD_REQUEST,
            format!("dataset '{name}' is not accelerated, so it has nothing to refresh"),
        );
    }
    if dataset.config.acceleration.refresh_mode == RefreshMode::Disabled {
        return error(
            StatusCode::BAD_REQUEST,
            format!(
                "dataset '{name}' has refresh_mode: disabled: it is loaded once and never refreshed"
            ),
        );
    }
    dataset.request_refresh();
    let message = format!("Dataset refresh triggered for {}.", dataset.name());
    (StatusCode::CREATED, Json(json!({ "message": message }))).into_response()
}

/// `PATCH /v1/datasets/{name}/acceleration` with `{"refresh_sql": "..."}`
/// (or `null` for none): replaces the dataset's
/// `refresh_sql` until restart. The next refresh, scheduled or on demand,
/// applies it.
async fn patch_acceleration(
    State(state): State<ApiState>,
    Path(name): Path<String>,
    body: String,
) -> Response {
    let Some(dataset) = state.registry.get(&name) else {
        return error(StatusCode::NOT_FOUND, format!("dataset '{name}' not found"));
    };
    let body: serde_json::Map<String, serde_json::Value> = match serde_json::from_str(&body) {
        Ok(body) => body,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                format!(
                    "the body must be a JSON object such as {{\"refresh_sql\": \"SELECT ...\"}}: {e}"
                ),
            );
        }
    };
    if let Some(key) = body.keys().find(|key| *key != "refresh_sql") {
        return error(
            StatusCode::BAD_REQUEST,
            format!("'{key}' cannot be changed at runtime; only refresh_sql can"),
        );
    }
    let refresh_sql = match body.get("refresh_sql") {
        None => {
            return error(
                StatusCode::BAD_REQUEST,
                "the body must set refresh_sql (a statement, or null for none)",
            );
        }
        Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(text)) => match RefreshSql::parse(text) {
            Ok(sql) if sql.reads(&dataset.config.name) => Some(sql),
            Ok(_) => {
                return error(
                    StatusCode::BAD_REQUEST,
                    format!(
                        "refresh_sql of dataset '{name}' must read the dataset itself (FROM {})",
                        dataset.config.name.table
                    ),
                );
            }
            Err(message) => {
                return error(
                    StatusCode::BAD_REQUEST,
                    format!("refresh_sql of dataset '{name}' {message}"),
                );
            }
        },
        Some(other) => {
            return error(
                StatusCode::BAD_REQUEST,
                format!("refresh_sql must be a string or null, not {other}"),
            );
        }
    };
    let text = refresh_sql.as_ref().map(|sql| sql.as_str().to_owned());
    dataset.set_refresh_sql(refresh_sql);
    let message = format!(
        "refresh_sql of dataset '{}' updated until restart; the next refresh applies it.",
        dataset.name()
    );
    (
        StatusCode::OK,
        Json(json!({ "message": message, "refresh_sql": text })),
    )
        .into_response()
}

async fn render_metrics() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        metrics::render(),
    )
}
