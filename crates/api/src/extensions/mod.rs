//! `extensions.gardener.cloud/v1alpha1`: the objects gardenlet creates in a seed and provider
//! extensions reconcile.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

pub mod backupbucket;
pub mod backupentry;
pub mod bastion;
pub mod cluster;
pub mod common;
pub mod containerruntime;
pub mod controlplane;
pub mod dnsrecord;
pub mod extension;
pub mod infrastructure;
pub mod network;
pub mod operatingsystemconfig;
pub mod worker;

pub use backupbucket::{BackupBucket, BackupBucketSpec, BackupBucketStatus};
pub use backupentry::{BackupEntry, BackupEntrySpec, BackupEntryStatus};
pub use bastion::{Bastion, BastionSpec, BastionStatus};
pub use cluster::{Cluster, ClusterSpec};
pub use common::{DefaultSpec, DefaultStatus, ExtensionClass, ExtensionKind};
pub use containerruntime::{ContainerRuntime, ContainerRuntimeSpec, ContainerRuntimeStatus};
pub use controlplane::{ControlPlane, ControlPlaneSpec, ControlPlaneStatus};
pub use dnsrecord::{DNSRecord, DNSRecordSpec, DNSRecordStatus};
pub use extension::{Extension, ExtensionSpec, ExtensionStatus};
pub use infrastructure::{Infrastructure, InfrastructureSpec, InfrastructureStatus};
pub use network::{Network, NetworkSpec, NetworkStatus};
pub use operatingsystemconfig::{OperatingSystemConfig, OperatingSystemConfigSpec, OperatingSystemConfigStatus};
pub use worker::{Worker, WorkerSpec, WorkerStatus};

/// The CRDs of this group.
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![
        Infrastructure::crd(),
        ControlPlane::crd(),
        Worker::crd(),
        Network::crd(),
        OperatingSystemConfig::crd(),
        DNSRecord::crd(),
        BackupBucket::crd(),
        BackupEntry::crd(),
        Bastion::crd(),
        ContainerRuntime::crd(),
        Extension::crd(),
        Cluster::crd(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crds_have_group_plural_and_scope() {
        let want = [
            ("Infrastructure", "infrastructures", "Namespaced"),
            ("ControlPlane", "controlplanes", "Namespaced"),
            ("Worker", "workers", "Namespaced"),
            ("Network", "networks", "Namespaced"),
            ("OperatingSystemConfig", "operatingsystemconfigs", "Namespaced"),
            ("DNSRecord", "dnsrecords", "Namespaced"),
            ("BackupBucket", "backupbuckets", "Cluster"),
            ("BackupEntry", "backupentries", "Cluster"),
            ("Bastion", "bastions", "Namespaced"),
            ("ContainerRuntime", "containerruntimes", "Namespaced"),
            ("Extension", "extensions", "Namespaced"),
            ("Cluster", "clusters", "Cluster"),
        ];
        let crds = crds();
        assert_eq!(crds.len(), want.len());
        for (crd, (kind, plural, scope)) in crds.iter().zip(want) {
            assert_eq!(crd.spec.group, "extensions.gardener.cloud");
            assert_eq!(crd.spec.names.kind, kind);
            assert_eq!(crd.spec.names.plural, plural);
            assert_eq!(crd.spec.scope, scope, "{kind}");
            assert_eq!(crd.metadata.name.as_deref(), Some(format!("{plural}.extensions.gardener.cloud").as_str()));
            let version = &crd.spec.versions[0];
            assert_eq!(version.name, "v1alpha1");
            let has_status = version.subresources.as_ref().and_then(|s| s.status.as_ref()).is_some();
            assert_eq!(has_status, kind != "Cluster", "{kind} status subresource");
        }
    }

    #[test]
    fn extension_kinds_are_in_the_extensions_category() {
        for crd in crds().iter().filter(|c| c.spec.names.kind != "Cluster") {
            let categories = crd.spec.names.categories.clone().unwrap_or_default();
            assert_eq!(categories, vec!["extensions".to_string()], "{}", crd.spec.names.kind);
        }
    }

    #[test]
    fn finalizers_are_per_kind() {
        assert_eq!(Infrastructure::finalizer(), "extensions.gardener.cloud/infrastructure");
        assert_eq!(ControlPlane::finalizer(), "extensions.gardener.cloud/controlplane");
        assert_eq!(Worker::finalizer(), "extensions.gardener.cloud/worker");
        assert_eq!(Network::finalizer(), "extensions.gardener.cloud/network");
        assert_eq!(OperatingSystemConfig::finalizer(), "extensions.gardener.cloud/operatingsystemconfig");
        assert_eq!(DNSRecord::finalizer(), "extensions.gardener.cloud/dnsrecord");
        assert_eq!(BackupBucket::finalizer(), "extensions.gardener.cloud/backupbucket");
        assert_eq!(BackupEntry::finalizer(), "extensions.gardener.cloud/backupentry");
        assert_eq!(Bastion::finalizer(), "extensions.gardener.cloud/bastion");
        assert_eq!(ContainerRuntime::finalizer(), "extensions.gardener.cloud/containerruntime");
        assert_eq!(Extension::finalizer(), "extensions.gardener.cloud/extension");
    }

    #[test]
    fn default_spec_and_status_are_reachable_through_the_trait() {
        let mut dns = DNSRecord::new(
            "api",
            DNSRecordSpec {
                default: DefaultSpec { type_: "local".into(), ..Default::default() },
                name: "api.demo.example.com".into(),
                values: vec!["10.0.0.1".into()],
                ..Default::default()
            },
        );
        assert_eq!(dns.default_spec().type_, "local");
        assert!(dns.default_status().is_none());
        dns.ext_status_mut().get_or_insert_with(Default::default).default.observed_generation = Some(3);
        assert_eq!(dns.default_status().and_then(|s| s.observed_generation), Some(3));
    }

    #[test]
    fn acronym_fields_use_reference_spelling() {
        let crd = serde_json::to_value(Network::crd()).unwrap_or_default();
        let props = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"];
        assert!(props.get("podCIDR").is_some(), "{props}");
        assert!(props.get("serviceCIDR").is_some());
        let crd = serde_json::to_value(Infrastructure::crd()).unwrap_or_default();
        let props = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"];
        assert!(props.get("egressCIDRs").is_some(), "{props}");
    }
}
