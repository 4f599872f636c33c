//! Feature gates Kubernetes 1.20 knows, for refusing unknown ones (as Gardener's
//! `pkg/utils/validation/features` does) and values a gate is locked to. Derived from the
//! Kubernetes v1.20 source: `pkg/features/kube_features.go`,
//! `staging/src/k8s.io/apiserver/pkg/features/kube_features.go` and
//! `staging/src/k8s.io/controller-manager/pkg/features/kube_features.go` (every Kubernetes
//! binary registers the union; `AllAlpha` and `AllBeta` are the feature gate's own switches).

use crate::field::{ErrorList, FieldError, Path};
use std::collections::BTreeMap;

/// The only Kubernetes minor version this table describes.
pub const MINOR: (u64, u64) = (1, 20);

/// One feature gate of Kubernetes 1.20.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gate {
    pub name: &'static str,
    /// Its default value.
    pub default: bool,
    /// Whether it is locked to its default (`LockToDefault`: setting the other value fails the
    /// component's start).
    pub locked: bool,
}

/// The feature gate's own switches, accepted by every component.
const SWITCHES: &[&str] = &["AllAlpha", "AllBeta"];

/// Every gate of Kubernetes 1.20, sorted by name.
pub const GATES: &[Gate] = &[
    Gate { name: "APIListChunking", default: true, locked: false },
    Gate { name: "APIPriorityAndFairness", default: true, locked: false },
    Gate { name: "APIResponseCompression", default: true, locked: false },
    Gate { name: "APIServerIdentity", default: false, locked: false },
    Gate { name: "AdvancedAuditing", default: true, locked: false },
    Gate { name: "AllowInsecureBackendProxy", default: true, locked: false },
    Gate { name: "AnyVolumeDataSource", default: false, locked: false },
    Gate { name: "AppArmor", default: true, locked: false },
    Gate { name: "AttachVolumeLimit", default: true, locked: true },
    Gate { name: "BalanceAttachedNodeVolumes", default: false, locked: false },
    Gate { name: "BlockVolume", default: true, locked: true },
    Gate { name: "BoundServiceAccountTokenVolume", default: false, locked: false },
    Gate { name: "CPUManager", default: true, locked: false },
    Gate { name: "CRIContainerLogRotation", default: true, locked: false },
    Gate { name: "CSIBlockVolume", default: true, locked: true },
    Gate { name: "CSIDriverRegistry", default: true, locked: true },
    Gate { name: "CSIInlineVolume", default: true, locked: false },
    Gate { name: "CSIMigration", default: true, locked: false },
    Gate { name: "CSIMigrationAWS", default: false, locked: false },
    Gate { name: "CSIMigrationAWSComplete", default: false, locked: false },
    Gate { name: "CSIMigrationAzureDisk", default: false, locked: false },
    Gate { name: "CSIMigrationAzureDiskComplete", default: false, locked: false },
    Gate { name: "CSIMigrationAzureFile", default: false, locked: false },
    Gate { name: "CSIMigrationAzureFileComplete", default: false, locked: false },
    Gate { name: "CSIMigrationGCE", default: false, locked: false },
    Gate { name: "CSIMigrationGCEComplete", default: false, locked: false },
    Gate { name: "CSIMigrationOpenStack", default: false, locked: false },
    Gate { name: "CSIMigrationOpenStackComplete", default: false, locked: false },
    Gate { name: "CSIMigrationvSphere", default: false, locked: false },
    Gate { name: "CSIMigrationvSphereComplete", default: false, locked: false },
    Gate { name: "CSINodeInfo", default: true, locked: true },
    Gate { name: "CSIServiceAccountToken", default: false, locked: false },
    Gate { name: "CSIStorageCapacity", default: false, locked: false },
    Gate { name: "CSIVolumeFSGroupPolicy", default: true, locked: false },
    Gate { name: "ConfigurableFSGroupPolicy", default: true, locked: false },
    Gate { name: "CronJobControllerV2", default: false, locked: false },
    Gate { name: "CustomCPUCFSQuotaPeriod", default: false, locked: false },
    Gate { name: "DefaultPodTopologySpread", default: true, locked: false },
    Gate { name: "DevicePlugins", default: true, locked: false },
    Gate { name: "DisableAcceleratorUsageMetrics", default: true, locked: false },
    Gate { name: "DownwardAPIHugePages", default: false, locked: false },
    Gate { name: "DryRun", default: true, locked: false },
    Gate { name: "DynamicKubeletConfig", default: true, locked: false },
    Gate { name: "EfficientWatchResumption", default: false, locked: false },
    Gate { name: "EndpointSlice", default: true, locked: false },
    Gate { name: "EndpointSliceNodeName", default: false, locked: false },
    Gate { name: "EndpointSliceProxying", default: true, locked: false },
    Gate { name: "EndpointSliceTerminatingCondition", default: false, locked: false },
    Gate { name: "EphemeralContainers", default: false, locked: false },
    Gate { name: "EvenPodsSpread", default: true, locked: true },
    Gate { name: "ExecProbeTimeout", default: true, locked: false },
    Gate { name: "ExpandCSIVolumes", default: true, locked: false },
    Gate { name: "ExpandInUsePersistentVolumes", default: true, locked: false },
    Gate { name: "ExpandPersistentVolumes", default: true, locked: false },
    Gate { name: "ExperimentalHostUserNamespaceDefaulting", default: false, locked: false },
    Gate { name: "ExternalPolicyForExternalIP", default: true, locked: true },
    Gate { name: "GenericEphemeralVolume", default: false, locked: false },
    Gate { name: "GracefulNodeShutdown", default: false, locked: false },
    Gate { name: "HPAContainerMetrics", default: false, locked: false },
    Gate { name: "HPAScaleToZero", default: false, locked: false },
    Gate { name: "HugePageStorageMediumSize", default: true, locked: false },
    Gate { name: "HyperVContainer", default: false, locked: false },
    Gate { name: "IPv6DualStack", default: false, locked: false },
    Gate { name: "ImmutableEphemeralVolumes", default: true, locked: false },
    Gate { name: "KubeletCredentialProviders", default: false, locked: false },
    Gate { name: "KubeletPodResources", default: true, locked: false },
    Gate { name: "LegacyNodeRoleBehavior", default: true, locked: false },
    Gate { name: "LocalStorageCapacityIsolation", default: true, locked: false },
    Gate { name: "LocalStorageCapacityIsolationFSQuotaMonitoring", default: false, locked: false },
    Gate { name: "MixedProtocolLBService", default: false, locked: false },
    Gate { name: "NodeDisruptionExclusion", default: true, locked: false },
    Gate { name: "NodeLease", default: true, locked: true },
    Gate { name: "NonPreemptingPriority", default: true, locked: false },
    Gate { name: "PodDisruptionBudget", default: true, locked: false },
    Gate { name: "PodOverhead", default: true, locked: false },
    Gate { name: "ProcMountType", default: false, locked: false },
    Gate { name: "QOSReserved", default: false, locked: false },
    Gate { name: "RemainingItemCount", default: true, locked: false },
    Gate { name: "RemoveSelfLink", default: true, locked: false },
    Gate { name: "RootCAConfigMap", default: true, locked: false },
    Gate { name: "RotateKubeletClientCertificate", default: true, locked: true },
    Gate { name: "RotateKubeletServerCertificate", default: true, locked: false },
    Gate { name: "RunAsGroup", default: true, locked: false },
    Gate { name: "RuntimeClass", default: true, locked: true },
    Gate { name: "SCTPSupport", default: true, locked: true },
    Gate { name: "SelectorIndex", default: true, locked: true },
    Gate { name: "ServerSideApply", default: true, locked: false },
    Gate { name: "ServiceAccountIssuerDiscovery", default: true, locked: false },
    Gate { name: "ServiceAppProtocol", default: true, locked: true },
    Gate { name: "ServiceLBNodePortControl", default: false, locked: false },
    Gate { name: "ServiceNodeExclusion", default: true, locked: false },
    Gate { name: "ServiceTopology", default: false, locked: false },
    Gate { name: "SetHostnameAsFQDN", default: true, locked: false },
    Gate { name: "SizeMemoryBackedVolumes", default: false, locked: false },
    Gate { name: "StartupProbe", default: true, locked: true },
    Gate { name: "StorageObjectInUseProtection", default: true, locked: false },
    Gate { name: "StorageVersionAPI", default: false, locked: false },
    Gate { name: "StorageVersionHash", default: true, locked: false },
    Gate { name: "StreamingProxyRedirects", default: true, locked: false },
    Gate { name: "SupportNodePidsLimit", default: true, locked: true },
    Gate { name: "SupportPodPidsLimit", default: true, locked: true },
    Gate { name: "Sysctls", default: true, locked: false },
    Gate { name: "TTLAfterFinished", default: false, locked: false },
    Gate { name: "TokenRequest", default: true, locked: true },
    Gate { name: "TokenRequestProjection", default: true, locked: true },
    Gate { name: "TopologyManager", default: true, locked: false },
    Gate { name: "ValidateProxyRedirects", default: true, locked: false },
    Gate { name: "VolumePVCDataSource", default: true, locked: true },
    Gate { name: "VolumeSnapshotDataSource", default: true, locked: true },
    Gate { name: "VolumeSubpath", default: true, locked: false },
    Gate { name: "WarningHeaders", default: true, locked: false },
    Gate { name: "WatchBookmark", default: true, locked: true },
    Gate { name: "WinDSR", default: false, locked: false },
    Gate { name: "WinOverlay", default: true, locked: false },
    Gate { name: "WindowsEndpointSliceProxying", default: false, locked: false },
    Gate { name: "WindowsGMSA", default: true, locked: true },
    Gate { name: "WindowsRunAsUserName", default: true, locked: true },
];

/// The gate named `name`, if Kubernetes 1.20 has it.
pub fn find(name: &str) -> Option<&'static Gate> {
    GATES.binary_search_by(|g| g.name.cmp(name)).ok().and_then(|i| GATES.get(i))
}

/// Refuses gates Kubernetes `version` does not know and values a gate is locked against. For a
/// version this table does not describe nothing is checked (the CloudProfile offers only 1.20).
pub fn validate(gates: &BTreeMap<String, bool>, version: &str, path: &Path) -> ErrorList {
    let mut errs = ErrorList::default();
    let parsed = semver::Version::parse(version.trim_start_matches('v')).ok();
    if parsed.is_none_or(|v| (v.major, v.minor) != MINOR) {
        return errs;
    }
    for (name, value) in gates {
        if SWITCHES.contains(&name.as_str()) {
            continue;
        }
        match find(name) {
            None => errs.push(FieldError::invalid(
                path.child(name),
                name,
                format!("unknown feature gate: Kubernetes {version} has no feature gate {name}"),
            )),
            Some(gate) if gate.locked && *value != gate.default => errs.push(FieldError::forbidden(
                path.child(name),
                format!("cannot set feature gate to {value}, feature is locked to {}", gate.default),
            )),
            Some(_) => {}
        }
    }
    errs
}
