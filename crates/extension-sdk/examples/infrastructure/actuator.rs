//! The provider logic of an example extension: `Infrastructure` objects of type `example`.
//!
//! It pretends to manage a cloud network: the network's ID is the "real infrastructure" that
//! must survive a migration, so it lives in `status.state`. What the extension keeps in the
//! seed (a ConfigMap describing the network next to the shoot's control plane) is rebuilt on
//! every reconcile and removed on migrate and delete.

use extension_sdk::api::extensions::Infrastructure;
use extension_sdk::k8s_openapi::api::core::v1::ConfigMap;
use extension_sdk::kube::api::{DeleteParams, ObjectMeta, Patch, PatchParams};
use extension_sdk::kube::{Api, Client, Resource, ResourceExt};
use extension_sdk::{Actuator, ActuatorError, ClusterContext, Outcome};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The `spec.type` this extension handles.
pub const TYPE: &str = "example";

/// What the extension needs to find its infrastructure again on another seed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct State {
    pub network_id: String,
}

/// The actuator. It only needs a client for the seed it runs in.
#[derive(Clone)]
pub struct ExampleInfrastructure {
    client: Client,
}

impl ExampleInfrastructure {
    pub fn new(client: Client) -> Self {
        Self { client }
    }

    fn config_maps(&self, infra: &Infrastructure) -> Api<ConfigMap> {
        Api::namespaced(self.client.clone(), &infra.namespace().unwrap_or_default())
    }

    /// The network this object owns: the one recorded in `status.state` (after a restore, or
    /// on any later reconcile), otherwise a new one.
    fn network(infra: &Infrastructure) -> State {
        let recorded =
            infra.status.as_ref().and_then(|s| s.default.state.as_ref()).and_then(|s| s.decode::<State>().ok());
        recorded.unwrap_or_else(|| {
            let uid = infra.uid().unwrap_or_default();
            State { network_id: format!("net-{}", uid.get(..8).unwrap_or(&uid)) }
        })
    }

    async fn remove_config_map(&self, infra: &Infrastructure) -> Result<(), ActuatorError> {
        let name = config_map_name(infra);
        match self.config_maps(infra).delete(&name, &DeleteParams::default()).await {
            Ok(_) => Ok(()),
            Err(extension_sdk::kube::Error::Api(s)) if s.code == 404 => Ok(()),
            Err(e) => Err(ActuatorError::context(format!("deleting ConfigMap {name}"), e)),
        }
    }
}

/// Name of the ConfigMap the extension keeps in the shoot's namespace.
pub fn config_map_name(infra: &Infrastructure) -> String {
    format!("example-infrastructure-{}", infra.name_any())
}

impl Actuator<Infrastructure> for ExampleInfrastructure {
    async fn reconcile(
        &self,
        infra: &Infrastructure,
        cluster: &ClusterContext,
    ) -> Result<Outcome<Infrastructure>, ActuatorError> {
        if infra.spec.region.is_empty() {
            // "configuration" maps to ERR_CONFIGURATION_PROBLEM: gardenlet stops retrying.
            return Err(ActuatorError::new("invalid configuration: spec.region must not be empty"));
        }
        let state = Self::network(infra);
        let name = config_map_name(infra);
        let data = BTreeMap::from([
            ("networkID".to_string(), state.network_id.clone()),
            ("region".to_string(), infra.spec.region.clone()),
            ("shoot".to_string(), cluster.shoot_name().unwrap_or_default().to_string()),
        ]);
        let config_map = ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                owner_references: infra.controller_owner_ref(&()).map(|r| vec![r]),
                ..Default::default()
            },
            data: Some(data),
            ..Default::default()
        };
        self.config_maps(infra)
            .patch(&name, &PatchParams::apply("provider-example/infrastructure").force(), &Patch::Apply(&config_map))
            .await
            .map_err(|e| ActuatorError::context(format!("applying ConfigMap {name}"), e))?;

        let state_json = serde_json::to_value(&state).map_err(|e| ActuatorError::context("encoding the state", e))?;
        let network_id = state.network_id;
        Ok(Outcome::<Infrastructure>::done()
            .with_state(state_json)
            .with_provider_status(serde_json::json!({ "networkID": network_id }))
            .with_status(|status| status.node_network = Some("10.250.0.0/16".into())))
    }

    async fn delete(&self, infra: &Infrastructure, _: &ClusterContext) -> Result<(), ActuatorError> {
        // A real provider would delete the cloud network `network(infra).network_id` here.
        self.remove_config_map(infra).await
    }

    async fn migrate(
        &self,
        infra: &Infrastructure,
        _: &ClusterContext,
    ) -> Result<Outcome<Infrastructure>, ActuatorError> {
        // Only what lives in this seed goes; the network (in `status.state`) stays.
        self.remove_config_map(infra).await?;
        Ok(Outcome::done())
    }

    // `restore` is the default: `reconcile`, which picks the network up from `status.state`.
}
