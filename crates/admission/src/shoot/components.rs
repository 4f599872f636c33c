//! The settings of the shoot's kube-controller-manager, kube-scheduler, kube-proxy and cluster
//! DNS (`spec.kubernetes.{kubeControllerManager,kubeScheduler,kubeProxy}` and
//! `spec.systemComponents`): the value checks of Gardener's `pkg/apis/core/validation/shoot.go`
//! for Kubernetes 1.20, and the refusals of what cannot take effect on this system's machines
//! (nested machine pods sharing the seed's kernel, running this project's own cluster DNS
//! server). Every refusal names the field and says why. Pure.

pub mod feature_gates;

use crate::field::{ErrorList, FieldError, Path};
use api::core::Shoot;
use api::core::shoot::kubernetes::{
    HorizontalPodAutoscalerConfig, KubeControllerManagerConfig, KubeProxyConfig, KubeSchedulerConfig, ProxyMode,
};
use api::core::shoot::settings::{CoreDnsAutoscalingMode, SystemComponents};
use ipnet::IpNet;

/// kube-controller-manager's `--node-cidr-mask-size` when the shoot sets none (IPv4).
pub const DEFAULT_NODE_CIDR_MASK_SIZE: i32 = 24;
/// The kubelet's `maxPods` when neither the shoot nor a worker pool sets it.
pub const DEFAULT_MAX_PODS: i32 = 110;
/// The node CIDR mask sizes Gardener accepts.
pub const NODE_CIDR_MASK_SIZES: std::ops::RangeInclusive<i32> = 16..=28;

/// Why kube-proxy's IPVS mode is refused (the evidence is in docs/gardenlet.md, "Component
/// settings").
pub const IPVS_REFUSAL: &str = "IPVS mode is not supported here: kube-proxy's IPVS proxier needs the ip_vs kernel modules, and a machine shares the seed's kernel, which has no IPVS (CONFIG_IP_VS is not set) and no module loading (CONFIG_MODULES is not set); a tenant's machine may not change the host's kernel anyway, and the kube-proxy image carries no ipset. Use IPTables";

/// Why `podEvictionTimeout` is refused: kube-controller-manager 1.20 reads
/// `--pod-eviction-timeout` only with the taint manager off (`processNoTaintBaseEviction` in
/// `pkg/controller/nodelifecycle`); with it on (the default, and this system's) pods leave a
/// failed node when their `node.kubernetes.io/not-ready`/`unreachable` tolerations end.
pub const POD_EVICTION_TIMEOUT_REFUSAL: &str = "podEvictionTimeout has no effect in Kubernetes 1.20: kube-controller-manager uses --pod-eviction-timeout only with --enable-taint-manager=false, and the taint manager evicts pods when their not-ready/unreachable tolerations end; set spec.kubernetes.kubeAPIServer.defaultNotReadyTolerationSeconds and defaultUnreachableTolerationSeconds instead";

/// The kube-controller-manager of a shoot, the kube-scheduler, kube-proxy and the cluster DNS
/// settings; the version decides which feature gates exist.
pub fn validate(shoot: &Shoot) -> ErrorList {
    let mut errs = ErrorList::default();
    let k = &shoot.spec.kubernetes;
    let kp = Path::new("spec").child("kubernetes");
    errs.extend(kube_controller_manager(shoot, k.kube_controller_manager.as_ref(), &kp.child("kubeControllerManager")));
    if let Some(s) = &k.kube_scheduler {
        errs.extend(kube_scheduler(s, &k.version, &kp.child("kubeScheduler")));
    }
    if let Some(p) = &k.kube_proxy {
        errs.extend(kube_proxy(p, &k.version, &kp.child("kubeProxy")));
    }
    if let Some(c) = &shoot.spec.system_components {
        errs.extend(system_components(c, &Path::new("spec").child("systemComponents")));
    }
    errs
}

/// `nodeCIDRMaskSize` never changes: the nodes' pod ranges were cut with it (Gardener makes it
/// immutable). The default (24) and an explicit 24 are the same value.
pub fn validate_update(new: &Shoot, old: &Shoot) -> ErrorList {
    let mut errs = ErrorList::default();
    let (n, o) = (node_cidr_mask_size(new), node_cidr_mask_size(old));
    if n != o {
        errs.push(FieldError::invalid(
            Path::new("spec").child("kubernetes").child("kubeControllerManager").child("nodeCIDRMaskSize"),
            &n.to_string(),
            format!("field is immutable: the nodes' pod ranges are cut with mask size {o}"),
        ));
    }
    errs
}

/// The node CIDR mask size kube-controller-manager runs with.
pub fn node_cidr_mask_size(shoot: &Shoot) -> i32 {
    shoot
        .spec
        .kubernetes
        .kube_controller_manager
        .as_ref()
        .and_then(|k| k.node_cidr_mask_size)
        .unwrap_or(DEFAULT_NODE_CIDR_MASK_SIZE)
}

/// The largest `maxPods` of the shoot's kubelets (the shoot's and every pool's setting).
fn highest_max_pods(shoot: &Shoot) -> i32 {
    let shoot_level = shoot.spec.kubernetes.kubelet.as_ref().and_then(|k| k.max_pods);
    let pools = shoot
        .spec
        .provider
        .workers
        .iter()
        .filter_map(|w| w.kubernetes.as_ref().and_then(|k| k.kubelet.as_ref()).and_then(|k| k.max_pods));
    shoot_level.into_iter().chain(pools).max().unwrap_or(DEFAULT_MAX_PODS)
}

fn kube_controller_manager(shoot: &Shoot, kcm: Option<&KubeControllerManagerConfig>, path: &Path) -> ErrorList {
    let mut errs = ErrorList::default();
    let mask_path = path.child("nodeCIDRMaskSize");
    let mask = node_cidr_mask_size(shoot);
    if kcm.and_then(|k| k.node_cidr_mask_size).is_some() && !NODE_CIDR_MASK_SIZES.contains(&mask) {
        errs.push(FieldError::invalid(
            mask_path.clone(),
            &mask.to_string(),
            "nodeCIDRMaskSize must be between 16 and 28",
        ));
    } else {
        errs.0.extend(mask_fits_pods(shoot, mask, &mask_path));
        errs.0.extend(mask_fits_max_pods(mask, address_bits(shoot), highest_max_pods(shoot), &mask_path));
    }
    let Some(kcm) = kcm else { return errs };
    if let Some(v) = &kcm.node_monitor_grace_period {
        errs.0.extend(duration_at_least(
            &path.child("nodeMonitorGracePeriod"),
            v,
            1,
            "nodeMonitorGracePeriod must be larger than 0",
        ));
    }
    if kcm.pod_eviction_timeout.is_some() {
        errs.push(FieldError::forbidden(path.child("podEvictionTimeout"), POD_EVICTION_TIMEOUT_REFUSAL));
    }
    if let Some(hpa) = &kcm.horizontal_pod_autoscaler {
        errs.extend(horizontal_pod_autoscaler(hpa, &path.child("horizontalPodAutoscaler")));
    }
    errs.extend(feature_gates::validate(
        &kcm.feature_gates,
        &shoot.spec.kubernetes.version,
        &path.child("featureGates"),
    ));
    errs
}

/// The node mask must cut the pod range into node ranges: not wider than the range itself.
fn mask_fits_pods(shoot: &Shoot, mask: i32, path: &Path) -> Option<FieldError> {
    let pods: IpNet = shoot.spec.networking.as_ref()?.pods.as_deref()?.parse().ok()?;
    let prefix = i32::from(pods.prefix_len());
    (mask < prefix).then(|| {
        FieldError::invalid(
            path.clone(),
            &mask.to_string(),
            format!(
                "a node's pod range (/{mask}) cannot be larger than the shoot's pod range spec.networking.pods {pods} (/{prefix})"
            ),
        )
    })
}

/// The bits of an address of the pod range (32 unless it is IPv6).
fn address_bits(shoot: &Shoot) -> i32 {
    let pods = shoot.spec.networking.as_ref().and_then(|n| n.pods.as_deref()).and_then(|p| p.parse::<IpNet>().ok());
    pods.map_or(32, |p| i32::from(p.max_prefix_len()))
}

/// Gardener's `ValidateNodeCIDRMaskWithMaxPod`: a node's range holds the pods of the busiest
/// kubelet.
fn mask_fits_max_pods(mask: i32, bits: i32, max_pods: i32, path: &Path) -> Option<FieldError> {
    let free_bits = u32::try_from(bits - mask).unwrap_or(0);
    let addresses = 2_i64.checked_pow(free_bits).unwrap_or(i64::MAX);
    (addresses < i64::from(max_pods)).then(|| {
        FieldError::invalid(
            path.clone(),
            &mask.to_string(),
            format!(
                "kubelet or kube-controller configuration incorrect. Please adjust the NodeCIDRMaskSize to support the highest maxPod on any worker pool. The NodeCIDRMaskSize of '{mask} (default: 24)' only supports '{addresses}' IP addresses. Highest maxPod setting on kubelet is '{max_pods} (default: 110)'. Please choose a NodeCIDRMaskSize that at least supports {max_pods} IP addresses"
            ),
        )
    })
}

fn horizontal_pod_autoscaler(hpa: &HorizontalPodAutoscalerConfig, path: &Path) -> ErrorList {
    let mut errs = ErrorList::default();
    const SECOND: i128 = 1_000_000_000;
    let checks = [
        ("syncPeriod", &hpa.sync_period, SECOND, "syncPeriod must not be less than a second"),
        (
            "downscaleStabilization",
            &hpa.downscale_stabilization,
            SECOND,
            "downScale stabilization must not be less than a second",
        ),
        ("initialReadinessDelay", &hpa.initial_readiness_delay, 1, "initial readiness delay must be greater than 0"),
        (
            "cpuInitializationPeriod",
            &hpa.cpu_initialization_period,
            SECOND,
            "cpu initialization period must not be less than a second",
        ),
    ];
    for (field, value, min, detail) in checks {
        if let Some(v) = value {
            errs.0.extend(duration_at_least(&path.child(field), v, min, detail));
        }
    }
    if let Some(t) = hpa.tolerance
        && (t.is_nan() || t <= 0.0)
    {
        errs.push(FieldError::invalid(path.child("tolerance"), &t.to_string(), "tolerance of must be greater than 0"));
    }
    for (field, value) in [("downscaleDelay", &hpa.downscale_delay), ("upscaleDelay", &hpa.upscale_delay)] {
        if value.is_some() {
            errs.push(FieldError::forbidden(
                path.child(field),
                format!("{field} is for Kubernetes < 1.12: kube-controller-manager 1.20 accepts --horizontal-pod-autoscaler-{} only as a no-op; use downscaleStabilization", if field == "downscaleDelay" { "downscale-delay" } else { "upscale-delay" }),
            ));
        }
    }
    errs
}

fn kube_scheduler(s: &KubeSchedulerConfig, version: &str, path: &Path) -> ErrorList {
    let mut errs = feature_gates::validate(&s.feature_gates, version, &path.child("featureGates"));
    if let Some(v) = &s.kube_max_pd_vols
        && v.parse::<i64>().map_or(true, |n| n <= 0)
    {
        // kube-scheduler would log the error and silently use its default.
        errs.push(FieldError::invalid(
            path.child("kubeMaxPDVols"),
            v,
            "must be a positive integer (KUBE_MAX_PD_VOLS; kube-scheduler ignores any other value)",
        ));
    }
    errs
}

fn kube_proxy(p: &KubeProxyConfig, version: &str, path: &Path) -> ErrorList {
    let mut errs = feature_gates::validate(&p.feature_gates, version, &path.child("featureGates"));
    if p.mode == Some(ProxyMode::IPVS) {
        errs.push(FieldError::forbidden(path.child("mode"), IPVS_REFUSAL));
    }
    errs
}

fn system_components(c: &SystemComponents, path: &Path) -> ErrorList {
    let mut errs = ErrorList::default();
    let dns = path.child("coreDNS");
    if let Some(core_dns) = &c.core_dns {
        if let Some(a) = &core_dns.autoscaling {
            let detail = match a.mode {
                CoreDnsAutoscalingMode::Horizontal => {
                    "horizontal autoscaling of the cluster DNS is not supported here: Gardener's mode scales it with a HorizontalPodAutoscaler on CPU usage, and the shoot has no metrics API (no metrics-server) for one to act on; the cluster DNS runs one replica. Leave autoscaling unset"
                }
                CoreDnsAutoscalingMode::ClusterProportional => {
                    "cluster-proportional autoscaling of the cluster DNS is not supported here: it needs the cluster-proportional-autoscaler, which the machines do not carry; the cluster DNS runs one replica. Leave autoscaling unset"
                }
            };
            errs.push(FieldError::forbidden(dns.child("autoscaling").child("mode"), detail));
        }
        if let Some(r) = &core_dns.rewriting
            && !r.common_suffixes.is_empty()
        {
            errs.push(FieldError::forbidden(
                dns.child("rewriting").child("commonSuffixes"),
                "query rewriting is not supported here: the shoot's cluster DNS is this project's server (cluster-dns), authoritative for the cluster domain only; it rewrites nothing and forwards nothing, so a rewritten external name could not be answered anyway",
            ));
        }
    }
    if c.node_local_dns.as_ref().is_some_and(|n| n.enabled) {
        errs.push(FieldError::forbidden(
            path.child("nodeLocalDNS").child("enabled"),
            "node-local DNS is not implemented here: it needs a DNS cache on every node (the node-cache image and its link-local listen address with NOTRACK rules in the node's network namespace), which the machines do not carry; pods ask the cluster DNS Service directly",
        ));
    }
    errs
}

/// Errors when `value` is not a Go duration of at least `min_nanos` nanoseconds.
fn duration_at_least(path: &Path, value: &str, min_nanos: i128, detail: &str) -> Option<FieldError> {
    match parse_go_duration(value) {
        Err(problem) => Some(FieldError::invalid(path.clone(), value, format!("not a duration: {problem}"))),
        Ok(n) if n < min_nanos => Some(FieldError::invalid(path.clone(), value, detail)),
        Ok(_) => None,
    }
}

pub use api::helpers::duration::parse_go_duration;

#[cfg(test)]
mod tests;
