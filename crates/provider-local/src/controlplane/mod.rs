//! ControlPlane: what a real provider's CSI driver does, for the local provider. A real
//! provider deploys a cloud-controller-manager and a CSI driver; the local environment needs no
//! cloud-controller-manager (machines are Pods), but a shoot's PersistentVolumeClaims need a
//! provisioner. With `--volume-provisioner-image` the `normal` purpose deploys into the shoot
//! (reached with its admin kubeconfig, [`crate::shoot`]) the default StorageClass and a
//! host-path volume provisioner on every node ([`manifests`], [`crate::volume_provisioner`]),
//! writing only what differs ([`apply`]); Gardener's provider-local deploys
//! local-path-provisioner the same way.
//!
//! Nothing is deployed (and `providerStatus` says why) for the `exposure` purpose (the
//! kube-apiserver Service is reached directly), without the image flag, for shoots without
//! workers (no node to hold volumes), for a shoot being deleted, and while the shoot is
//! hibernated (its API server is down; what was deployed stays). Deletion removes nothing from
//! the shoot: the ControlPlane is deleted when the shoot is, and the shoot's API server and
//! nodes go with it.

pub mod apply;
pub mod manifests;

use crate::common::describe;
use crate::error::Error;
use apply::Written;
use extension_sdk::api::extensions::ControlPlane;
use extension_sdk::api::extensions::controlplane::Purpose;
use extension_sdk::k8s_openapi::api::storage::v1::StorageClass;
use extension_sdk::kube::{Api, Client};
use extension_sdk::{Actuator, ActuatorError, ClusterContext, Outcome};
use manifests::Objects;
use serde_json::{Value, json};

/// The field manager and managed-by label: `provider-local/controlplane`.
const COMPONENT: &str = "controlplane";

/// What a reconcile does in the shoot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShootSide<'a> {
    /// Deploy the StorageClass and the volume provisioner running `image`.
    Deploy { image: &'a str },
    /// Nothing, for this reason (recorded in `providerStatus.note`).
    Nothing(&'static str),
}

/// Whether the shoot asks for worker pools.
pub fn has_workers(shoot: &Value) -> bool {
    shoot["spec"]["provider"]["workers"].as_array().is_some_and(|w| !w.is_empty())
}

/// Decides what a reconcile of `purpose` does in the shoot of `cluster`.
pub fn decide<'a>(purpose: Purpose, image: Option<&'a str>, cluster: &ClusterContext) -> ShootSide<'a> {
    match (purpose, image) {
        (Purpose::Exposure, _) => ShootSide::Nothing(
            "the exposure purpose has nothing to deploy: the kube-apiserver Service is reached directly",
        ),
        (Purpose::Normal, None) => ShootSide::Nothing(
            "provider-local runs without --volume-provisioner-image: nothing is deployed into the shoot, so its PersistentVolumeClaims stay Pending",
        ),
        (Purpose::Normal, Some(_)) if !cluster.exists() => {
            ShootSide::Nothing("no Cluster resource for this shoot: its workers are unknown")
        }
        (Purpose::Normal, Some(_)) if !has_workers(cluster.shoot()) => {
            ShootSide::Nothing("the shoot has no workers: there is no node to hold volumes")
        }
        (Purpose::Normal, Some(_)) if cluster.is_shoot_being_deleted() => {
            ShootSide::Nothing("the shoot is being deleted: its nodes and volumes go with it")
        }
        (Purpose::Normal, Some(_)) if cluster.is_hibernated() => ShootSide::Nothing(
            "the shoot is hibernated (its API server is down): the shoot was not looked at; what was deployed stays",
        ),
        (Purpose::Normal, Some(image)) => ShootSide::Deploy { image },
    }
}

fn purpose_name(cp: &ControlPlane) -> &'static str {
    match cp.spec.purpose.unwrap_or_default() {
        Purpose::Normal => "normal",
        Purpose::Exposure => "exposure",
    }
}

/// What a ControlPlane reports: its purpose, the objects it manages in the shoot, and either
/// what the provisioner is or why nothing was deployed.
pub fn provider_status(cp: &ControlPlane, side: &ShootSide<'_>) -> Value {
    let note = "the local provider needs no cloud-controller-manager or exposure components";
    match side {
        ShootSide::Deploy { image } => json!({
            "purpose": purpose_name(cp),
            "managedResources": Objects::new(image).references(),
            "volumeProvisioner": {
                "storageClass": crate::volume_provisioner::STORAGE_CLASS,
                "provisioner": crate::volume_provisioner::PROVISIONER,
                "image": image,
            },
            "note": note,
        }),
        ShootSide::Nothing(why) => json!({
            "purpose": purpose_name(cp),
            "managedResources": [],
            "note": format!("{note}; {why}"),
        }),
    }
}

/// The ControlPlane actuator.
#[derive(Clone)]
pub struct LocalControlPlane {
    client: Client,
    volume_provisioner_image: Option<String>,
}

crate::debug_without_client!(LocalControlPlane);

impl LocalControlPlane {
    /// `volume_provisioner_image`: provider-local's own image, which the shoot's provisioner
    /// DaemonSet runs; `None` deploys nothing.
    pub fn new(client: Client, volume_provisioner_image: Option<String>) -> Self {
        Self { client, volume_provisioner_image: volume_provisioner_image.filter(|i| !i.is_empty()) }
    }

    /// Applies the objects into the shoot; returns how many were written.
    #[tracing::instrument(skip_all, fields(controlplane = %describe(cp)))]
    async fn deploy(&self, cp: &ControlPlane, image: &str) -> Result<usize, Error> {
        let shoot = crate::shoot::required_client(&self.client, cp).await?;
        let o = Objects::new(image);
        let class = apply::apply(&Api::<StorageClass>::all(shoot.clone()), &o.storage_class, true).await?;
        let written = apply::apply_agent(&shoot, COMPONENT, &o.agent).await?;
        Ok(written + usize::from(class != Written::Unchanged))
    }
}

impl Actuator<ControlPlane> for LocalControlPlane {
    async fn reconcile(
        &self,
        cp: &ControlPlane,
        cluster: &ClusterContext,
    ) -> Result<Outcome<ControlPlane>, ActuatorError> {
        let purpose = cp.spec.purpose.unwrap_or_default();
        let side = decide(purpose, self.volume_provisioner_image.as_deref(), cluster);
        let outcome = match side {
            ShootSide::Deploy { image } => {
                let written = self.deploy(cp, image).await?;
                tracing::info!(controlplane = %describe(cp), written, "the shoot's StorageClass and volume provisioner are in place");
                Outcome::done().with_description(format!(
                    "The default StorageClass and the volume provisioner are in place in the shoot ({written} of 5 objects written)"
                ))
            }
            ShootSide::Nothing(why) => {
                tracing::debug!(controlplane = %describe(cp), why, "nothing to deploy");
                Outcome::done()
            }
        };
        Ok(outcome.with_provider_status(provider_status(cp, &side)))
    }

    /// Nothing to remove: the ControlPlane goes with the shoot, whose API server and nodes (and
    /// so the StorageClass, the provisioner and its volumes) go too.
    async fn delete(&self, _: &ControlPlane, _: &ClusterContext) -> Result<(), ActuatorError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests;
