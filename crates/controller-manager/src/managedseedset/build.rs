//! The objects of a replica, built from the set's templates (pure): the Shoot and ManagedSeed
//! `S-i` as server-side apply bodies, owned by the set (controller), labelled with the
//! templates' labels and the revision; and the revision itself, a hash of both templates.

use super::decide::{LABEL_REVISION, replica_name};
use api::core::Shoot;
use api::seedmanagement::{ManagedSeed, ManagedSeedSet, ShootReference, TemplateMetadata};
use kube::{Resource, ResourceExt};
use serde_json::{Value, json};

/// The revision of the set's templates: `<set>-<hash>`, the hash being FNV-32a of the templates'
/// JSON, spelled as Kubernetes spells `controller-revision-hash` values (decimal digits mapped
/// onto its safe alphabet). Stable across builds and toolchains, unlike `std`'s hasher, so an
/// upgrade of the controller does not roll every replica.
pub fn revision(set: &ManagedSeedSet) -> String {
    let templates = json!({"template": set.spec.template, "shootTemplate": set.spec.shoot_template});
    let bytes = templates.to_string().into_bytes();
    let hash = bytes.iter().fold(0x811c_9dc5_u32, |h, b| (h ^ u32::from(*b)).wrapping_mul(0x0100_0193));
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let safe: String = hash.to_string().bytes().map(|d| char::from(ALPHABET[usize::from(d - b'0')])).collect();
    format!("{}-{safe}", set.name_any())
}

fn metadata(set: &ManagedSeedSet, ordinal: i32, template: &TemplateMetadata, revision: &str) -> Value {
    let mut labels = template.labels.clone();
    labels.insert(LABEL_REVISION.into(), revision.into());
    let mut owner = set.controller_owner_ref(&());
    if let Some(o) = owner.as_mut() {
        o.block_owner_deletion = Some(true);
    }
    let mut meta = json!({
        "name": replica_name(&set.name_any(), ordinal),
        "namespace": set.namespace(),
        "labels": labels,
        "ownerReferences": owner.into_iter().collect::<Vec<_>>(),
    });
    if !template.annotations.is_empty() {
        meta["annotations"] = json!(template.annotations);
    }
    meta
}

/// The Shoot of replica `ordinal` at `revision`.
pub fn shoot(set: &ManagedSeedSet, ordinal: i32, revision: &str) -> Value {
    let t = &set.spec.shoot_template;
    json!({
        "apiVersion": Shoot::api_version(&()),
        "kind": Shoot::kind(&()),
        "metadata": metadata(set, ordinal, &t.metadata, revision),
        "spec": t.spec,
    })
}

/// The ManagedSeed of replica `ordinal` at `revision`, registering the Shoot of the same name.
pub fn managed_seed(set: &ManagedSeedSet, ordinal: i32, revision: &str) -> Value {
    let t = &set.spec.template;
    let mut spec = t.spec.clone();
    spec.shoot = Some(ShootReference { name: replica_name(&set.name_any(), ordinal) });
    json!({
        "apiVersion": ManagedSeed::api_version(&()),
        "kind": ManagedSeed::kind(&()),
        "metadata": metadata(set, ordinal, &t.metadata, revision),
        "spec": spec,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use api::seedmanagement::{ManagedSeedSetSpec, ManagedSeedSpec, ManagedSeedTemplate, ShootTemplate};

    fn set() -> ManagedSeedSet {
        let labels: std::collections::BTreeMap<String, String> =
            [("foo".to_string(), "bar".to_string())].into_iter().collect();
        let mut s = ManagedSeedSet::new(
            "crazy-botany",
            ManagedSeedSetSpec {
                replicas: Some(2),
                template: ManagedSeedTemplate {
                    metadata: TemplateMetadata { labels: labels.clone(), ..Default::default() },
                    spec: ManagedSeedSpec { gardenlet: Some(Default::default()), ..Default::default() },
                },
                shoot_template: ShootTemplate {
                    metadata: TemplateMetadata { labels, ..Default::default() },
                    spec: json!({"region": "local", "provider": {"type": "local"}}).into(),
                },
                ..Default::default()
            },
        );
        s.metadata.namespace = Some("garden".into());
        s.metadata.uid = Some("uid-1".into());
        s
    }

    #[test]
    fn revision_is_stable_and_follows_the_templates_only() {
        let s = set();
        let r = revision(&s);
        assert_eq!(r, revision(&s));
        assert!(r.starts_with("crazy-botany-"), "{r}");
        assert!(r["crazy-botany-".len()..].bytes().all(|b| b"bcdfghjklmnpqrstvwxz2456789".contains(&b)), "{r}");
        let mut scaled = s.clone();
        scaled.spec.replicas = Some(5);
        scaled.spec.update_strategy = Some(Default::default());
        assert_eq!(revision(&scaled), r, "replicas and strategy are no template change");
        let mut changed = s.clone();
        changed.spec.shoot_template.spec = json!({"region": "other"}).into();
        assert_ne!(revision(&changed), r);
        let mut relabelled = s;
        relabelled.spec.template.metadata.labels.insert("x".into(), "y".into());
        assert_ne!(revision(&relabelled), r);
    }

    #[test]
    fn replicas_are_named_labelled_and_owned() {
        let s = set();
        let shoot = shoot(&s, 3, "rev-a");
        assert_eq!(shoot["kind"], "Shoot");
        assert_eq!(shoot["metadata"]["name"], "crazy-botany-3");
        assert_eq!(shoot["metadata"]["namespace"], "garden");
        assert_eq!(shoot["metadata"]["labels"], json!({"foo": "bar", "controller-revision-hash": "rev-a"}));
        let owner = &shoot["metadata"]["ownerReferences"][0];
        assert_eq!(owner["kind"], "ManagedSeedSet");
        assert_eq!(owner["uid"], "uid-1");
        assert_eq!(owner["controller"], true);
        assert_eq!(owner["blockOwnerDeletion"], true);
        assert_eq!(shoot["spec"]["region"], "local");
        assert!(shoot["metadata"].get("annotations").is_none());

        let ms = managed_seed(&s, 3, "rev-a");
        assert_eq!(ms["kind"], "ManagedSeed");
        assert_eq!(ms["metadata"]["name"], "crazy-botany-3");
        assert_eq!(ms["spec"]["shoot"]["name"], "crazy-botany-3");
        assert_eq!(ms["metadata"]["labels"]["controller-revision-hash"], "rev-a");
        assert!(ms["spec"].get("gardenlet").is_some());
    }
}
