//! The process's HTTP endpoints: `/healthz` (the process runs), `/readyz` (caches synced and,
//! with leader election, leadership held) and `/metrics` (the process's registry).

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use prometheus::Registry;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// What `/readyz` looks at.
#[derive(Clone, Debug, Default)]
pub struct Readiness {
    /// One flag per controller: its watch cache has synced.
    pub caches: Vec<Arc<AtomicBool>>,
    /// Leadership held (always true without leader election).
    pub leader: Arc<AtomicBool>,
    /// One flag per server that runs on every replica (see `Runner::add_server`): it serves.
    pub servers: Vec<Arc<AtomicBool>>,
}

impl Readiness {
    /// Ready when this instance leads and every cache synced, or when it stands by: a standby
    /// replica runs no controllers (so has no caches) and is ready to take over, and reporting
    /// it unready would hold up rolling updates and count against PodDisruptionBudgets. Either
    /// way, the servers every replica runs must be serving.
    pub fn is_ready(&self) -> bool {
        self.servers_ready()
            && (!self.leader.load(Ordering::Acquire) || self.caches.iter().all(|c| c.load(Ordering::Acquire)))
    }

    fn servers_ready(&self) -> bool {
        self.servers.iter().all(|c| c.load(Ordering::Acquire))
    }
}

#[derive(Clone)]
struct AppState {
    registry: Registry,
    readiness: Readiness,
}

/// The router with the three endpoints.
pub fn router(registry: Registry, readiness: Readiness) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .with_state(AppState { registry, readiness })
}

async fn readyz(State(state): State<AppState>) -> impl IntoResponse {
    if !state.readiness.servers_ready() {
        (StatusCode::SERVICE_UNAVAILABLE, "servers not serving yet")
    } else if !state.readiness.leader.load(Ordering::Acquire) {
        (StatusCode::OK, "standby: another instance holds the leader Lease")
    } else if state.readiness.is_ready() {
        (StatusCode::OK, "ok")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "caches not synced")
    }
}

async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], crate::metrics::render(&state.registry))
}

/// Serves the endpoints on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: tokio::net::TcpListener,
    registry: Registry,
    readiness: Readiness,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(registry, readiness)).with_graceful_shutdown(shutdown).await
}
