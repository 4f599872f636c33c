//! The Shoot contract: the fate of every field of a Shoot's `spec`. A field either changes the
//! running cluster as Gardener documents ([`Fate::Honoured`]), or admission refuses it with the
//! reason ([`Fate::Refused`]); some are accepted only with the values that state what the system
//! does anyway ([`Fate::OnlyAs`]). Nothing is stored and ignored.
//!
//! [`FIELDS`] is the one table. [`validate`] applies it to a Shoot: every value the user set is
//! looked up by its path, and a set value whose entry refuses it is reported, naming the field and
//! the reason. On an update only values that changed are checked, so a shoot created before a
//! field was refused can still be updated. A value at a path the table does not know (a field of
//! a newer API version, kept by the API types as unmodelled) is refused too.
//!
//! `docs/shoot-fields.md` is [`markdown`] of this table; tests keep it current, check that every
//! field of the Shoot CRD's schema has an entry, and that every test an entry names exists.
//! Value rules that depend on more than presence (a version, another field) live in the modules
//! named in an entry's text and are applied next to this one.

use crate::field::{ErrorList, FieldError, Path};
use api::core::Shoot;
use serde_json::Value;

/// What the system does with a field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// The field changes the running cluster: `how` says what it changes, `proof` names the test
    /// that shows it.
    Honoured { how: &'static str, proof: &'static str },
    /// Admission refuses any value: `why` says why.
    Refused { why: &'static str },
    /// Accepted only with one of `values` (JSON), which state what the system does anyway
    /// (`how`, proven by `proof`); any other value is refused with `why`.
    OnlyAs { values: &'static [&'static str], how: &'static str, proof: &'static str, why: &'static str },
}

/// One row of the table: a field path and its fate. The path uses `.` between fields and `[]` for
/// the items of a list (`spec.provider.workers[].name`); an entry covers the field and everything
/// below it (a map such as `labels`, an opaque `providerConfig`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    pub path: &'static str,
    pub fate: Fate,
}

const fn honoured(path: &'static str, how: &'static str, proof: &'static str) -> Field {
    Field { path, fate: Fate::Honoured { how, proof } }
}

const fn refused(path: &'static str, why: &'static str) -> Field {
    Field { path, fate: Fate::Refused { why } }
}

const fn only_as(
    path: &'static str,
    values: &'static [&'static str],
    how: &'static str,
    proof: &'static str,
    why: &'static str,
) -> Field {
    Field { path, fate: Fate::OnlyAs { values, how, proof, why } }
}

const NO_AUTOSCALER: &str = "no cluster-autoscaler runs in this system's shoots; a pool runs `minimum` machines";
const NO_VPA: &str = "no vertical pod autoscaler runs in this system's seeds or shoots";
const NO_ADDONS: &str =
    "this system deploys no addons (Gardener deprecated them); install them into the shoot yourself";
const MACHINE_VOLUMES: &str =
    "provider-local's machines keep their root and kubelet data on the seed's node; they have no volumes of their own";
const MCM: &str = "machines are managed by provider-local's worker controller, which has no such setting yet";

/// Every field of a Shoot's spec and its fate.
pub const FIELDS: &[Field] = &[
    // Addons (deprecated in Gardener).
    only_as(
        "spec.addons.kubernetesDashboard.enabled",
        &["false"],
        "no dashboard is deployed",
        "the_contract_accepts_what_the_system_does_anyway",
        NO_ADDONS,
    ),
    only_as(
        "spec.addons.kubernetes-dashboard.enabled",
        &["false"],
        "no dashboard is deployed",
        "the_contract_accepts_what_the_system_does_anyway",
        NO_ADDONS,
    ),
    only_as(
        "spec.addons.nginxIngress.enabled",
        &["false"],
        "no ingress controller is deployed",
        "the_contract_accepts_what_the_system_does_anyway",
        NO_ADDONS,
    ),
    only_as(
        "spec.addons.nginx-ingress.enabled",
        &["false"],
        "no ingress controller is deployed",
        "the_contract_accepts_what_the_system_does_anyway",
        NO_ADDONS,
    ),
    refused("spec.addons.kubernetesDashboard.authenticationMode", NO_ADDONS),
    refused("spec.addons.kubernetes-dashboard.authenticationMode", NO_ADDONS),
    refused("spec.addons.nginxIngress.config", NO_ADDONS),
    refused("spec.addons.nginxIngress.externalTrafficPolicy", NO_ADDONS),
    refused("spec.addons.nginxIngress.loadBalancerSourceRanges", NO_ADDONS),
    refused("spec.addons.nginx-ingress.config", NO_ADDONS),
    refused("spec.addons.nginx-ingress.externalTrafficPolicy", NO_ADDONS),
    refused("spec.addons.nginx-ingress.loadBalancerSourceRanges", NO_ADDONS),
    // Profile, credentials, placement.
    honoured(
        "spec.cloudProfileName",
        "selects the CloudProfile whose versions, images and machine types the shoot may use",
        "a_shoot_is_maintained_against_the_profile_it_names",
    ),
    honoured(
        "spec.cloudProfile",
        "selects the CloudProfile or NamespacedCloudProfile (newer spelling of cloudProfileName)",
        "namespaced_cloud_profiles_and_exposure_classes_steer_the_decision",
    ),
    honoured(
        "spec.credentialsBindingName",
        "names the CredentialsBinding whose Secret becomes the control plane's cloudprovider secret",
        "credentials_and_quotas_named_by_credentials_bindings_are_protected",
    ),
    honoured(
        "spec.secretBindingName",
        "names the SecretBinding whose Secret becomes the control plane's cloudprovider secret",
        "a_shoot_gets_a_real_node_runs_workloads_and_is_deleted_without_leftovers",
    ),
    honoured(
        "spec.region",
        "the provider region; the scheduler places the shoot on a seed of that region",
        "shoots_land_where_they_should_and_refusals_are_explained",
    ),
    honoured(
        "spec.seedName",
        "the seed that runs the control plane; changing it migrates the control plane",
        "a_shoot_migrates_with_its_secrets_states_and_etcd_data",
    ),
    honoured(
        "spec.seedSelector",
        "the scheduler only picks seeds matching the labels and provider types",
        "shoots_land_where_they_should_and_refusals_are_explained",
    ),
    honoured(
        "spec.tolerations",
        "the scheduler only picks seeds whose taints are tolerated",
        "shoots_land_where_they_should_and_refusals_are_explained",
    ),
    honoured(
        "spec.schedulerName",
        "only the named scheduler places the shoot",
        "a_scheduled_shoot_gets_its_seed_label_once",
    ),
    honoured(
        "spec.exposureClassName",
        "the ExposureClass narrows the seeds and labels the API server's Service for its handler",
        "exposure_class_narrows_seeds_and_adds_tolerations",
    ),
    honoured(
        "spec.purpose",
        "`infrastructure` only in the garden namespace; `testing` shoots get no health monitoring of their system components; the purpose is passed to extensions in the Cluster",
        "deploys_only_for_the_normal_purpose_of_awake_shoots_with_workers_and_an_image",
    ),
    // Control plane.
    refused(
        "spec.controlPlane.highAvailability",
        "highly available control planes are not offered yet: etcd runs one member and kube-apiserver one replica",
    ),
    // DNS.
    honoured(
        "spec.dns.domain",
        "the external domain: `api.<domain>` gets a DNSRecord and is in the API server's certificate",
        "deploy_dns_records",
    ),
    honoured(
        "spec.dns.providers[].type",
        "the primary provider's type is the DNSRecords' type",
        "records_of_two_shoots_in_one_zone_do_not_clobber_each_other",
    ),
    honoured(
        "spec.dns.providers[].primary",
        "selects the provider whose type the DNSRecords use",
        "records_of_two_shoots_in_one_zone_do_not_clobber_each_other",
    ),
    refused(
        "spec.dns.providers[].secretName",
        "DNS records use the shoot's provider credentials; a separate DNS secret is not supported yet",
    ),
    refused(
        "spec.dns.providers[].domains",
        "the DNS provider serves every domain; include/exclude filters are not supported yet",
    ),
    refused(
        "spec.dns.providers[].zones",
        "the DNS provider serves every zone; include/exclude filters are not supported yet",
    ),
    // Extensions.
    honoured(
        "spec.extensions[].type",
        "an Extension object of that type is created in the control plane namespace",
        "an_extension_error_lands_in_last_errors_and_clears_on_success",
    ),
    honoured(
        "spec.extensions[].providerConfig",
        "passed unchanged to the Extension object",
        "an_extension_error_lands_in_last_errors_and_clears_on_success",
    ),
    honoured(
        "spec.extensions[].disabled",
        "a disabled extension gets no Extension object, also when its registration is globally enabled",
        "an_extension_error_lands_in_last_errors_and_clears_on_success",
    ),
    // Hibernation.
    honoured(
        "spec.hibernation.enabled",
        "scales the control plane and the workers to zero and back",
        "a_shoot_hibernates_keeps_its_data_and_wakes_up",
    ),
    honoured(
        "spec.hibernation.schedules",
        "cron schedules (with a time zone) set `enabled` at start and end",
        "schedules_hibernate_and_wake_up_and_a_missed_tick_is_applied_after_downtime",
    ),
    // Kubernetes.
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
    // kube-apiserver.
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
    // kube-controller-manager, kube-scheduler, kube-proxy.
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
    // kubelet.
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
    // Maintenance.
    honoured(
        "spec.maintenance.autoUpdate",
        "in the window, maintenance updates the Kubernetes patch version and the machine image version",
        "maintenance_forces_expired_versions_and_auto_updates_patches_in_the_window_or_when_asked",
    ),
    honoured(
        "spec.maintenance.timeWindow",
        "maintenance runs once per window",
        "maintenance_runs_once_per_window_or_when_asked",
    ),
    only_as(
        "spec.maintenance.confineSpecUpdateRollout",
        &["false"],
        "spec changes roll out at once",
        "the_contract_accepts_what_the_system_does_anyway",
        "confining spec roll-outs to the maintenance window is not supported yet",
    ),
    // Monitoring.
    refused("spec.monitoring", "this system runs no alerting for shoots"),
    // Networking.
    honoured("spec.networking.type", "the Network extension's type", "network_conforms"),
    honoured("spec.networking.providerConfig", "passed unchanged to the Network extension", "network_conforms"),
    honoured(
        "spec.networking.pods",
        "the pod network of the cluster (kube-controller-manager, Network extension)",
        "derives_ids_domains_and_networks",
    ),
    honoured(
        "spec.networking.services",
        "the service network (kube-apiserver `--service-cluster-ip-range`, cluster DNS address)",
        "derives_ids_domains_and_networks",
    ),
    honoured(
        "spec.networking.nodes",
        "the machines' network; provider-local places the nodes in it",
        "node_network_prefers_config_then_shoot_then_default",
    ),
    only_as(
        "spec.networking.ipFamilies",
        &["[\"IPv4\"]"],
        "the cluster is IPv4 only",
        "the_contract_accepts_what_the_system_does_anyway",
        "only IPv4 clusters are supported",
    ),
    // Provider.
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
        "credentials_rotate_on_the_real_node_and_ssh_reaches_it_through_a_bastion",
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
        "the machine image and version (OperatingSystemConfig type); a change replaces the machines",
        "a_changed_machine_spec_replaces_the_machines",
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
        "the pool's Nodes carry the labels (provider-local applies them on registration; a change replaces the machines)",
        "a_node_gets_what_its_pool_wants_once",
    ),
    honoured(
        "spec.provider.workers[].annotations",
        "the pool's Nodes carry the annotations (provider-local applies them on registration; a change replaces the machines)",
        "a_node_gets_what_its_pool_wants_once",
    ),
    honoured(
        "spec.provider.workers[].taints",
        "the pool's Nodes carry the taints, next to the kubelet's own (a change replaces the machines)",
        "a_node_gets_what_its_pool_wants_once",
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
    refused("spec.provider.workers[].clusterAutoscaler", NO_AUTOSCALER),
    refused("spec.provider.workers[].priority", NO_AUTOSCALER),
    refused(
        "spec.provider.workers[].updateStrategy",
        "machines are always replaced (rolling update); in-place updates are not supported",
    ),
    // Referenced resources.
    honoured(
        "spec.resources",
        "the referenced Secrets and ConfigMaps are copied into the control plane namespace for extensions",
        "osc_output_is_deterministic_and_reads_referenced_secrets",
    ),
    // System components.
    only_as(
        "spec.systemComponents.nodeLocalDNS.enabled",
        &["false"],
        "no node-local DNS cache runs",
        "cluster_dns_autoscaling_rewriting_and_node_local_dns_are_refused",
        "node-local DNS needs a DNS cache on every node that the machines do not carry",
    ),
    refused(
        "spec.systemComponents",
        "the cluster DNS runs one replica of this system's own server, authoritative for cluster.local only: HPA autoscaling needs a metrics API the shoot lacks, cluster-proportional scaling an autoscaler the machines do not carry, and rewriting has nothing to forward to",
    ),
];

/// The entry that decides a field: the longest entry path that is `pattern` or one of its
/// ancestors.
pub fn entry_for(pattern: &str) -> Option<&'static Field> {
    FIELDS.iter().filter(|f| covers(f.path, pattern)).max_by_key(|f| f.path.len())
}

fn covers(entry: &str, pattern: &str) -> bool {
    pattern == entry || pattern.strip_prefix(entry).is_some_and(|rest| rest.starts_with('.') || rest.starts_with("[]"))
}

/// A value the user set: its table pattern (`spec.provider.workers[].name`), its concrete path
/// (`spec.provider.workers[0].name`) and the value.
#[derive(Debug)]
struct Leaf<'a> {
    pattern: String,
    path: Path,
    value: &'a Value,
}

/// Every set value below `value`; nulls, empty lists and empty objects are not values. A leaf is
/// a scalar, a list of scalars, or anything below a table entry (a map, an opaque config).
fn leaves<'a>(pattern: &str, path: Path, value: &'a Value, out: &mut Vec<Leaf<'a>>) {
    // An entry with no entries below it decides its whole value at once.
    let whole = FIELDS.iter().any(|f| f.path == pattern)
        && !FIELDS.iter().any(|f| f.path != pattern && covers(pattern, f.path));
    match value {
        Value::Null => {}
        Value::Object(map) if !whole => {
            for (k, v) in map {
                leaves(&format!("{pattern}.{k}"), path.child(k), v, out);
            }
        }
        Value::Array(items) if !whole && items.iter().any(Value::is_object) => {
            for (i, v) in items.iter().enumerate() {
                leaves(&format!("{pattern}[]"), path.index(i), v, out);
            }
        }
        Value::Object(map) if map.is_empty() => {}
        Value::Array(items) if items.is_empty() => {}
        _ => out.push(Leaf { pattern: pattern.to_string(), path, value }),
    }
}

/// The value at a concrete path (`spec.provider.workers[0].name`) of `root`.
fn value_at<'a>(root: &'a Value, path: &str) -> Option<&'a Value> {
    let mut current = root;
    for segment in path.split('.') {
        let (name, indexes) = segment.split_once('[').map_or((segment, ""), |(n, rest)| (n, rest));
        current = current.get(name)?;
        for index in indexes.split('[').filter(|s| !s.is_empty()) {
            current = current.get(index.trim_end_matches(']').parse::<usize>().ok()?)?;
        }
    }
    Some(current)
}

fn spec_json(shoot: &Shoot) -> Value {
    serde_json::to_value(&shoot.spec).unwrap_or(Value::Null)
}

/// The refusals of the table for `new` (values unchanged from `old` are not checked again).
pub fn validate(new: &Shoot, old: Option<&Shoot>) -> ErrorList {
    let spec = spec_json(new);
    let old_root = old.map(|o| serde_json::json!({ "spec": spec_json(o) }));
    let mut found = Vec::new();
    leaves("spec", Path::new("spec"), &spec, &mut found);
    let mut errs = ErrorList::default();
    for leaf in found {
        let unchanged = old_root.as_ref().and_then(|o| value_at(o, leaf.path.as_str())) == Some(leaf.value);
        if unchanged {
            continue;
        }
        let refusal = match entry_for(&leaf.pattern).map(|f| f.fate) {
            None => Some("not a field this system knows; it would be stored and ignored".to_string()),
            Some(Fate::Honoured { .. }) => None,
            Some(Fate::Refused { why }) => Some(format!("not supported: {why}")),
            Some(Fate::OnlyAs { values, why, .. }) => {
                let accepted =
                    values.iter().any(|v| serde_json::from_str::<Value>(v).ok().as_ref() == Some(leaf.value));
                (!accepted).then(|| format!("not supported: {why} (accepted: {})", values.join(", ")))
            }
        };
        if let Some(detail) = refusal {
            errs.push(FieldError::forbidden(leaf.path, detail));
        }
    }
    errs
}

/// `docs/shoot-fields.md`: the table as a page.
pub fn markdown() -> String {
    let mut out = String::from(
        "# The Shoot contract: every field and its fate\n\n\
         Generated from `crates/admission/src/shoot/contract.rs` (`FIELDS`); a test fails when this \
         page, the table or the Shoot CRD disagree. A field is **honoured** (it changes the running \
         cluster; the test named proves it), **refused** (admission rejects any value, with the \
         reason), or accepted **only as** the values that state what the system does anyway. An \
         entry covers the field and everything below it. On an update, only values that changed \
         are checked. Rules that depend on values (versions, other fields) are listed in \
         `docs/admission.md`.\n\n\
         | Field | Fate | What it does, or why it is refused | Proof |\n|---|---|---|---|\n",
    );
    for f in FIELDS {
        let row = match f.fate {
            Fate::Honoured { how, proof } => format!("| `{}` | honoured | {how} | `{proof}` |\n", f.path),
            Fate::Refused { why } => {
                format!("| `{}` | refused | {why} | `the_contract_refuses_what_it_does_not_honour` |\n", f.path)
            }
            Fate::OnlyAs { values, how, proof, why } => format!(
                "| `{}` | only as {} | {how}; otherwise refused: {why} | `{proof}` |\n",
                f.path,
                values.iter().map(|v| format!("`{v}`")).collect::<Vec<_>>().join(", ")
            ),
        };
        out.push_str(&row);
    }
    out
}

#[cfg(test)]
mod tests;
