//! The CSR approver's wiring: `certificates.k8s.io/v1` CertificateSigningRequests (primary,
//! every one; decided ones are skipped by [`decide`]). Seed identity CSRs
//! (`gardener.cloud:system:seed:<name>`, signer `kubernetes.io/kube-apiserver-client`) are
//! approved or denied through `/approval`; kube-controller-manager's signer then issues the
//! certificate. See [`decide`] (the rules) and [`reconcile`].

pub mod decide;
pub mod reconcile;

use crate::config::CsrConfig;
use crate::runtime::Common;
use ::runtime::runner::Stop;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use kube::runtime::watcher;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

#[derive(Debug)]
pub struct Context {
    pub common: Common,
}

pub async fn run(common: Common, config: CsrConfig, stop: Stop, ready: Arc<AtomicBool>) {
    if !config.enabled {
        // Nothing to wait for: the controller is switched off.
        ready.store(true, std::sync::atomic::Ordering::Release);
        return;
    }
    let wiring = common.wiring(stop, ready).concurrency(config.concurrent_syncs);
    let Some(mut wiring) = wiring.when_served::<(CertificateSigningRequest,)>().await else { return };
    let controller = wiring.controller(
        "certificate signing requests",
        wiring.all::<CertificateSigningRequest>(),
        watcher::Config::default(),
    );
    wiring.run(controller, reconcile::reconcile, reconcile::error_policy, Arc::new(Context { common })).await;
}
