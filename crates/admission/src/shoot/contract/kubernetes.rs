//! The contract of the Kubernetes settings of the control plane: version, cluster-wide switches,
//! kube-apiserver, kube-controller-manager, kube-scheduler and kube-proxy.

use super::{Field, NO_AUTOSCALER, honoured, only_as, refused};

const NO_VPA: &str = "no vertical pod autoscaler runs in this system's seeds or shoots";

/// The cluster-wide Kubernetes settings: version, privileged containers, autoscalers.
pub const KUBERNETES: &[Field] = &[
    honoured(
        "spec.kubernetes.version",
        "the version of every control plane component and kubelet",
        "a_shoot_gets_a_real_node_runs_workloads_and_is_deleted_without_leftovers",
    ),
    only_as(
        "spec.kubernetes.allowPrivilegedContainers",
        &["true"],
        "privileged containers are allowed (`--allow-privileged=true`)",
        "the_contract_accepts_what_the_system_does_anyway",
        "forbidding privileged containers needs PodSecurityPolicies, which this system does not manage",
    ),
    only_as(
        "spec.kubernetes.enableStaticTokenKubeconfig",
        &["false"],
        "no static token kubeconfig is issued; use AdminKubeconfigRequests",
        "the_contract_accepts_what_the_system_does_anyway",
        "static token kubeconfigs are not offered; request a short-lived admin kubeconfig instead",
    ),
    refused("spec.kubernetes.clusterAutoscaler", NO_AUTOSCALER),
    refused("spec.kubernetes.etcd", NO_VPA),
    only_as(
        "spec.kubernetes.verticalPodAutoscaler.enabled",
        &["false"],
        "no vertical pod autoscaler is deployed",
        "the_contract_accepts_what_the_system_does_anyway",
        NO_VPA,
    ),
    refused("spec.kubernetes.verticalPodAutoscaler", NO_VPA),
];

/// kube-apiserver.
pub const KUBE_APISERVER: &[Field] = &[
    honoured(
        "spec.kubernetes.kubeAPIServer.featureGates",
        "`--feature-gates` of the kube-apiserver",
        "apiserver_takes_shoot_settings_and_drops_removed_flags",
    ),
    honoured(
        "spec.kubernetes.kubeAPIServer.runtimeConfig",
        "`--runtime-config` of the kube-apiserver",
        "apiserver_takes_shoot_settings_and_drops_removed_flags",
    ),
    honoured(
        "spec.kubernetes.kubeAPIServer.admissionPlugins[].name",
        "the plugin is added to `--enable-admission-plugins`",
        "apiserver_takes_shoot_settings_and_drops_removed_flags",
    ),
    honoured(
        "spec.kubernetes.kubeAPIServer.admissionPlugins[].disabled",
        "`true` moves the plugin from `--enable-admission-plugins` to `--disable-admission-plugins`; refused for required plugins (shoot::apiserver)",
        "a_disabled_plugin_leaves_the_enable_list_and_joins_the_disable_list",
    ),
    honoured(
        "spec.kubernetes.kubeAPIServer.admissionPlugins[].config",
        "the plugin's configuration in a mounted AdmissionConfiguration (`--admission-control-config-file`); refused for plugins that take none",
        "plugin_configurations_become_a_mounted_admission_configuration",
    ),
    refused(
        "spec.kubernetes.kubeAPIServer.admissionPlugins[].kubeconfigSecretName",
        "plugin kubeconfigs from `spec.resources` are not implemented",
    ),
    honoured("spec.kubernetes.kubeAPIServer.apiAudiences", "`--api-audiences`", "every_flag_setting_becomes_its_flag"),
    honoured(
        "spec.kubernetes.kubeAPIServer.auditConfig",
        "the policy from the referenced ConfigMap (key `policy`) is mounted (`--audit-policy-file`) and audit events go to the API server's log (`--audit-log-path=-`); a missing ConfigMap fails the reconcile naming it",
        "the_audit_policy_is_mounted_logged_to_stdout_and_rolls_the_pods",
    ),
    honoured(
        "spec.kubernetes.kubeAPIServer.defaultNotReadyTolerationSeconds",
        "`--default-not-ready-toleration-seconds`",
        "every_flag_setting_becomes_its_flag",
    ),
    honoured(
        "spec.kubernetes.kubeAPIServer.defaultUnreachableTolerationSeconds",
        "`--default-unreachable-toleration-seconds`",
        "every_flag_setting_becomes_its_flag",
    ),
    honoured(
        "spec.kubernetes.kubeAPIServer.enableAnonymousAuthentication",
        "`--anonymous-auth`; with `false` the probes become TCP checks",
        "switching_anonymous_authentication_off_keeps_the_probes_working",
    ),
    refused(
        "spec.kubernetes.kubeAPIServer.enableBasicAuthentication",
        "basic authentication was removed from Kubernetes; Gardener forbids it",
    ),
    honoured(
        "spec.kubernetes.kubeAPIServer.encryptionConfig",
        "the resources are encrypted with the shoot's key next to Secrets, existing objects are rewritten, `status.encryptedResources` lists them; removing one is refused",
        "encrypted_resources_join_secrets_and_roll_the_pods",
    ),
    honoured(
        "spec.kubernetes.kubeAPIServer.encryptionConfig.provider",
        "`type` (`aescbc` by default, `aesgcm`, `secretbox`) encrypts Secrets and the listed resources; a change rotates the etcd encryption key through both phases, rewriting every encrypted object under the new provider, and `status.credentials.encryptionAtRest` records it; refused before creation, while hibernated, during a key rotation or an earlier change, and together with a change of the resources",
        "each_provider_encrypts_and_a_change_reads_the_old_data_and_rewrites_it_under_the_new_one",
    ),
    honoured(
        "spec.kubernetes.kubeAPIServer.eventTTL",
        "`--event-ttl` (at most 7 days)",
        "every_flag_setting_becomes_its_flag",
    ),
    honoured(
        "spec.kubernetes.kubeAPIServer.logging",
        "`--v` and `--vmodule=httplog=<n>`",
        "every_flag_setting_becomes_its_flag",
    ),
    honoured(
        "spec.kubernetes.kubeAPIServer.oidcConfig",
        "the `--oidc-*` flags with the CA bundle as a mounted file; `clientAuthentication` is refused (the API server never used it)",
        "oidc_settings_become_flags_and_the_ca_a_mounted_file",
    ),
    honoured(
        "spec.kubernetes.kubeAPIServer.requests",
        "`--max-requests-inflight` and `--max-mutating-requests-inflight`",
        "every_flag_setting_becomes_its_flag",
    ),
    honoured(
        "spec.kubernetes.kubeAPIServer.serviceAccountConfig",
        "`--service-account-issuer` (first), `--service-account-extend-token-expiration`, `--service-account-max-token-expiration`; accepted issuers only from 1.22",
        "the_service_account_issuer_on_1_20_and_from_1_22",
    ),
    honoured(
        "spec.kubernetes.kubeAPIServer.watchCacheSizes",
        "`--default-watch-cache-size` and `--watch-cache-sizes`",
        "every_flag_setting_becomes_its_flag",
    ),
];

/// kube-controller-manager, kube-scheduler, kube-proxy.
pub const KUBE_COMPONENTS: &[Field] = &[
    honoured(
        "spec.kubernetes.kubeControllerManager.nodeCIDRMaskSize",
        "`--node-cidr-mask-size`; immutable, checked against the pod range and the highest maxPods",
        "controller_manager_flags_carry_the_shoot_settings",
    ),
    honoured(
        "spec.kubernetes.kubeControllerManager.horizontalPodAutoscaler.cpuInitializationPeriod",
        "`--horizontal-pod-autoscaler-cpu-initialization-period`",
        "controller_manager_flags_carry_the_shoot_settings",
    ),
    honoured(
        "spec.kubernetes.kubeControllerManager.horizontalPodAutoscaler.downscaleStabilization",
        "`--horizontal-pod-autoscaler-downscale-stabilization`",
        "controller_manager_flags_carry_the_shoot_settings",
    ),
    honoured(
        "spec.kubernetes.kubeControllerManager.horizontalPodAutoscaler.initialReadinessDelay",
        "`--horizontal-pod-autoscaler-initial-readiness-delay`",
        "controller_manager_flags_carry_the_shoot_settings",
    ),
    honoured(
        "spec.kubernetes.kubeControllerManager.horizontalPodAutoscaler.syncPeriod",
        "`--horizontal-pod-autoscaler-sync-period`",
        "controller_manager_flags_carry_the_shoot_settings",
    ),
    honoured(
        "spec.kubernetes.kubeControllerManager.horizontalPodAutoscaler.tolerance",
        "`--horizontal-pod-autoscaler-tolerance`",
        "controller_manager_flags_carry_the_shoot_settings",
    ),
    honoured(
        "spec.kubernetes.kubeControllerManager.nodeMonitorGracePeriod",
        "`--node-monitor-grace-period`",
        "controller_manager_flags_carry_the_shoot_settings",
    ),
    honoured(
        "spec.kubernetes.kubeControllerManager.featureGates",
        "`--feature-gates` (gates Kubernetes 1.20 knows, not locked)",
        "controller_manager_flags_carry_the_shoot_settings",
    ),
    refused(
        "spec.kubernetes.kubeControllerManager.podEvictionTimeout",
        "kube-controller-manager 1.20 ignores `--pod-eviction-timeout` with the taint manager on; set kubeAPIServer.defaultNotReadyTolerationSeconds / defaultUnreachableTolerationSeconds",
    ),
    refused(
        "spec.kubernetes.kubeControllerManager.horizontalPodAutoscaler.downscaleDelay",
        "only for Kubernetes < 1.12; a no-op in 1.20",
    ),
    refused(
        "spec.kubernetes.kubeControllerManager.horizontalPodAutoscaler.upscaleDelay",
        "only for Kubernetes < 1.12; a no-op in 1.20",
    ),
    honoured(
        "spec.kubernetes.kubeScheduler.profile",
        "a KubeSchedulerConfiguration; `bin-packing` scores with NodeResourcesMostAllocated",
        "scheduler_bin_packing_scores_most_allocated_in_every_profile",
    ),
    honoured(
        "spec.kubernetes.kubeScheduler.featureGates",
        "`--feature-gates` of kube-scheduler (gates Kubernetes 1.20 knows, not locked)",
        "scheduler_feature_gates_and_kube_max_pd_vols",
    ),
    honoured(
        "spec.kubernetes.kubeScheduler.kubeMaxPDVols",
        "the environment variable `KUBE_MAX_PD_VOLS` of kube-scheduler",
        "scheduler_feature_gates_and_kube_max_pd_vols",
    ),
    only_as(
        "spec.kubernetes.kubeProxy.mode",
        &["\"IPTables\""],
        "kube-proxy runs in iptables mode",
        "pods_reach_a_service_by_dns_name_and_cluster_ip_and_kubectl_reaches_pods",
        "IPVS needs the ip_vs kernel modules, which the local provider's machines cannot load: they share the seed's kernel",
    ),
    honoured(
        "spec.kubernetes.kubeProxy.enabled",
        "`false` deletes kube-proxy's DaemonSet, ConfigMap, ClusterRoleBinding and ServiceAccount from the shoot; `true` deploys them",
        "turning_kube_proxy_off_deletes_its_objects_and_on_again_restores_them",
    ),
    honoured(
        "spec.kubernetes.kubeProxy.featureGates",
        "`--feature-gates` of kube-proxy (known 1.20 gates only)",
        "the_daemon_set_runs_on_every_node_with_the_shoot_s_settings",
    ),
];
