//! The profile a NamespacedCloudProfile stands for: its parent CloudProfile's spec merged with
//! the namespaced additions, as Gardener computes `status.cloudProfileSpec`. Pure.
//!
//! * Kubernetes versions: only the parent's versions; a namespaced entry overrides the
//!   expiration date (and, when given, the classification) of the version of the same name.
//!   Entries for versions the parent does not offer are ignored here (admission refuses them).
//! * Machine images: merged by name. A version the parent has gets its expiration date (and
//!   classification) overridden; a new version or a new image is added as written.
//! * Machine types and volume types: added when the parent has none of that name (admission
//!   refuses duplicates; if one slips through, the parent's wins).
//! * CA bundle: the parent's followed by the namespaced one.
//! * Provider config: the namespaced one replaces the parent's when set.

use crate::core::cloudprofile::{CloudProfileSpec, ExpirableVersion};
use crate::core::namespacedcloudprofile::NamespacedCloudProfileSpec;

fn override_version(target: &mut ExpirableVersion, with: &ExpirableVersion) {
    if with.expiration_date.is_some() {
        target.expiration_date = with.expiration_date.clone();
    }
    if with.classification.is_some() {
        target.classification = with.classification;
    }
}

/// `parent` with `child`'s additions and overrides.
pub fn merge(parent: &CloudProfileSpec, child: &NamespacedCloudProfileSpec) -> CloudProfileSpec {
    let mut out = parent.clone();
    if let Some(k8s) = &child.kubernetes {
        for v in &k8s.versions {
            if let Some(target) = out.kubernetes.versions.iter_mut().find(|p| p.version == v.version) {
                override_version(target, v);
            }
        }
    }
    for image in &child.machine_images {
        match out.machine_images.iter_mut().find(|p| p.name == image.name) {
            None => out.machine_images.push(image.clone()),
            Some(target) => {
                for v in &image.versions {
                    match target.versions.iter_mut().find(|p| p.expirable.version == v.expirable.version) {
                        Some(existing) => override_version(&mut existing.expirable, &v.expirable),
                        None => target.versions.push(v.clone()),
                    }
                }
            }
        }
    }
    for t in &child.machine_types {
        if !out.machine_types.iter().any(|p| p.name == t.name) {
            out.machine_types.push(t.clone());
        }
    }
    for t in &child.volume_types {
        if !out.volume_types.iter().any(|p| p.name == t.name) {
            out.volume_types.push(t.clone());
        }
    }
    out.ca_bundle = match (&parent.ca_bundle, &child.ca_bundle) {
        (Some(p), Some(c)) => Some(format!("{}\n{}", p.trim_end(), c)),
        (p, c) => c.clone().or_else(|| p.clone()),
    };
    if child.provider_config.is_some() {
        out.provider_config = child.provider_config.clone();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::cloudprofile::VersionClassification;

    fn parent() -> CloudProfileSpec {
        serde_yaml::from_str(
            r#"
type: local
caBundle: PARENT
kubernetes:
  versions:
  - {version: 1.21.0, classification: preview}
  - {version: 1.20.2, expirationDate: "2026-01-01T00:00:00Z", classification: deprecated}
machineImages:
- name: local
  versions:
  - {version: 1.0.0, expirationDate: "2026-01-01T00:00:00Z"}
machineTypes:
- {name: local, cpu: "1", gpu: "0", memory: 1Gi}
volumeTypes:
- {name: standard, class: standard}
"#,
        )
        .unwrap()
    }

    #[test]
    fn overrides_and_additions() {
        let child: NamespacedCloudProfileSpec = serde_yaml::from_str(
            r#"
parent: {kind: CloudProfile, name: local}
caBundle: CHILD
kubernetes:
  versions:
  - {version: 1.20.2, expirationDate: "2030-01-01T00:00:00Z"}
  - {version: 1.99.0, expirationDate: "2030-01-01T00:00:00Z"}
machineImages:
- name: local
  versions:
  - {version: 1.0.0, expirationDate: "2030-01-01T00:00:00Z"}
  - {version: 2.0.0, cri: [{name: containerd}]}
- name: other
  versions: [{version: 0.1.0}]
machineTypes:
- {name: local-large, cpu: "4", gpu: "0", memory: 8Gi}
- {name: local, cpu: "64", gpu: "0", memory: 1Ti}
volumeTypes:
- {name: fast, class: premium}
"#,
        )
        .unwrap();
        let merged = merge(&parent(), &child);
        let k8s: Vec<_> = merged
            .kubernetes
            .versions
            .iter()
            .map(|v| (v.version.as_str(), v.expiration_date.as_ref().map(|t| t.0.to_string()), v.classification))
            .collect();
        assert_eq!(
            k8s,
            vec![
                ("1.21.0", None, Some(VersionClassification::Preview)),
                ("1.20.2", Some("2030-01-01T00:00:00Z".into()), Some(VersionClassification::Deprecated)),
            ],
            "an override of the parent's version; no version the parent lacks"
        );
        let images: Vec<_> = merged
            .machine_images
            .iter()
            .map(|i| (i.name.as_str(), i.versions.iter().map(|v| v.expirable.version.as_str()).collect::<Vec<_>>()))
            .collect();
        assert_eq!(images, vec![("local", vec!["1.0.0", "2.0.0"]), ("other", vec!["0.1.0"])]);
        assert_eq!(
            merged.machine_images[0].versions[0].expirable.expiration_date.as_ref().map(|t| t.0.to_string()),
            Some("2030-01-01T00:00:00Z".into())
        );
        assert_eq!(merged.machine_images[0].versions[1].cri[0].name, "containerd");
        let types: Vec<_> = merged.machine_types.iter().map(|t| (t.name.as_str(), t.cpu.0.as_str())).collect();
        assert_eq!(types, vec![("local", "1"), ("local-large", "4")], "the parent's type wins a clash");
        assert_eq!(merged.volume_types.len(), 2);
        assert_eq!(merged.ca_bundle.as_deref(), Some("PARENT\nCHILD"));
        assert_eq!(merged.type_, "local");
    }

    #[test]
    fn nothing_added_is_the_parent() {
        let child = NamespacedCloudProfileSpec::default();
        assert_eq!(merge(&parent(), &child), parent());
    }
}
