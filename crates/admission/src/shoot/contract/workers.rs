//! The contract of `spec.provider`: the provider type and the worker pools (machines, images,
//! volumes, zones, a pool's own Kubernetes settings).

use super::{Field, NO_AUTOSCALER, honoured, only_as, refused};

const MACHINE_VOLUMES: &str =
    "provider-local's machines keep their root and kubelet data on the seed's node; they have no volumes of their own";
const MCM: &str = "machines are managed by provider-local's worker controller, which has only `machineDrainTimeout` of these settings";

/// The provider: the infrastructure and the worker pools.
pub const PROVIDER: &[Field] = &[
    honoured(
        "spec.provider.type",
        "the type of the Infrastructure, ControlPlane and Worker extensions",
        "infrastructure_conforms",
    ),
    honoured(
        "spec.provider.controlPlaneConfig",
        "passed unchanged to the ControlPlane extension",
        "controlplane_conforms",
    ),
    honoured(
        "spec.provider.infrastructureConfig",
        "passed unchanged to the Infrastructure extension",
        "infrastructure_conforms",
    ),
    honoured(
        "spec.provider.workersSettings.sshAccess.enabled",
        "an SSH key pair is created and authorised on the nodes; false removes access",
        "ssh_reaches_the_node_through_a_bastion_with_the_current_and_the_previous_key_pair",
    ),
    honoured(
        "spec.provider.workers[].name",
        "the pool's name: machines, nodes and OperatingSystemConfigs carry it",
        "a_shoot_gets_a_real_node_runs_workloads_and_is_deleted_without_leftovers",
    ),
    honoured(
        "spec.provider.workers[].minimum",
        "the number of machines of the pool",
        "worker_scales_to_zero_on_hibernation_and_back",
    ),
    honoured(
        "spec.provider.workers[].maximum",
        "an upper bound the pool's size is checked against (minimum <= maximum); without an autoscaler the pool runs `minimum` machines",
        "a_changed_machine_spec_replaces_the_machines",
    ),
    honoured(
        "spec.provider.workers[].maxSurge",
        "how many machines a roll-out creates above the desired count",
        "rolling_replacement_creates_before_it_deletes_within_the_limits",
    ),
    honoured(
        "spec.provider.workers[].maxUnavailable",
        "how many machines a roll-out may take away below the desired count",
        "rolling_replacement_creates_before_it_deletes_within_the_limits",
    ),
    honoured(
        "spec.provider.workers[].machine.type",
        "the machine type from the CloudProfile",
        "a_changed_machine_spec_replaces_the_machines",
    ),
    honoured(
        "spec.provider.workers[].machine.image",
        "the machine image and version (OperatingSystemConfig type; the CloudProfile maps each version to a machine image); a change rolls the pool node by node, draining each old Node",
        "a_pool_rolls_to_a_new_image_version_without_a_failed_request",
    ),
    only_as(
        "spec.provider.workers[].machine.architecture",
        &["\"amd64\""],
        "machines run on the seed's amd64 node",
        "the_contract_accepts_what_the_system_does_anyway",
        "provider-local's machines run on the seed's node, which is amd64",
    ),
    honoured(
        "spec.provider.workers[].providerConfig",
        "passed unchanged to the Worker extension's pool",
        "worker_conforms",
    ),
    honoured(
        "spec.provider.workers[].zones",
        "checked against the region's zones; the pool's machines are spread over its zones in turn and their Nodes carry `topology.kubernetes.io/zone`",
        "machines_are_spread_over_the_pool_zones_in_turn",
    ),
    only_as(
        "spec.provider.workers[].cri.name",
        &["\"containerd\""],
        "the nodes run containerd",
        "the_contract_accepts_what_the_system_does_anyway",
        "only containerd is available",
    ),
    refused("spec.provider.workers[].cri.containerRuntimes", "no ContainerRuntime extension is available"),
    only_as(
        "spec.provider.workers[].systemComponents.allow",
        &["true"],
        "system components may run on the pool",
        "the_contract_accepts_what_the_system_does_anyway",
        "keeping system components off a pool is not supported yet",
    ),
    honoured(
        "spec.provider.workers[].labels",
        "the pool's Nodes carry the labels (provider-local applies them once a Node registers; a change is applied to the Nodes in place)",
        "a_changed_pool_changes_its_nodes_in_place_and_leaves_the_rest_alone",
    ),
    honoured(
        "spec.provider.workers[].annotations",
        "the pool's Nodes carry the annotations (provider-local applies them once a Node registers; a change is applied to the Nodes in place)",
        "a_changed_pool_changes_its_nodes_in_place_and_leaves_the_rest_alone",
    ),
    honoured(
        "spec.provider.workers[].taints",
        "the pool's Nodes carry the taints, next to the kubelet's own (a change is applied to the Nodes in place)",
        "a_changed_pool_changes_its_nodes_in_place_and_leaves_the_rest_alone",
    ),
    honoured(
        "spec.provider.workers[].kubernetes.kubelet.containerLogMaxFiles",
        "the same-named KubeletConfiguration field of the nodes (checked as Gardener and the 1.20 kubelet check it: shoot::kubelet)",
        "a_pool_setting_replaces_the_shoot_settings_for_that_pool_only",
    ),
    honoured(
        "spec.provider.workers[].kubernetes.kubelet.containerLogMaxSize",
        "the same-named KubeletConfiguration field of the nodes (checked as Gardener and the 1.20 kubelet check it: shoot::kubelet)",
        "a_pool_setting_replaces_the_shoot_settings_for_that_pool_only",
    ),
    honoured(
        "spec.provider.workers[].kubernetes.kubelet.cpuCFSQuota",
        "the same-named KubeletConfiguration field of the nodes (checked as Gardener and the 1.20 kubelet check it: shoot::kubelet)",
        "a_pool_setting_replaces_the_shoot_settings_for_that_pool_only",
    ),
    honoured(
        "spec.provider.workers[].kubernetes.kubelet.evictionHard",
        "the same-named KubeletConfiguration field of the nodes (checked as Gardener and the 1.20 kubelet check it: shoot::kubelet)",
        "a_pool_setting_replaces_the_shoot_settings_for_that_pool_only",
    ),
    honoured(
        "spec.provider.workers[].kubernetes.kubelet.evictionMaxPodGracePeriod",
        "the same-named KubeletConfiguration field of the nodes (checked as Gardener and the 1.20 kubelet check it: shoot::kubelet)",
        "a_pool_setting_replaces_the_shoot_settings_for_that_pool_only",
    ),
    honoured(
        "spec.provider.workers[].kubernetes.kubelet.evictionMinimumReclaim",
        "the same-named KubeletConfiguration field of the nodes (checked as Gardener and the 1.20 kubelet check it: shoot::kubelet)",
        "a_pool_setting_replaces_the_shoot_settings_for_that_pool_only",
    ),
    honoured(
        "spec.provider.workers[].kubernetes.kubelet.evictionPressureTransitionPeriod",
        "the same-named KubeletConfiguration field of the nodes (checked as Gardener and the 1.20 kubelet check it: shoot::kubelet)",
        "a_pool_setting_replaces_the_shoot_settings_for_that_pool_only",
    ),
    honoured(
        "spec.provider.workers[].kubernetes.kubelet.evictionSoft",
        "the same-named KubeletConfiguration field of the nodes (checked as Gardener and the 1.20 kubelet check it: shoot::kubelet)",
        "a_pool_setting_replaces_the_shoot_settings_for_that_pool_only",
    ),
    honoured(
        "spec.provider.workers[].kubernetes.kubelet.evictionSoftGracePeriod",
        "the same-named KubeletConfiguration field of the nodes (checked as Gardener and the 1.20 kubelet check it: shoot::kubelet)",
        "a_pool_setting_replaces_the_shoot_settings_for_that_pool_only",
    ),
    honoured(
        "spec.provider.workers[].kubernetes.kubelet.failSwapOn",
        "the same-named KubeletConfiguration field of the nodes (checked as Gardener and the 1.20 kubelet check it: shoot::kubelet)",
        "a_pool_setting_replaces_the_shoot_settings_for_that_pool_only",
    ),
    honoured(
        "spec.provider.workers[].kubernetes.kubelet.featureGates",
        "the same-named KubeletConfiguration field of the nodes (checked as Gardener and the 1.20 kubelet check it: shoot::kubelet)",
        "a_pool_setting_replaces_the_shoot_settings_for_that_pool_only",
    ),
    honoured(
        "spec.provider.workers[].kubernetes.kubelet.imageGCHighThresholdPercent",
        "the same-named KubeletConfiguration field of the nodes (checked as Gardener and the 1.20 kubelet check it: shoot::kubelet)",
        "a_pool_setting_replaces_the_shoot_settings_for_that_pool_only",
    ),
    honoured(
        "spec.provider.workers[].kubernetes.kubelet.imageGCLowThresholdPercent",
        "the same-named KubeletConfiguration field of the nodes (checked as Gardener and the 1.20 kubelet check it: shoot::kubelet)",
        "a_pool_setting_replaces_the_shoot_settings_for_that_pool_only",
    ),
    honoured(
        "spec.provider.workers[].kubernetes.kubelet.imageMinimumGCAge",
        "the same-named KubeletConfiguration field of the nodes (checked as Gardener and the 1.20 kubelet check it: shoot::kubelet)",
        "a_pool_setting_replaces_the_shoot_settings_for_that_pool_only",
    ),
    honoured(
        "spec.provider.workers[].kubernetes.kubelet.kubeReserved",
        "the same-named KubeletConfiguration field of the nodes (checked as Gardener and the 1.20 kubelet check it: shoot::kubelet)",
        "a_pool_setting_replaces_the_shoot_settings_for_that_pool_only",
    ),
    honoured(
        "spec.provider.workers[].kubernetes.kubelet.maxPods",
        "the same-named KubeletConfiguration field of the nodes (checked as Gardener and the 1.20 kubelet check it: shoot::kubelet)",
        "a_pool_setting_replaces_the_shoot_settings_for_that_pool_only",
    ),
    honoured(
        "spec.provider.workers[].kubernetes.kubelet.podPidsLimit",
        "the same-named KubeletConfiguration field of the nodes (checked as Gardener and the 1.20 kubelet check it: shoot::kubelet)",
        "a_pool_setting_replaces_the_shoot_settings_for_that_pool_only",
    ),
    honoured(
        "spec.provider.workers[].kubernetes.kubelet.registryBurst",
        "the same-named KubeletConfiguration field of the nodes (checked as Gardener and the 1.20 kubelet check it: shoot::kubelet)",
        "a_pool_setting_replaces_the_shoot_settings_for_that_pool_only",
    ),
    honoured(
        "spec.provider.workers[].kubernetes.kubelet.registryPullQPS",
        "the same-named KubeletConfiguration field of the nodes (checked as Gardener and the 1.20 kubelet check it: shoot::kubelet)",
        "a_pool_setting_replaces_the_shoot_settings_for_that_pool_only",
    ),
    honoured(
        "spec.provider.workers[].kubernetes.kubelet.serializeImagePulls",
        "the same-named KubeletConfiguration field of the nodes (checked as Gardener and the 1.20 kubelet check it: shoot::kubelet)",
        "a_pool_setting_replaces_the_shoot_settings_for_that_pool_only",
    ),
    honoured(
        "spec.provider.workers[].kubernetes.kubelet.streamingConnectionIdleTimeout",
        "the same-named KubeletConfiguration field of the nodes (checked as Gardener and the 1.20 kubelet check it: shoot::kubelet)",
        "a_pool_setting_replaces_the_shoot_settings_for_that_pool_only",
    ),
    honoured(
        "spec.provider.workers[].kubernetes.kubelet.systemReserved",
        "the same-named KubeletConfiguration field of the nodes (checked as Gardener and the 1.20 kubelet check it: shoot::kubelet)",
        "a_pool_setting_replaces_the_shoot_settings_for_that_pool_only",
    ),
    honoured(
        "spec.provider.workers[].kubernetes.kubelet.seccompDefault",
        "the KubeletConfiguration field from Kubernetes 1.25; refused on older versions naming the version (shoot::kubelet)",
        "fields_newer_than_the_kubelet_are_refused_naming_the_field_and_the_version",
    ),
    honoured(
        "spec.provider.workers[].kubernetes.kubelet.memorySwap",
        "the KubeletConfiguration field from Kubernetes 1.22; refused on older versions naming the version (shoot::kubelet)",
        "fields_newer_than_the_kubelet_are_refused_naming_the_field_and_the_version",
    ),
    honoured(
        "spec.provider.workers[].kubernetes.kubelet.maxParallelImagePulls",
        "the KubeletConfiguration field from Kubernetes 1.27; refused on older versions naming the version (shoot::kubelet)",
        "fields_newer_than_the_kubelet_are_refused_naming_the_field_and_the_version",
    ),
    honoured(
        "spec.provider.workers[].kubernetes.kubelet.imageMaximumGCAge",
        "the KubeletConfiguration field from Kubernetes 1.29; refused on older versions naming the version (shoot::kubelet)",
        "fields_newer_than_the_kubelet_are_refused_naming_the_field_and_the_version",
    ),
    only_as(
        "spec.provider.workers[].kubernetes.kubelet.protectKernelDefaults",
        &["false"],
        "the kubelet does not check the kernel's sysctls",
        "settings_that_cannot_take_effect_on_nested_machines_are_refused_with_the_reason",
        "the local provider's machines share the seed's kernel: its sysctls are not the shoot's to set, and the kubelet would not start",
    ),
    only_as(
        "spec.provider.workers[].kubernetes.kubelet.cpuManagerPolicy",
        &["\"none\""],
        "the kubelet's CPU manager policy is `none`",
        "settings_that_cannot_take_effect_on_nested_machines_are_refused_with_the_reason",
        "machines have no cpuset of their own: every machine's kubelet would hand out the same exclusive CPUs",
    ),
    refused(
        "spec.provider.workers[].kubernetes.kubelet.imagePullProgressDeadline",
        "a dockershim setting; the nodes run containerd",
    ),
    refused(
        "spec.provider.workers[].kubernetes.version",
        "every pool runs the shoot's Kubernetes version; per-pool versions are not supported yet",
    ),
    refused("spec.provider.workers[].caBundle", "extra CA bundles are not installed on the nodes yet"),
    refused(
        "spec.provider.workers[].sysctls",
        "the local provider's machines share the seed's kernel; its sysctls are not the shoot's to set",
    ),
    refused("spec.provider.workers[].volume", MACHINE_VOLUMES),
    refused("spec.provider.workers[].dataVolumes", MACHINE_VOLUMES),
    refused("spec.provider.workers[].kubeletDataVolumeName", MACHINE_VOLUMES),
    refused("spec.provider.workers[].machineControllerManager", MCM),
    honoured(
        "spec.provider.workers[].machineControllerManager.machineDrainTimeout",
        "how long a roll-out's drain of a node waits for PodDisruptionBudgets before it deletes the remaining pods and the machine (default 2h)",
        "a_drain_blocked_by_a_budget_ends_at_the_drain_timeout_and_the_roll_out_goes_on",
    ),
    refused("spec.provider.workers[].clusterAutoscaler", NO_AUTOSCALER),
    refused("spec.provider.workers[].priority", NO_AUTOSCALER),
    refused(
        "spec.provider.workers[].updateStrategy",
        "machines are always replaced (rolling update); in-place updates are not supported",
    ),
];
