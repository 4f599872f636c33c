//! The extension's heartbeat: a Lease `gardener-extension-heartbeat` in the extension's
//! namespace whose `renewTime` the leader renews every 30 s, so that gardenlet can tell a
//! running extension from a dead one.

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::api::{ObjectMeta, Patch, PatchParams};
use kube::{Api, Client};
use std::future::Future;
use std::time::Duration;

/// Name of the heartbeat Lease.
pub const HEARTBEAT_LEASE: &str = "gardener-extension-heartbeat";
/// How often the heartbeat is renewed.
pub const HEARTBEAT_INTERVAL: Duration = Duration::from_secs(30);

/// Renews the heartbeat Lease once.
pub async fn renew(client: &Client, namespace: &str, holder: &str, interval: Duration) -> Result<(), kube::Error> {
    let lease = Lease {
        metadata: ObjectMeta {
            name: Some(HEARTBEAT_LEASE.into()),
            namespace: Some(namespace.into()),
            ..Default::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some(holder.into()),
            lease_duration_seconds: i32::try_from(interval.as_secs()).ok(),
            renew_time: Some(MicroTime(Timestamp::now())),
            ..Default::default()
        }),
    };
    let api: Api<Lease> = Api::namespaced(client.clone(), namespace);
    let body = serde_json::json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": lease.metadata,
        "spec": lease.spec,
    });
    api.patch(HEARTBEAT_LEASE, &PatchParams::apply("extension-sdk/heartbeat").force(), &Patch::Apply(&body)).await?;
    Ok(())
}

/// Renews the heartbeat every `interval` until `stop` resolves.
pub async fn run(
    client: Client,
    namespace: String,
    holder: String,
    interval: Duration,
    stop: impl Future<Output = ()>,
) {
    let mut stop = std::pin::pin!(stop);
    loop {
        if let Err(e) = renew(&client, &namespace, &holder, interval).await {
            tracing::warn!(error = %crate::events::error_chain(&e), "renewing the heartbeat lease");
        }
        tokio::select! {
            _ = &mut stop => return,
            _ = tokio::time::sleep(interval) => {}
        }
    }
}
