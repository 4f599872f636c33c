//! What gardenlet publishes about a shoot's CAs in its project namespace, as Gardener does:
//!
//! * ConfigMap `<shoot>.ca-cluster` with `ca.crt`, the bundle clients of the shoot's API server
//!   trust (during a CA rotation the new and the old CA). Public: project members read it.
//! * InternalSecret `<shoot>.ca-client` with `ca.crt` and `ca.key` of the client CA. The
//!   controller-manager signs AdminKubeconfigRequests with it; project members cannot read
//!   InternalSecrets, and the controller-manager needs no access to the ShootState (which holds
//!   every key of the shoot).
//!
//! Both are owned by the Shoot (garbage-collected with it) and written only when their content
//! changed. [`desired`] is pure; [`publish`] reads, compares and applies.

use crate::shoot::credentials::Project;
use crate::shoot::credentials::secrets::{SecretsError, b64};
use api::core::InternalSecret;
use api::helpers::names::{shoot_ca_client, shoot_ca_cluster};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::Api;
use kube::api::{Patch, PatchParams};
use pki::SecretSet;
use pki::data_keys::{CA_CERT, CA_KEY};
use serde_json::{Value, json};
use std::collections::BTreeMap;

const FIELD_MANAGER: &str = "gardenlet-garden-ca";
/// The shoot's cluster CA and client CA in its secret set.
const CLUSTER_CA: &str = "ca";
const CLIENT_CA: &str = "ca-client";

/// The two objects for `shoot` in `namespace`, or `None` while the set lacks either CA.
#[derive(Clone, PartialEq)]
pub struct Desired {
    pub ca_cluster: BTreeMap<String, String>,
    /// Base64 values, as stored.
    pub ca_client: BTreeMap<String, String>,
}

impl std::fmt::Debug for Desired {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Desired").field("ca_cluster", &self.ca_cluster).field("ca_client", &"<redacted>").finish()
    }
}

pub fn desired(set: &SecretSet) -> Option<Desired> {
    let bundle = pki::admin_kubeconfig::trusted_bundle(set, CLUSTER_CA)?;
    let cert = set.value(CLIENT_CA, CA_CERT)?;
    let key = set.value(CLIENT_CA, CA_KEY)?;
    Some(Desired {
        ca_cluster: BTreeMap::from([(CA_CERT.to_string(), bundle)]),
        ca_client: BTreeMap::from([(CA_CERT.to_string(), b64(cert)), (CA_KEY.to_string(), b64(key))]),
    })
}

fn metadata(name: &str, namespace: &str, owner: Option<&OwnerReference>) -> Value {
    json!({"name": name, "namespace": namespace, "ownerReferences": owner.map(|o| vec![o.clone()])})
}

/// Writes the ConfigMap and InternalSecret of the shoot in its project namespace when they differ
/// from what `set` says.
pub async fn publish(project: &Project<'_>, set: &SecretSet) -> Result<(), SecretsError> {
    let Some(want) = desired(set) else { return Ok(()) };
    let (namespace, owner, err) = (project.namespace, project.owner.as_ref(), |what| project.err(what));
    let params = PatchParams::apply(FIELD_MANAGER).force();

    let (cm_name, is_name) = (shoot_ca_cluster(project.shoot), shoot_ca_client(project.shoot));
    let maps: Api<ConfigMap> = Api::namespaced(project.garden.clone(), namespace);
    let current = maps.get_opt(&cm_name).await.map_err(err(format!("reading ConfigMap {cm_name}")))?;
    if current.and_then(|c| c.data) != Some(want.ca_cluster.clone()) {
        let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
                          "metadata": metadata(&cm_name, namespace, owner), "data": want.ca_cluster});
        maps.patch(&cm_name, &params, &Patch::Apply(&body))
            .await
            .map_err(err(format!("applying ConfigMap {cm_name}")))?;
    }

    let internal: Api<InternalSecret> = Api::namespaced(project.garden.clone(), namespace);
    let current = internal.get_opt(&is_name).await.map_err(err(format!("reading InternalSecret {is_name}")))?;
    if current.map(|c| c.spec.data) != Some(want.ca_client.clone()) {
        let body = json!({"apiVersion": "core.gardener.cloud/v1beta1", "kind": "InternalSecret",
                          "metadata": metadata(&is_name, namespace, owner),
                          "type": "Opaque", "data": want.ca_client});
        internal
            .patch(&is_name, &params, &Patch::Apply(&body))
            .await
            .map_err(err(format!("applying InternalSecret {is_name}")))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

    use super::*;
    use pki::Secret;

    fn set(with_old: bool) -> SecretSet {
        let mut set = SecretSet::new();
        set.insert(Secret::new("ca", "Opaque").with_data(CA_CERT, "NEW").with_data(CA_KEY, "k"));
        if with_old {
            set.insert(Secret::new("ca-old", "Opaque").with_data(CA_CERT, "OLD"));
        }
        set.insert(Secret::new("ca-client", "Opaque").with_data(CA_CERT, "CLIENT").with_data(CA_KEY, "KEY"));
        set
    }

    #[test]
    fn bundle_and_client_ca_are_published_without_the_cluster_ca_key() {
        let d = desired(&set(false)).unwrap();
        assert_eq!(d.ca_cluster, BTreeMap::from([("ca.crt".to_string(), "NEW\n".to_string())]));
        assert_eq!(d.ca_client["ca.crt"], b64("CLIENT"));
        assert_eq!(d.ca_client["ca.key"], b64("KEY"));
        assert!(!format!("{d:?}").contains(&b64("KEY")), "Debug redacts the client CA");
        let rotating = desired(&set(true)).unwrap();
        assert_eq!(rotating.ca_cluster["ca.crt"], "NEW\nOLD\n", "both CAs are trusted during a rotation");
    }

    #[test]
    fn nothing_is_published_before_both_cas_exist() {
        let mut partial = SecretSet::new();
        partial.insert(Secret::new("ca", "Opaque").with_data(CA_CERT, "NEW"));
        assert!(desired(&partial).is_none());
    }
}
