//! `core.gardener.cloud/v1beta1`: the objects users and operators write in the garden.
//!
//! Field names follow the reference API exactly; where the GEP-15 example manifests spell a
//! field differently, both spellings are accepted (see the module docs of [`seed`], [`shoot`]
//! and [`backup`]).
pub mod backup;
pub mod cloudprofile;
pub mod controller;
pub mod exposureclass;
pub mod internalsecret;
pub mod namespacedcloudprofile;
pub mod project;
pub mod quota;
pub mod secretbinding;
pub mod seed;
pub mod shared;
pub mod shoot;
pub mod shootstate;
pub mod v1;

pub use backup::{BackupBucket, BackupBucketSpec, BackupBucketStatus, BackupEntry, BackupEntrySpec, BackupEntryStatus};
pub use cloudprofile::{CloudProfile, CloudProfileSpec};
pub use controller::{
    ControllerDeployment, ControllerDeploymentFields, ControllerInstallation, ControllerInstallationSpec,
    ControllerInstallationStatus, ControllerRegistration, ControllerRegistrationSpec,
};
pub use exposureclass::{ExposureClass, ExposureClassFields};
pub use internalsecret::{InternalSecret, InternalSecretFields};
pub use namespacedcloudprofile::{NamespacedCloudProfile, NamespacedCloudProfileSpec, NamespacedCloudProfileStatus};
pub use project::{Project, ProjectSpec, ProjectStatus};
pub use quota::{Quota, QuotaSpec};
pub use secretbinding::{SecretBinding, SecretBindingFields};
pub use seed::{Seed, SeedSpec, SeedStatus};
pub use shared::{Extension, SeedSelector, Toleration};
pub use shoot::{Shoot, ShootSpec, ShootStatus};
pub use shootstate::{ShootState, ShootStateSpec};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

/// The API group of these kinds.
pub const GROUP: &str = "core.gardener.cloud";
/// The API version (`group/version`) of these kinds.
pub const API_VERSION: &str = "core.gardener.cloud/v1beta1";

/// The CRDs of this group.
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![
        CloudProfile::crd(),
        Project::crd(),
        SecretBinding::crd(),
        Quota::crd(),
        Seed::crd(),
        Shoot::crd(),
        ShootState::crd(),
        BackupBucket::crd(),
        BackupEntry::crd(),
        ControllerRegistration::crd(),
        v1::controller_deployment_crd(),
        ControllerInstallation::crd(),
        ExposureClass::crd(),
        InternalSecret::crd(),
        NamespacedCloudProfile::crd(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The CRD as published by `crds::all()`.
    fn crd_of(plural: &str) -> CustomResourceDefinition {
        crate::crds::all()
            .into_iter()
            .find(|c| c.spec.group == "core.gardener.cloud" && c.spec.names.plural == plural)
            .unwrap()
    }

    #[test]
    fn every_kind_has_group_plural_and_scope() {
        let expected = [
            ("CloudProfile", "cloudprofiles", "Cluster"),
            ("Project", "projects", "Cluster"),
            ("SecretBinding", "secretbindings", "Namespaced"),
            ("Quota", "quotas", "Namespaced"),
            ("Seed", "seeds", "Cluster"),
            ("Shoot", "shoots", "Namespaced"),
            ("ShootState", "shootstates", "Namespaced"),
            ("BackupBucket", "backupbuckets", "Cluster"),
            ("BackupEntry", "backupentries", "Namespaced"),
            ("ControllerRegistration", "controllerregistrations", "Cluster"),
            ("ControllerDeployment", "controllerdeployments", "Cluster"),
            ("ControllerInstallation", "controllerinstallations", "Cluster"),
            ("ExposureClass", "exposureclasses", "Cluster"),
            ("InternalSecret", "internalsecrets", "Namespaced"),
            ("NamespacedCloudProfile", "namespacedcloudprofiles", "Namespaced"),
        ];
        let all = crds();
        assert_eq!(all.len(), expected.len());
        for (kind, plural, scope) in expected {
            let crd = crd_of(plural);
            assert_eq!(crd.spec.group, GROUP, "{kind}");
            assert_eq!(crd.spec.names.kind, kind);
            assert_eq!(crd.spec.scope, scope, "{kind}");
            // ControllerDeployment also serves v1 (see `v1`); v1beta1 is stored everywhere.
            let served: Vec<_> = crd.spec.versions.iter().map(|v| v.name.as_str()).collect();
            let expected: &[&str] = if kind == "ControllerDeployment" { &["v1beta1", "v1"] } else { &["v1beta1"] };
            assert_eq!(served, expected, "{kind}");
            assert!(crd.spec.versions[0].storage, "{kind}");
            assert_eq!(crd.metadata.name.as_deref(), Some(format!("{plural}.{GROUP}").as_str()));
        }
    }

    #[test]
    fn status_subresource_exactly_on_kinds_with_a_status() {
        let with_status = [
            "projects",
            "seeds",
            "shoots",
            "backupbuckets",
            "backupentries",
            "controllerinstallations",
            "namespacedcloudprofiles",
        ];
        for crd in crds() {
            let plural = crd.spec.names.plural.clone();
            let v = &crd.spec.versions[0];
            let has_subresource = v.subresources.as_ref().and_then(|s| s.status.as_ref()).is_some();
            let props = v
                .schema
                .as_ref()
                .and_then(|s| s.open_api_v3_schema.as_ref())
                .and_then(|s| s.properties.as_ref())
                .unwrap();
            assert_eq!(has_subresource, with_status.contains(&plural.as_str()), "{plural}");
            assert_eq!(props.contains_key("status"), has_subresource, "{plural}");
        }
    }

    fn columns(plural: &str) -> Vec<(String, String, String)> {
        crd_of(plural).spec.versions[0]
            .additional_printer_columns
            .clone()
            .unwrap_or_default()
            .into_iter()
            .map(|c| (c.name, c.type_, c.json_path))
            .collect()
    }

    fn owned(cols: &[(&str, &str, &str)]) -> Vec<(String, String, String)> {
        cols.iter().map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string())).collect()
    }

    #[test]
    fn shoot_printer_columns() {
        assert_eq!(
            columns("shoots"),
            owned(&[
                ("CloudProfile", "string", ".spec.cloudProfileName"),
                ("Provider", "string", ".spec.provider.type"),
                ("Region", "string", ".spec.region"),
                ("K8S Version", "string", ".spec.kubernetes.version"),
                ("Seed", "string", ".spec.seedName"),
                ("Operation", "string", ".status.lastOperation.state"),
                ("Progress", "integer", ".status.lastOperation.progress"),
                ("Age", "date", ".metadata.creationTimestamp"),
            ])
        );
    }

    #[test]
    fn seed_printer_columns() {
        assert_eq!(
            columns("seeds"),
            owned(&[
                ("Status", "string", ".status.conditions[?(@.type==\"GardenletReady\")].status"),
                ("Provider", "string", ".spec.provider.type"),
                ("Region", "string", ".spec.provider.region"),
                ("Age", "date", ".metadata.creationTimestamp"),
            ])
        );
    }

    #[test]
    fn no_spec_kinds_have_top_level_fields() {
        for (plural, fields) in [
            ("secretbindings", &["secretRef", "quotas", "provider"][..]),
            ("controllerdeployments", &["type", "providerConfig"][..]),
        ] {
            let crd = crd_of(plural);
            let props = crd.spec.versions[0]
                .schema
                .as_ref()
                .and_then(|s| s.open_api_v3_schema.as_ref())
                .and_then(|s| s.properties.as_ref())
                .unwrap();
            assert!(!props.contains_key("spec"), "{plural}");
            for f in fields {
                assert!(props.contains_key(*f), "{plural} lacks {f}");
            }
        }
    }

    fn schema_of(crd: &CustomResourceDefinition) -> serde_json::Value {
        serde_json::to_value(crd).unwrap()["spec"]["versions"][0]["schema"]["openAPIV3Schema"].clone()
    }

    type JsonMap = serde_json::Map<String, serde_json::Value>;

    /// The schema nodes (not literal values) at and below `node`, with their paths.
    fn nodes(path: &str, node: &serde_json::Value, out: &mut Vec<(String, JsonMap)>) {
        let Some(obj) = node.as_object() else { return };
        out.push((path.to_string(), obj.clone()));
        if let Some(props) = obj.get("properties").and_then(|p| p.as_object()) {
            for (name, child) in props {
                nodes(&format!("{path}.{name}"), child, out);
            }
        }
        for key in ["items", "additionalProperties"] {
            if let Some(child) = obj.get(key) {
                nodes(&format!("{path}[{key}]"), child, out);
            }
        }
        for key in ["anyOf", "oneOf", "allOf"] {
            if let Some(children) = obj.get(key).and_then(|c| c.as_array()) {
                children.iter().for_each(|c| nodes(&format!("{path}({key})"), c, out));
            }
        }
    }

    #[test]
    fn schemas_are_structural_and_acceptable_to_kube_1_20() {
        // Every group's CRDs, as `crds::all()` publishes them (after the compatibility pass).
        for crd in crate::crds::all() {
            let kind = crd.spec.names.kind.clone();
            let mut all = Vec::new();
            nodes("", &schema_of(&crd), &mut all);
            assert!(all.len() > 3, "{kind}");
            for (path, obj) in all {
                let typed = obj.contains_key("type")
                    || obj.get("x-kubernetes-preserve-unknown-fields") == Some(&serde_json::json!(true))
                    || obj.get("x-kubernetes-int-or-string") == Some(&serde_json::json!(true));
                assert!(typed, "{kind}: schema without type at {path}: {obj:?}");
                assert!(!obj.contains_key("$ref"), "{kind}: $ref at {path}");
                for key in ["anyOf", "oneOf", "allOf"] {
                    assert!(!obj.contains_key(key), "{kind}: {key} at {path}");
                }
                if let Some(values) = obj.get("enum").and_then(|e| e.as_array()) {
                    assert!(!values.iter().any(|v| v.is_null()), "{kind}: null in enum at {path}");
                }
                assert_ne!(obj.get("default"), Some(&serde_json::json!("")), "{kind}: default '' at {path}");
            }
        }
    }

    #[test]
    fn enumerations_are_validated_by_the_schema() {
        let shoot = schema_of(&crd_of("shoots"));
        let purpose = &shoot["properties"]["spec"]["properties"]["purpose"]["enum"];
        assert_eq!(
            purpose,
            &serde_json::json!(["evaluation", "testing", "development", "production", "infrastructure"])
        );
        let project = schema_of(&crd_of("projects"));
        let phase = &project["properties"]["status"]["properties"]["phase"]["enum"];
        assert_eq!(phase, &serde_json::json!(["Pending", "Ready", "Terminating", "Failed"]));
        let profile = schema_of(&crd_of("cloudprofiles"));
        let classification = &profile["properties"]["spec"]["properties"]["kubernetes"]["properties"]["versions"]["items"]
            ["properties"]["classification"]["enum"];
        assert_eq!(classification, &serde_json::json!(["preview", "supported", "deprecated"]));
    }

    #[test]
    fn acronym_fields_use_reference_spelling() {
        let shoot = schema_of(&crd_of("shoots"));
        let status = &shoot["properties"]["status"]["properties"];
        assert!(status.get("technicalID").is_some(), "{status}");
        assert!(status.get("uid").is_some());
        let spec = &shoot["properties"]["spec"]["properties"];
        let oidc = &spec["kubernetes"]["properties"]["kubeAPIServer"]["properties"]["oidcConfig"]["properties"];
        assert!(oidc.get("clientID").is_some() && oidc.get("issuerURL").is_some(), "{oidc}");
        let seed = schema_of(&crd_of("seeds"));
        assert!(seed["properties"]["spec"]["properties"]["networks"]["properties"].get("blockCIDRs").is_some());
    }

    #[test]
    fn short_names_and_categories() {
        let names = |p: &str| crd_of(p).spec.names;
        assert_eq!(names("cloudprofiles").short_names, Some(vec!["cprofile".to_string(), "cpfl".to_string()]));
        assert_eq!(names("secretbindings").short_names, Some(vec!["sb".to_string()]));
        assert_eq!(names("quotas").short_names, Some(vec!["squota".to_string()]));
        for p in ["cloudprofiles", "projects", "secretbindings", "quotas", "seeds", "shoots"] {
            assert_eq!(names(p).categories, Some(vec!["gardener".to_string()]), "{p}");
        }
    }
}
