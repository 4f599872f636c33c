//! Names, labels and small API helpers every kind shares.

use crate::error::{Error, is_not_found};
use extension_sdk::api::helpers::constants::LABEL_TECHNICAL_ID;
use extension_sdk::k8s_openapi::api::core::v1::Namespace;
use extension_sdk::kube::api::{DeleteParams, ObjectMeta, Patch, PatchParams};
use extension_sdk::kube::{Api, Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use std::collections::BTreeMap;
use std::fmt::Debug;

/// The `spec.type` of every kind but Extension.
pub const TYPE: &str = "local";
/// Label naming the provider-local component that created an object.
pub const LABEL_MANAGED_BY: &str = "provider-local.gardener.cloud/managed-by";
/// Prefix of server-side-apply field managers (`provider-local/<kind>`).
pub const FIELD_MANAGER_PREFIX: &str = "provider-local";

/// Server-side apply parameters with the field manager `provider-local/<component>`.
pub fn apply_params(component: &str) -> PatchParams {
    PatchParams::apply(&format!("{FIELD_MANAGER_PREFIX}/{component}")).force()
}

/// `Kind namespace/name` for messages.
pub fn describe<K: Resource<DynamicType = ()>>(obj: &K) -> String {
    match obj.meta().namespace.as_deref() {
        Some(ns) => format!("{} {ns}/{}", K::kind(&()), obj.name_any()),
        None => format!("{} {}", K::kind(&()), obj.name_any()),
    }
}

/// The shoot's technical ID: the namespace of a namespaced extension object (the shoot's
/// namespace in the seed is named by it).
pub fn technical_id<K: Resource<DynamicType = ()>>(obj: &K) -> Result<String, Error> {
    obj.meta()
        .namespace
        .clone()
        .filter(|ns| !ns.is_empty())
        .ok_or_else(|| Error::config(describe(obj), "metadata.namespace", "the object has no namespace"))
}

/// Labels of everything created for a shoot: its technical ID and the creating component.
pub fn shoot_labels(technical_id: &str, component: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (LABEL_TECHNICAL_ID.to_string(), technical_id.to_string()),
        (LABEL_MANAGED_BY.to_string(), format!("{FIELD_MANAGER_PREFIX}-{component}")),
    ])
}

/// A label selector string for `labels`.
pub fn selector(labels: &BTreeMap<String, String>) -> String {
    labels.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")
}

/// Lowercase hex SHA-256 of `data`.
pub fn sha256_hex(data: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, data);
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// Decodes an optional `providerConfig`; absent means the type's default.
pub fn provider_config<T: DeserializeOwned + Default>(
    config: Option<&extension_sdk::api::Opaque>,
    object: &str,
    field: &str,
) -> Result<T, Error> {
    match config {
        None => Ok(T::default()),
        Some(c) if c.as_value().is_null() => Ok(T::default()),
        Some(c) => c.decode().map_err(|e| Error::config(object, field, e.to_string())),
    }
}

/// Applies a namespace with the given labels (server-side apply, so a second applier with the
/// same labels shares ownership instead of fighting over them).
pub async fn ensure_namespace(
    client: &Client,
    name: &str,
    labels: BTreeMap<String, String>,
    component: &str,
) -> Result<Namespace, Error> {
    let ns = Namespace {
        metadata: ObjectMeta { name: Some(name.to_string()), labels: Some(labels), ..Default::default() },
        ..Default::default()
    };
    Api::<Namespace>::all(client.clone())
        .patch(name, &apply_params(component), &Patch::Apply(&ns))
        .await
        .map_err(Error::kube(format!("applying Namespace {name}")))
}

/// Deletes an object; a missing object is fine.
pub async fn delete_if_exists<K>(api: &Api<K>, name: &str, what: &str) -> Result<(), Error>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(e) if is_not_found(&e) => Ok(()),
        Err(e) => Err(Error::kube(format!("deleting {what} {name}"))(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use extension_sdk::api::extensions::{Network, NetworkSpec};

    #[test]
    fn technical_id_is_the_namespace() {
        let mut n = Network::new("n", NetworkSpec::default());
        assert!(technical_id(&n).is_err());
        n.metadata.namespace = Some("shoot--dev--a".into());
        assert_eq!(technical_id(&n).ok().as_deref(), Some("shoot--dev--a"));
        assert_eq!(describe(&n), "Network shoot--dev--a/n");
    }

    #[test]
    fn labels_and_selector() {
        let l = shoot_labels("shoot--dev--a", "worker");
        assert_eq!(
            selector(&l),
            "provider-local.gardener.cloud/managed-by=provider-local-worker,shoot.gardener.cloud/technical-id=shoot--dev--a"
        );
    }

    #[test]
    fn sha256_is_stable() {
        assert_eq!(sha256_hex(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }

    #[test]
    fn provider_config_defaults_and_reports_the_field() {
        #[derive(Default, serde::Deserialize)]
        struct C {
            #[allow(dead_code)]
            image: Option<String>,
        }
        assert!(provider_config::<C>(None, "o", "f").is_ok());
        let bad = extension_sdk::api::Opaque(serde_json::json!({"image": 3}));
        let err = provider_config::<C>(Some(&bad), "Worker a/b", "spec.providerConfig").err();
        assert!(err.is_some_and(|e| e.to_string().contains("spec.providerConfig")));
    }
}
