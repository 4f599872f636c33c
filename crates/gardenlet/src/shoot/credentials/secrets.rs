//! The shoot's control-plane secrets: planned by `pki` from what exists, persisted to the
//! ShootState in the garden **before** they are written to the seed (so a CA is never lost, and
//! a restarted or migrated gardenlet finds the same bytes), then applied as Secrets.

use crate::shoot::operation::values::ShootValues;
use api::AnyJson;
use api::core::ShootState;
use api::core::shoot::credentials::ShootCredentialsRotation;
use api::core::shootstate::GardenerResourceData;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use pki::shootstate::ShootStateEntry;
use pki::{SecretConfig, SecretSet};
use std::collections::BTreeMap;

/// Label on every Secret this module manages in the seed namespace.
pub const MANAGED_BY_LABEL: &str = "secrets.gardener.cloud/managed-by";
const MANAGED_BY: &str = "gardenlet";
const FIELD_MANAGER: &str = "gardenlet";

#[derive(Debug, thiserror::Error)]
pub enum SecretsError {
    #[error("{what} for shoot {shoot}")]
    Kube {
        what: String,
        shoot: String,
        #[source]
        source: kube::Error,
    },
    #[error("planning the secrets of shoot {shoot}")]
    Pki {
        shoot: String,
        #[source]
        source: pki::Error,
    },
}

/// Converts a pki secret into a Kubernetes Secret in `namespace`.
pub fn to_k8s(secret: &pki::Secret, namespace: &str) -> Secret {
    let mut labels = secret.labels.clone();
    labels.insert(MANAGED_BY_LABEL.to_string(), MANAGED_BY.to_string());
    Secret {
        metadata: ObjectMeta {
            name: Some(secret.name.clone()),
            namespace: Some(namespace.to_string()),
            labels: Some(labels),
            ..Default::default()
        },
        type_: Some(secret.type_.clone()),
        data: Some(secret.data.iter().map(|(k, v)| (k.clone(), ByteString(v.as_bytes().to_vec()))).collect()),
        ..Default::default()
    }
}

/// Converts a Kubernetes Secret back into the pki form (non-UTF-8 values are skipped: pki
/// only writes text).
pub fn from_k8s(secret: &Secret) -> pki::Secret {
    let mut s = pki::Secret::new(
        secret.metadata.name.clone().unwrap_or_default(),
        secret.type_.clone().unwrap_or_else(|| "Opaque".into()),
    );
    for (k, v) in secret.data.iter().flatten() {
        if let Ok(text) = String::from_utf8(v.0.clone()) {
            s.data.insert(k.clone(), text);
        }
    }
    s.labels = secret.metadata.labels.clone().unwrap_or_default();
    s.labels.remove(MANAGED_BY_LABEL);
    s
}

/// ShootState entries from the `gardener` section (entries that are not pki secrets, or are
/// malformed, are ignored here and left in place).
pub fn entries_from_shootstate(state: &ShootState) -> Vec<ShootStateEntry> {
    state
        .spec
        .gardener
        .iter()
        .filter(|g| g.type_ != crate::shoot::backup::RECORD_TYPE)
        .filter_map(|g| {
            let data: BTreeMap<String, String> = serde_json::from_value(g.data.0.clone()).ok()?;
            Some(ShootStateEntry { name: g.name.clone(), type_: g.type_.clone(), data })
        })
        .collect()
}

/// The ShootState `gardener` section for the persistent secrets, replacing the pki entries
/// (those named in `managed`; one no longer in `persistent`, such as a previous CA after a
/// completed rotation, is dropped) and keeping any other entries.
pub fn merged_gardener_section(
    current: &[GardenerResourceData],
    persistent: &SecretSet,
    managed: &[String],
) -> Vec<GardenerResourceData> {
    let fresh: Vec<GardenerResourceData> = pki::shootstate::export(persistent)
        .into_iter()
        .map(|e| GardenerResourceData {
            name: e.name,
            type_: e.type_,
            data: AnyJson(serde_json::to_value(e.data).unwrap_or_default()),
            labels: BTreeMap::new(),
        })
        .collect();
    let mut out: Vec<GardenerResourceData> = current
        .iter()
        .filter(|c| !managed.contains(&c.name) && !fresh.iter().any(|f| f.name == c.name))
        .cloned()
        .collect();
    out.extend(fresh);
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// The ShootState entries this module owns: the persistent secrets of `configs`, and the SSH
/// key pairs whether configured or not (SSH access switched off drops them).
pub fn managed_names(configs: &[SecretConfig]) -> Vec<String> {
    let mut names = pki::shootstate::persistent_names(configs);
    let ssh = pki::shoot_set::names::SSH_KEYPAIR;
    for name in [ssh.to_string(), pki::config::old_name(ssh)] {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// The secrets that exist: those in the seed namespace, with the ShootState's persistent ones
/// winning (after a restart with a lost namespace, on a restore after migration, or after an
/// operation stopped between writing the ShootState and the seed: the ShootState is written
/// first, so its CAs and keys are the newest).
pub fn existing(seed_secrets: &[Secret], state: Option<&ShootState>) -> Result<SecretSet, pki::Error> {
    let mut set: SecretSet = seed_secrets.iter().map(from_k8s).collect();
    if let Some(state) = state {
        for secret in pki::shootstate::import(&entries_from_shootstate(state))?.iter() {
            if set.get(&secret.name).is_none_or(|s| s.data != secret.data) {
                set.insert(secret.clone());
            }
        }
    }
    Ok(set)
}

/// Plans, persists and applies the shoot's secrets, taking the rotation steps `rotation` asks
/// for (see [`crate::shoot::credentials::rotation`]). Returns the full set.
pub async fn reconcile(
    garden: &kube::Client,
    seed: &kube::Client,
    values: &ShootValues,
    configs: &[SecretConfig],
    rotation: Option<&ShootCredentialsRotation>,
    owner: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference>,
) -> Result<SecretSet, SecretsError> {
    let shoot = values.technical_id.to_string();
    let kube_err = |what: &str| {
        let shoot = shoot.clone();
        let what = what.to_string();
        move |source| SecretsError::Kube { what, shoot, source }
    };
    let secrets: Api<Secret> = Api::namespaced(seed.clone(), values.namespace());
    let listed = secrets
        .list(&ListParams::default().labels(&format!("{MANAGED_BY_LABEL}={MANAGED_BY}")))
        .await
        .map_err(kube_err("listing the secrets in the seed"))?;
    let states: Api<ShootState> = Api::namespaced(garden.clone(), &values.garden_namespace);
    let state = states.get_opt(&values.name).await.map_err(kube_err("reading the ShootState"))?;
    let existing =
        existing(&listed.items, state.as_ref()).map_err(|source| SecretsError::Pki { shoot: shoot.clone(), source })?;
    let pki_err = |source| SecretsError::Pki { shoot: shoot.clone(), source };
    let steps = crate::shoot::credentials::rotation::steps(rotation, configs, &existing).map_err(pki_err)?;
    let now = std::time::SystemTime::now();
    let plan = if steps.is_empty() {
        pki::manager::plan(configs, &existing, now)
    } else {
        tracing::info!(?steps, "taking credential rotation steps");
        pki::rotation::rotate(configs, &existing, &steps, now)
    }
    .map_err(pki_err)?;

    // Persist first: what is in the seed must always be recoverable from the garden.
    let persistent = pki::shootstate::persistent(configs, &plan.secrets);
    let current = state.as_ref().map(|s| s.spec.gardener.clone()).unwrap_or_default();
    let wanted = merged_gardener_section(&current, &persistent, &managed_names(configs));
    if state.is_none() || wanted != current {
        let mut desired = ShootState::new(&values.name, Default::default());
        desired.metadata.namespace = Some(values.garden_namespace.clone());
        desired.metadata.owner_references = owner.map(|o| vec![o]);
        desired.spec.gardener = wanted;
        let body = serde_json::json!({
            "apiVersion": "core.gardener.cloud/v1beta1",
            "kind": "ShootState",
            "metadata": { "name": values.name, "namespace": values.garden_namespace,
                          "ownerReferences": desired.metadata.owner_references },
            "spec": { "gardener": desired.spec.gardener },
        });
        states
            .patch(&values.name, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(&body))
            .await
            .map_err(kube_err("persisting secrets to the ShootState"))?;
    }

    let params = PatchParams::apply(FIELD_MANAGER).force();
    for secret in plan.secrets.iter() {
        let unchanged = existing.get(&secret.name).is_some_and(|e| e.data == secret.data && e.type_ == secret.type_)
            && listed.items.iter().any(|s| s.metadata.name.as_deref() == Some(secret.name.as_str()));
        if unchanged {
            continue;
        }
        secrets
            .patch(&secret.name, &params, &Patch::Apply(&to_k8s(secret, values.namespace())))
            .await
            .map_err(kube_err(&format!("applying Secret {}", secret.name)))?;
    }
    for name in &plan.obsolete {
        match secrets.delete(name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => return Err(kube_err(&format!("deleting obsolete Secret {name}"))(e)),
        }
    }
    Ok(plan.secrets)
}

/// A stable checksum of a secret's data, for pod annotations that roll workloads on change.
pub fn checksum(secret: &pki::Secret) -> String {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    for (k, v) in &secret.data {
        ctx.update(k.as_bytes());
        ctx.update(&[0]);
        ctx.update(v.as_bytes());
        ctx.update(&[0]);
    }
    ctx.finish().as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// Base64 of a text value, for user data and similar fields.
pub fn b64(text: &str) -> String {
    B64.encode(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn k8s_round_trip_keeps_data_and_type() {
        let s = pki::Secret::new("ca", "Opaque").with_data("ca.crt", "PEM").with_label("pki.gardener.cloud/kind", "ca");
        let k = to_k8s(&s, "shoot--dev--demo");
        assert_eq!(k.metadata.labels.as_ref().unwrap()[MANAGED_BY_LABEL], "gardenlet");
        assert_eq!(from_k8s(&k), s);
    }

    #[test]
    fn shootstate_section_replaces_pki_entries_and_keeps_others() {
        let other = GardenerResourceData {
            name: "ssh-keypair".into(),
            type_: "Opaque".into(),
            data: AnyJson(serde_json::json!({"id_rsa": "eA=="})),
            labels: BTreeMap::new(),
        };
        let stale = GardenerResourceData { name: "ca".into(), ..other.clone() };
        let rotated_away = GardenerResourceData { name: "ca-old".into(), ..other.clone() };
        let persistent: SecretSet = [pki::Secret::new("ca", "Opaque").with_data("ca.crt", "new")].into_iter().collect();
        let managed = ["ca".to_string(), "ca-old".to_string()];
        let merged = merged_gardener_section(&[other.clone(), stale, rotated_away], &persistent, &managed);
        assert_eq!(merged.len(), 2);
        assert_eq!(merged[0].name, "ca");
        assert_eq!(merged[0].data.0["ca.crt"], B64.encode("new"));
        assert_eq!(merged[1], other);
    }

    #[test]
    fn ssh_key_pairs_leave_the_shootstate_when_ssh_access_is_off() {
        let pair = |name: &str| GardenerResourceData {
            name: name.into(),
            type_: "Opaque".into(),
            data: AnyJson(serde_json::json!({"id_rsa": "eA=="})),
            labels: BTreeMap::new(),
        };
        let current = [pair("ssh-keypair"), pair("ssh-keypair-old")];
        let without_ssh = pki::shoot_set::shoot_set(&pki::shoot_set::ShootInputs::new(
            "shoot--p--s",
            "api.internal",
            "10.0.0.1".parse().unwrap(),
        ));
        let merged = merged_gardener_section(&current, &SecretSet::new(), &managed_names(&without_ssh));
        assert!(merged.is_empty(), "{merged:?}");
    }

    #[test]
    fn checksum_changes_with_data_only() {
        let a = pki::Secret::new("x", "Opaque").with_data("k", "v");
        let b = pki::Secret::new("x", "Opaque").with_data("k", "w");
        assert_eq!(checksum(&a), checksum(&a.clone()));
        assert_ne!(checksum(&a), checksum(&b));
    }
}
