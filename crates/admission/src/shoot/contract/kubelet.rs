//! The contract of `spec.kubernetes.kubelet`: the KubeletConfiguration of every pool.

use super::{Field, honoured, only_as, refused};

/// The kubelet of every pool (a pool's own `kubernetes.kubelet` is in [`super::workers::PROVIDER`]).
pub const KUBELET: &[Field] = &[
    honoured(
        "spec.kubernetes.kubelet.containerLogMaxFiles",
        "the same-named KubeletConfiguration field of the nodes (checked as Gardener and the 1.20 kubelet check it: shoot::kubelet)",
        "every_mapped_field_appears_under_its_kubelet_configuration_name",
    ),
    honoured(
        "spec.kubernetes.kubelet.containerLogMaxSize",
        "the same-named KubeletConfiguration field of the nodes (checked as Gardener and the 1.20 kubelet check it: shoot::kubelet)",
        "every_mapped_field_appears_under_its_kubelet_configuration_name",
    ),
    honoured(
        "spec.kubernetes.kubelet.cpuCFSQuota",
        "the same-named KubeletConfiguration field of the nodes (checked as Gardener and the 1.20 kubelet check it: shoot::kubelet)",
        "every_mapped_field_appears_under_its_kubelet_configuration_name",
    ),
    honoured(
        "spec.kubernetes.kubelet.evictionHard",
        "the same-named KubeletConfiguration field of the nodes (checked as Gardener and the 1.20 kubelet check it: shoot::kubelet)",
        "every_mapped_field_appears_under_its_kubelet_configuration_name",
    ),
    honoured(
        "spec.kubernetes.kubelet.evictionMaxPodGracePeriod",
        "the same-named KubeletConfiguration field of the nodes (checked as Gardener and the 1.20 kubelet check it: shoot::kubelet)",
        "every_mapped_field_appears_under_its_kubelet_configuration_name",
    ),
    honoured(
        "spec.kubernetes.kubelet.evictionMinimumReclaim",
        "the same-named KubeletConfiguration field of the nodes (checked as Gardener and the 1.20 kubelet check it: shoot::kubelet)",
        "every_mapped_field_appears_under_its_kubelet_configuration_name",
    ),
    honoured(
        "spec.kubernetes.kubelet.evictionPressureTransitionPeriod",
        "the same-named KubeletConfiguration field of the nodes (checked as Gardener and the 1.20 kubelet check it: shoot::kubelet)",
        "every_mapped_field_appears_under_its_kubelet_configuration_name",
    ),
    honoured(
        "spec.kubernetes.kubelet.evictionSoft",
        "the same-named KubeletConfiguration field of the nodes (checked as Gardener and the 1.20 kubelet check it: shoot::kubelet)",
        "every_mapped_field_appears_under_its_kubelet_configuration_name",
    ),
    honoured(
        "spec.kubernetes.kubelet.evictionSoftGracePeriod",
        "the same-named KubeletConfiguration field of the nodes (checked as Gardener and the 1.20 kubelet check it: shoot::kubelet)",
        "every_mapped_field_appears_under_its_kubelet_configuration_name",
    ),
    honoured(
        "spec.kubernetes.kubelet.failSwapOn",
        "the same-named KubeletConfiguration field of the nodes (checked as Gardener and the 1.20 kubelet check it: shoot::kubelet)",
        "every_mapped_field_appears_under_its_kubelet_configuration_name",
    ),
    honoured(
        "spec.kubernetes.kubelet.featureGates",
        "the same-named KubeletConfiguration field of the nodes (checked as Gardener and the 1.20 kubelet check it: shoot::kubelet)",
        "every_mapped_field_appears_under_its_kubelet_configuration_name",
    ),
    honoured(
        "spec.kubernetes.kubelet.imageGCHighThresholdPercent",
        "the same-named KubeletConfiguration field of the nodes (checked as Gardener and the 1.20 kubelet check it: shoot::kubelet)",
        "every_mapped_field_appears_under_its_kubelet_configuration_name",
    ),
    honoured(
        "spec.kubernetes.kubelet.imageGCLowThresholdPercent",
        "the same-named KubeletConfiguration field of the nodes (checked as Gardener and the 1.20 kubelet check it: shoot::kubelet)",
        "every_mapped_field_appears_under_its_kubelet_configuration_name",
    ),
    honoured(
        "spec.kubernetes.kubelet.imageMinimumGCAge",
        "the same-named KubeletConfiguration field of the nodes (checked as Gardener and the 1.20 kubelet check it: shoot::kubelet)",
        "every_mapped_field_appears_under_its_kubelet_configuration_name",
    ),
    honoured(
        "spec.kubernetes.kubelet.kubeReserved",
        "the same-named KubeletConfiguration field of the nodes (checked as Gardener and the 1.20 kubelet check it: shoot::kubelet)",
        "every_mapped_field_appears_under_its_kubelet_configuration_name",
    ),
    honoured(
        "spec.kubernetes.kubelet.maxPods",
        "the same-named KubeletConfiguration field of the nodes (checked as Gardener and the 1.20 kubelet check it: shoot::kubelet)",
        "every_mapped_field_appears_under_its_kubelet_configuration_name",
    ),
    honoured(
        "spec.kubernetes.kubelet.podPidsLimit",
        "the same-named KubeletConfiguration field of the nodes (checked as Gardener and the 1.20 kubelet check it: shoot::kubelet)",
        "every_mapped_field_appears_under_its_kubelet_configuration_name",
    ),
    honoured(
        "spec.kubernetes.kubelet.registryBurst",
        "the same-named KubeletConfiguration field of the nodes (checked as Gardener and the 1.20 kubelet check it: shoot::kubelet)",
        "every_mapped_field_appears_under_its_kubelet_configuration_name",
    ),
    honoured(
        "spec.kubernetes.kubelet.registryPullQPS",
        "the same-named KubeletConfiguration field of the nodes (checked as Gardener and the 1.20 kubelet check it: shoot::kubelet)",
        "every_mapped_field_appears_under_its_kubelet_configuration_name",
    ),
    honoured(
        "spec.kubernetes.kubelet.serializeImagePulls",
        "the same-named KubeletConfiguration field of the nodes (checked as Gardener and the 1.20 kubelet check it: shoot::kubelet)",
        "every_mapped_field_appears_under_its_kubelet_configuration_name",
    ),
    honoured(
        "spec.kubernetes.kubelet.streamingConnectionIdleTimeout",
        "the same-named KubeletConfiguration field of the nodes (checked as Gardener and the 1.20 kubelet check it: shoot::kubelet)",
        "every_mapped_field_appears_under_its_kubelet_configuration_name",
    ),
    honoured(
        "spec.kubernetes.kubelet.systemReserved",
        "the same-named KubeletConfiguration field of the nodes (checked as Gardener and the 1.20 kubelet check it: shoot::kubelet)",
        "every_mapped_field_appears_under_its_kubelet_configuration_name",
    ),
    honoured(
        "spec.kubernetes.kubelet.seccompDefault",
        "the KubeletConfiguration field from Kubernetes 1.25; refused on older versions naming the version (shoot::kubelet)",
        "fields_newer_than_the_kubelet_are_refused_naming_the_field_and_the_version",
    ),
    honoured(
        "spec.kubernetes.kubelet.memorySwap",
        "the KubeletConfiguration field from Kubernetes 1.22; refused on older versions naming the version (shoot::kubelet)",
        "fields_newer_than_the_kubelet_are_refused_naming_the_field_and_the_version",
    ),
    honoured(
        "spec.kubernetes.kubelet.maxParallelImagePulls",
        "the KubeletConfiguration field from Kubernetes 1.27; refused on older versions naming the version (shoot::kubelet)",
        "fields_newer_than_the_kubelet_are_refused_naming_the_field_and_the_version",
    ),
    honoured(
        "spec.kubernetes.kubelet.imageMaximumGCAge",
        "the KubeletConfiguration field from Kubernetes 1.29; refused on older versions naming the version (shoot::kubelet)",
        "fields_newer_than_the_kubelet_are_refused_naming_the_field_and_the_version",
    ),
    only_as(
        "spec.kubernetes.kubelet.protectKernelDefaults",
        &["false"],
        "the kubelet does not check the kernel's sysctls",
        "settings_that_cannot_take_effect_on_nested_machines_are_refused_with_the_reason",
        "the local provider's machines share the seed's kernel: its sysctls are not the shoot's to set, and the kubelet would not start",
    ),
    only_as(
        "spec.kubernetes.kubelet.cpuManagerPolicy",
        &["\"none\""],
        "the kubelet's CPU manager policy is `none`",
        "settings_that_cannot_take_effect_on_nested_machines_are_refused_with_the_reason",
        "machines have no cpuset of their own: every machine's kubelet would hand out the same exclusive CPUs",
    ),
    refused("spec.kubernetes.kubelet.imagePullProgressDeadline", "a dockershim setting; the nodes run containerd"),
];
