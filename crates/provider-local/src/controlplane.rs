//! ControlPlane: an honest no-op. A real provider deploys a cloud-controller-manager, a CSI
//! driver and similar components next to the shoot's control plane; the local environment
//! needs none of them (machines are Pods, volumes are the seed's). The `exposure` purpose has
//! nothing to add either: the kube-apiserver Service is reached directly. `providerStatus`
//! records exactly that, so nobody has to guess.

use crate::common::describe;
use extension_sdk::api::extensions::ControlPlane;
use extension_sdk::api::extensions::controlplane::Purpose;
use extension_sdk::{Actuator, ActuatorError, ClusterContext, Outcome};
use serde_json::json;

/// The ControlPlane actuator.
#[derive(Clone, Debug, Default)]
pub struct LocalControlPlane;

/// What a ControlPlane reports: the components it manages (none) and why.
pub fn provider_status(cp: &ControlPlane) -> serde_json::Value {
    let purpose = match cp.spec.purpose.unwrap_or_default() {
        Purpose::Normal => "normal",
        Purpose::Exposure => "exposure",
    };
    json!({
        "purpose": purpose,
        "managedResources": [],
        "note": "the local provider needs no cloud-controller-manager, CSI driver or exposure components",
    })
}

impl Actuator<ControlPlane> for LocalControlPlane {
    async fn reconcile(&self, cp: &ControlPlane, _: &ClusterContext) -> Result<Outcome<ControlPlane>, ActuatorError> {
        tracing::debug!(controlplane = %describe(cp), "nothing to deploy for the local provider");
        Ok(Outcome::done().with_provider_status(provider_status(cp)))
    }

    async fn delete(&self, _: &ControlPlane, _: &ClusterContext) -> Result<(), ActuatorError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use extension_sdk::api::extensions::ControlPlaneSpec;

    #[test]
    fn reports_its_purpose_and_that_it_manages_nothing() {
        let mut cp = ControlPlane::new("cp", ControlPlaneSpec::default());
        assert_eq!(provider_status(&cp)["purpose"], "normal");
        cp.spec.purpose = Some(Purpose::Exposure);
        let s = provider_status(&cp);
        assert_eq!(s["purpose"], "exposure");
        assert_eq!(s["managedResources"], json!([]));
    }
}
