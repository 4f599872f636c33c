//! Extension types `local-ext-*`: do-nothing extensions that exist to exercise lifecycle
//! ordering. Each type is registered for one stage (its ControllerRegistration says when
//! gardenlet deploys it); on every reconcile the actuator records in `providerStatus` what it
//! found in the shoot's namespace at that moment (is the kube-apiserver Deployment there, has a
//! Worker succeeded), so a test of the flow can see that the stage was honoured.

use crate::common::describe;
use crate::error::Error;
use extension_sdk::api::common::LastOperationState;
use extension_sdk::api::extensions::{Extension, Worker};
use extension_sdk::k8s_openapi::api::apps::v1::Deployment;
use extension_sdk::kube::api::ListParams;
use extension_sdk::kube::{Api, Client, ResourceExt};
use extension_sdk::{Actuator, ActuatorError, ClusterContext, Outcome};
use serde_json::json;

/// Deployed before kube-apiserver.
pub const TYPE_BEFORE_KUBE_APISERVER: &str = "local-ext-before-kube-apiserver";
/// Deployed after kube-apiserver.
pub const TYPE_AFTER_KUBE_APISERVER: &str = "local-ext-after-kube-apiserver";
/// Deployed after the Worker.
pub const TYPE_AFTER_WORKER: &str = "local-ext-after-worker";
/// Every `local-ext` type.
pub const TYPES: [&str; 3] = [TYPE_BEFORE_KUBE_APISERVER, TYPE_AFTER_KUBE_APISERVER, TYPE_AFTER_WORKER];

/// The stage a type stands for (`None` for a type that is not `local-ext-*`).
pub fn stage_of(type_: &str) -> Option<&'static str> {
    match type_ {
        TYPE_BEFORE_KUBE_APISERVER => Some("BeforeKubeAPIServer"),
        TYPE_AFTER_KUBE_APISERVER => Some("AfterKubeAPIServer"),
        TYPE_AFTER_WORKER => Some("AfterWorker"),
        _ => None,
    }
}

/// The Extension actuator.
#[derive(Clone)]
pub struct LocalExtension {
    client: Client,
}

crate::debug_without_client!(LocalExtension);

impl LocalExtension {
    pub fn new(client: Client) -> Self {
        Self { client }
    }
}

impl Actuator<Extension> for LocalExtension {
    #[tracing::instrument(skip_all, fields(extension = %describe(ext)))]
    async fn reconcile(&self, ext: &Extension, _: &ClusterContext) -> Result<Outcome<Extension>, ActuatorError> {
        let object = describe(ext);
        let stage = stage_of(&ext.spec.default.type_)
            .ok_or_else(|| Error::config(&object, "spec.type", "not a local-ext type"))?;
        let ns = ext.namespace().unwrap_or_default();
        let kube_apiserver = Api::<Deployment>::namespaced(self.client.clone(), &ns)
            .get_opt("kube-apiserver")
            .await
            .map_err(Error::kube(format!("reading Deployment {ns}/kube-apiserver")))?
            .is_some();
        let workers = Api::<Worker>::namespaced(self.client.clone(), &ns)
            .list(&ListParams::default())
            .await
            .map_err(Error::kube(format!("listing Workers in {ns}")))?;
        let worker_ready = workers.items.iter().any(|w| {
            w.status
                .as_ref()
                .and_then(|s| s.default.last_operation.as_ref())
                .is_some_and(|o| o.state == LastOperationState::Succeeded)
        });
        tracing::info!(stage, kube_apiserver, worker_ready, "observed the shoot at this stage");
        Ok(Outcome::done().with_provider_status(json!({
            "stage": stage,
            "observed": {"kubeAPIServerDeployed": kube_apiserver, "workerReady": worker_ready},
        })))
    }

    async fn delete(&self, _: &Extension, _: &ClusterContext) -> Result<(), ActuatorError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_has_a_stage() {
        for t in TYPES {
            assert!(stage_of(t).is_some(), "{t}");
        }
        assert_eq!(stage_of("local"), None);
    }
}
