//! The process's HTTP endpoints: `/healthz` (the process runs), `/readyz` (the Shoot, Seed and
//! CloudProfile caches have synced, so decisions see the whole fleet) and `/metrics`.

use crate::metrics::Metrics;
use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Which caches have synced. Cloned handles share the flags.
#[derive(Clone, Debug, Default)]
pub struct Readiness {
    pub shoots: Arc<AtomicBool>,
    pub seeds: Arc<AtomicBool>,
    pub cloud_profiles: Arc<AtomicBool>,
}

impl Readiness {
    /// The caches that have not synced yet, by resource name.
    pub fn pending(&self) -> Vec<&'static str> {
        [("shoots", &self.shoots), ("seeds", &self.seeds), ("cloudprofiles", &self.cloud_profiles)]
            .into_iter()
            .filter(|(_, flag)| !flag.load(Ordering::Acquire))
            .map(|(name, _)| name)
            .collect()
    }

    pub fn is_ready(&self) -> bool {
        self.pending().is_empty()
    }
}

#[derive(Clone)]
struct AppState {
    metrics: Metrics,
    readiness: Readiness,
}

/// The router with the three endpoints.
pub fn router(metrics: Metrics, readiness: Readiness) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics_text))
        .with_state(AppState { metrics, readiness })
}

async fn readyz(State(state): State<AppState>) -> impl IntoResponse {
    let pending = state.readiness.pending();
    if pending.is_empty() {
        (StatusCode::OK, "ok".to_string())
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, format!("caches not synced: {}", pending.join(", ")))
    }
}

async fn metrics_text(State(state): State<AppState>) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], state.metrics.render())
}

/// Serves the endpoints on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: tokio::net::TcpListener,
    metrics: Metrics,
    readiness: Readiness,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(metrics, readiness)).with_graceful_shutdown(shutdown).await
}
