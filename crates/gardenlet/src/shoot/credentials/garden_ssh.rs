//! The shoot's SSH key pairs in its project namespace, as Gardener publishes them: Secret
//! `<shoot>.ssh-keypair` with `id_rsa` and `id_rsa.pub` (what project members use to log in to
//! the nodes as `gardener`, through a Bastion), and `<shoot>.ssh-keypair.old` with the previous
//! pair while the nodes still accept it (until the next rotation). Owned by the Shoot; written
//! only when the content changed; removed when the set no longer has the pair (SSH access
//! switched off). [`desired`] is pure; [`publish`] reads, compares and applies.

use crate::shoot::credentials::Project;
use crate::shoot::credentials::secrets::SecretsError;
use api::helpers::names::{shoot_ssh_keypair, shoot_ssh_keypair_old};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams};
use pki::SecretSet;
use pki::data_keys::{SSH_PRIVATE_KEY, SSH_PUBLIC_KEY};
use pki::shoot_set::names::SSH_KEYPAIR;
use serde_json::json;
use std::collections::BTreeMap;

const FIELD_MANAGER: &str = "gardenlet-garden-ssh";

/// The garden Secret's data for the pair `name` of `set`, or `None` when the set lacks it.
fn data(set: &SecretSet, name: &str) -> Option<BTreeMap<String, ByteString>> {
    let one = |key: &str| Some((key.to_string(), ByteString(set.value(name, key)?.as_bytes().to_vec())));
    Some(BTreeMap::from([one(SSH_PRIVATE_KEY)?, one(SSH_PUBLIC_KEY)?]))
}

/// The garden Secrets of shoot `shoot`: name and data, `None` for one that must not exist.
pub fn desired(shoot: &str, set: &SecretSet) -> [(String, Option<BTreeMap<String, ByteString>>); 2] {
    [
        (shoot_ssh_keypair(shoot), data(set, SSH_KEYPAIR)),
        (shoot_ssh_keypair_old(shoot), data(set, &pki::config::old_name(SSH_KEYPAIR))),
    ]
}

/// Writes (or removes) the key-pair Secrets of the shoot in its project namespace as `set` says.
pub async fn publish(project: &Project<'_>, set: &SecretSet) -> Result<(), SecretsError> {
    let (namespace, owner, err) = (project.namespace, project.owner.as_ref(), |what| project.err(what));
    let secrets: Api<Secret> = Api::namespaced(project.garden.clone(), namespace);
    let params = PatchParams::apply(FIELD_MANAGER).force();
    for (name, want) in desired(project.shoot, set) {
        let current = secrets.get_opt(&name).await.map_err(err(format!("reading Secret {name}")))?;
        match want {
            Some(want) if current.as_ref().and_then(|c| c.data.as_ref()) != Some(&want) => {
                let body = json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                    "metadata": {"name": name, "namespace": namespace, "ownerReferences": owner.map(|o| vec![o])},
                    "data": want});
                secrets
                    .patch(&name, &params, &Patch::Apply(&body))
                    .await
                    .map_err(err(format!("applying Secret {name}")))?;
            }
            None if current.is_some() => match secrets.delete(&name, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => return Err(err(format!("deleting Secret {name}"))(e)),
            },
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

    use super::*;
    use pki::Secret as PkiSecret;

    fn pair(name: &str, tag: &str) -> PkiSecret {
        PkiSecret::new(name, "Opaque")
            .with_data(SSH_PRIVATE_KEY, format!("PRIVATE {tag}"))
            .with_data(SSH_PUBLIC_KEY, format!("ssh-ed25519 {tag}"))
            .with_data(pki::data_keys::SSH_ROTATION, "")
    }

    #[test]
    fn the_pairs_are_published_under_the_reference_names_without_the_rotation_stamp() {
        let mut set = SecretSet::new();
        set.insert(pair("ssh-keypair", "new"));
        let [(name, current), (old_name, old)] = desired("demo", &set);
        assert_eq!((name.as_str(), old_name.as_str()), ("demo.ssh-keypair", "demo.ssh-keypair.old"));
        let current = current.unwrap();
        assert_eq!(current.keys().collect::<Vec<_>>(), ["id_rsa", "id_rsa.pub"]);
        assert_eq!(current["id_rsa.pub"].0, b"ssh-ed25519 new");
        assert_eq!(old, None, "no previous pair before the first rotation");

        set.insert(pair("ssh-keypair-old", "old"));
        let [_, (_, old)] = desired("demo", &set);
        assert_eq!(old.unwrap()["id_rsa"].0, b"PRIVATE old");
        assert!(desired("demo", &SecretSet::new()).iter().all(|(_, d)| d.is_none()), "no SSH access: none");
    }
}
