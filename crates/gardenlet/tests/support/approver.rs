//! A stand-in for the controller-manager's CSR approver (tested in its own crate,
//! `crates/controller-manager/tests/csr_approver.rs`): it approves every undecided CSR as the
//! admin and records who asked, so kube-controller-manager's signer issues the certificate.

use futures::StreamExt;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use kube::api::PostParams;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, ResourceExt};
use std::sync::{Arc, Mutex};

/// The requesters of the CSRs approved so far, in order.
#[derive(Clone, Default)]
pub struct Requesters(Arc<Mutex<Vec<String>>>);

impl Requesters {
    pub fn all(&self) -> Vec<String> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// Starts approving; the task ends when aborted.
pub fn start(admin: Client) -> (Requesters, tokio::task::JoinHandle<()>) {
    let seen = Requesters::default();
    let record = seen.clone();
    let task = tokio::spawn(async move {
        let api = Api::<CertificateSigningRequest>::all(admin);
        let mut events = std::pin::pin!(watcher(api.clone(), watcher::Config::default()).applied_objects());
        while let Some(event) = events.next().await {
            let Ok(csr) = event else { continue };
            if csr.status.as_ref().and_then(|s| s.conditions.as_ref()).is_some_and(|c| !c.is_empty()) {
                continue;
            }
            record.0.lock().unwrap_or_else(|p| p.into_inner()).push(csr.spec.username.clone().unwrap_or_default());
            let mut approved = csr.clone();
            approved.metadata.managed_fields = None;
            let condition = serde_json::json!({"type": "Approved", "status": "True", "reason": "TestApproved"});
            approved.status.get_or_insert_with(Default::default).conditions =
                serde_json::from_value(serde_json::json!([condition])).ok();
            if let Err(e) =
                api.replace_subresource("approval", &csr.name_any(), &PostParams::default(), &approved).await
            {
                panic!("approving {}: {e}", csr.name_any());
            }
        }
    });
    (seen, task)
}
