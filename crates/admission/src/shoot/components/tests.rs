//! Each rule of [`super`]: the valid settings pass, every refusal names its field and reason.

use super::*;
use crate::fixtures;
use serde_json::json;

/// The fixture shoot (1.20.2, pods 100.96.0.0/11 after defaulting) with `patch` merged into its
/// spec.
fn shoot(spec_patch: serde_json::Value) -> Shoot {
    let mut value = serde_json::to_value(fixtures::shoot()).unwrap();
    value["spec"]["kubernetes"]["version"] = json!("1.20.2");
    value["spec"]["networking"]["pods"] = json!("100.96.0.0/11");
    merge(&mut value["spec"], spec_patch);
    serde_json::from_value(value).unwrap()
}

fn merge(target: &mut serde_json::Value, patch: serde_json::Value) {
    match (target, patch) {
        (serde_json::Value::Object(t), serde_json::Value::Object(p)) => {
            for (k, v) in p {
                merge(t.entry(k).or_insert(serde_json::Value::Null), v);
            }
        }
        (t, p) => *t = p,
    }
}

fn errors(spec_patch: serde_json::Value) -> Vec<String> {
    validate(&shoot(spec_patch)).iter().map(ToString::to_string).collect()
}

/// Exactly one error, at `path`, containing `detail`.
fn refused(spec_patch: serde_json::Value, path: &str, detail: &str) {
    let errs = validate(&shoot(spec_patch.clone()));
    assert_eq!(errs.len(), 1, "{spec_patch}: {errs}");
    assert!(errs.has(path), "{spec_patch}: wanted {path}, got {errs}");
    assert!(errs.to_string().contains(detail), "{spec_patch}: wanted {detail:?} in {errs}");
}

#[test]
fn every_honoured_setting_passes() {
    let errs = errors(json!({
        "kubernetes": {
            "kubeControllerManager": {
                "nodeCIDRMaskSize": 25,
                "nodeMonitorGracePeriod": "40s",
                "featureGates": { "HPAScaleToZero": true, "RotateKubeletServerCertificate": true },
                "horizontalPodAutoscaler": {
                    "syncPeriod": "30s", "tolerance": 0.1, "downscaleStabilization": "5m",
                    "initialReadinessDelay": "30s", "cpuInitializationPeriod": "5m0s"
                }
            },
            "kubeScheduler": { "profile": "bin-packing", "kubeMaxPDVols": "25", "featureGates": { "DefaultPodTopologySpread": false } },
            "kubeProxy": { "mode": "IPTables", "enabled": false, "featureGates": { "EndpointSliceProxying": false } }
        },
        "systemComponents": { "nodeLocalDNS": { "enabled": false, "forceTCPToClusterDNS": true } }
    }));
    assert!(errs.is_empty(), "{errs:?}");
}

#[test]
fn ipvs_is_refused_with_the_kernel_as_reason() {
    refused(
        json!({"kubernetes": {"kubeProxy": {"mode": "IPVS"}}}),
        "spec.kubernetes.kubeProxy.mode",
        "CONFIG_IP_VS is not set",
    );
}

#[test]
fn node_cidr_mask_size_is_range_checked_against_gardener_s_bounds() {
    let p = "spec.kubernetes.kubeControllerManager.nodeCIDRMaskSize";
    refused(json!({"kubernetes": {"kubeControllerManager": {"nodeCIDRMaskSize": 15}}}), p, "between 16 and 28");
    refused(json!({"kubernetes": {"kubeControllerManager": {"nodeCIDRMaskSize": 29}}}), p, "between 16 and 28");
}

#[test]
fn node_cidr_mask_size_must_fit_the_pod_range() {
    let p = "spec.kubernetes.kubeControllerManager.nodeCIDRMaskSize";
    refused(
        json!({"networking": {"pods": "10.0.0.0/20"}, "kubernetes": {"kubeControllerManager": {"nodeCIDRMaskSize": 18}}}),
        p,
        "cannot be larger than the shoot's pod range spec.networking.pods 10.0.0.0/20",
    );
    assert!(errors(json!({"networking": {"pods": "10.0.0.0/20"}, "kubernetes": {"kubeControllerManager": {"nodeCIDRMaskSize": 20}}})).is_empty());
}

#[test]
fn node_cidr_mask_size_must_hold_the_highest_max_pods() {
    let p = "spec.kubernetes.kubeControllerManager.nodeCIDRMaskSize";
    // /26: 64 addresses; the default maxPods is 110.
    refused(
        json!({"kubernetes": {"kubeControllerManager": {"nodeCIDRMaskSize": 26}}}),
        p,
        "only supports '64' IP addresses",
    );
    assert!(
        errors(json!({"kubernetes": {"kubeControllerManager": {"nodeCIDRMaskSize": 26}, "kubelet": {"maxPods": 64}}}))
            .is_empty()
    );
    // A pool's kubelet with more pods than the default mask holds (256 at /24).
    let mut s = shoot(json!({}));
    s.spec.provider.workers[0].kubernetes = Some(serde_json::from_value(json!({"kubelet": {"maxPods": 300}})).unwrap());
    let errs = validate(&s);
    assert!(errs.has(p) && errs.to_string().contains("Highest maxPod setting on kubelet is '300"), "{errs}");
}

#[test]
fn node_cidr_mask_size_is_immutable() {
    let with = |m: Option<i32>| {
        let mut s = shoot(json!({}));
        s.spec.kubernetes.kube_controller_manager =
            Some(KubeControllerManagerConfig { node_cidr_mask_size: m, ..Default::default() });
        s
    };
    let errs = validate_update(&with(Some(25)), &with(None));
    assert_eq!(
        errs.to_string(),
        "spec.kubernetes.kubeControllerManager.nodeCIDRMaskSize: Invalid value: \"25\": field is immutable: the nodes' pod ranges are cut with mask size 24"
    );
    assert!(validate_update(&with(Some(24)), &with(None)).is_empty(), "the default is 24");
    assert!(validate_update(&with(Some(25)), &with(Some(25))).is_empty());
}

#[test]
fn durations_parse_and_are_positive() {
    let kcm = "spec.kubernetes.kubeControllerManager";
    refused(
        json!({"kubernetes": {"kubeControllerManager": {"nodeMonitorGracePeriod": "0s"}}}),
        &format!("{kcm}.nodeMonitorGracePeriod"),
        "nodeMonitorGracePeriod must be larger than 0",
    );
    refused(
        json!({"kubernetes": {"kubeControllerManager": {"nodeMonitorGracePeriod": "forty"}}}),
        &format!("{kcm}.nodeMonitorGracePeriod"),
        "not a duration",
    );
    let hpa = format!("{kcm}.horizontalPodAutoscaler");
    for (field, value, detail) in [
        ("syncPeriod", "500ms", "syncPeriod must not be less than a second"),
        ("downscaleStabilization", "-5m", "downScale stabilization must not be less than a second"),
        ("initialReadinessDelay", "0", "initial readiness delay must be greater than 0"),
        ("cpuInitializationPeriod", "1x", "unknown unit"),
    ] {
        refused(
            json!({"kubernetes": {"kubeControllerManager": {"horizontalPodAutoscaler": {field: value}}}}),
            &format!("{hpa}.{field}"),
            detail,
        );
    }
    refused(
        json!({"kubernetes": {"kubeControllerManager": {"horizontalPodAutoscaler": {"tolerance": 0.0}}}}),
        &format!("{hpa}.tolerance"),
        "greater than 0",
    );
}

#[test]
fn pod_eviction_timeout_is_refused_as_a_no_op_of_1_20() {
    refused(
        json!({"kubernetes": {"kubeControllerManager": {"podEvictionTimeout": "2m"}}}),
        "spec.kubernetes.kubeControllerManager.podEvictionTimeout",
        "only with --enable-taint-manager=false",
    );
}

#[test]
fn pre_1_12_autoscaler_delays_are_refused() {
    let hpa = "spec.kubernetes.kubeControllerManager.horizontalPodAutoscaler";
    refused(
        json!({"kubernetes": {"kubeControllerManager": {"horizontalPodAutoscaler": {"downscaleDelay": "5m"}}}}),
        &format!("{hpa}.downscaleDelay"),
        "only as a no-op",
    );
    refused(
        json!({"kubernetes": {"kubeControllerManager": {"horizontalPodAutoscaler": {"upscaleDelay": "3m"}}}}),
        &format!("{hpa}.upscaleDelay"),
        "--horizontal-pod-autoscaler-upscale-delay",
    );
}

#[test]
fn unknown_and_locked_feature_gates_are_refused_for_every_component() {
    for component in ["kubeControllerManager", "kubeScheduler", "kubeProxy"] {
        refused(
            json!({"kubernetes": {component: {"featureGates": {"NoSuchGate": true}}}}),
            &format!("spec.kubernetes.{component}.featureGates.NoSuchGate"),
            "unknown feature gate: Kubernetes 1.20.2 has no feature gate NoSuchGate",
        );
        refused(
            json!({"kubernetes": {component: {"featureGates": {"StartupProbe": false}}}}),
            &format!("spec.kubernetes.{component}.featureGates.StartupProbe"),
            "cannot set feature gate to false, feature is locked to true",
        );
    }
    // A gate of a later Kubernetes (1.22's) is unknown to 1.20.
    refused(
        json!({"kubernetes": {"kubeProxy": {"featureGates": {"ProxyTerminatingEndpoints": true}}}}),
        "spec.kubernetes.kubeProxy.featureGates.ProxyTerminatingEndpoints",
        "unknown feature gate",
    );
    assert!(
        errors(json!({"kubernetes": {"kubeProxy": {"featureGates": {"AllAlpha": true, "StartupProbe": true}}}}))
            .is_empty()
    );
}

#[test]
fn kube_max_pd_vols_must_be_a_positive_integer() {
    let p = "spec.kubernetes.kubeScheduler.kubeMaxPDVols";
    refused(json!({"kubernetes": {"kubeScheduler": {"kubeMaxPDVols": "many"}}}), p, "must be a positive integer");
    refused(json!({"kubernetes": {"kubeScheduler": {"kubeMaxPDVols": "0"}}}), p, "must be a positive integer");
    // Go's strconv.Atoi refuses surrounding blanks: kube-scheduler would ignore " 25".
    refused(json!({"kubernetes": {"kubeScheduler": {"kubeMaxPDVols": " 25"}}}), p, "must be a positive integer");
}

#[test]
fn cluster_dns_autoscaling_rewriting_and_node_local_dns_are_refused() {
    let dns = "spec.systemComponents.coreDNS";
    refused(
        json!({"systemComponents": {"coreDNS": {"autoscaling": {"mode": "horizontal"}}}}),
        &format!("{dns}.autoscaling.mode"),
        "no metrics API",
    );
    refused(
        json!({"systemComponents": {"coreDNS": {"autoscaling": {"mode": "cluster-proportional"}}}}),
        &format!("{dns}.autoscaling.mode"),
        "cluster-proportional-autoscaler",
    );
    refused(
        json!({"systemComponents": {"coreDNS": {"rewriting": {"commonSuffixes": ["gardener.cloud"]}}}}),
        &format!("{dns}.rewriting.commonSuffixes"),
        "rewrites nothing and forwards nothing",
    );
    refused(
        json!({"systemComponents": {"nodeLocalDNS": {"enabled": true}}}),
        "spec.systemComponents.nodeLocalDNS.enabled",
        "node-local DNS is not implemented",
    );
    assert!(errors(json!({"systemComponents": {"coreDNS": {"rewriting": {"commonSuffixes": []}}}})).is_empty());
}

#[test]
fn go_durations() {
    let s = 1_000_000_000_i128;
    for (text, nanos) in [
        ("0", 0),
        ("1s", s),
        ("1m0s", 60 * s),
        ("1h2m0.5s", 3720 * s + s / 2),
        ("300ms", 300_000_000),
        ("-1s", -s),
        ("1.5h", 5400 * s),
        ("10us", 10_000),
    ] {
        assert_eq!(parse_go_duration(text), Ok(nanos), "{text}");
    }
    for bad in ["", "1", "s", "1.2.3s", "1d", "--1s", "1s "] {
        assert!(parse_go_duration(bad).is_err(), "{bad}");
    }
}

#[test]
fn the_gate_table_is_sorted_and_complete_for_1_20() {
    assert!(feature_gates::GATES.windows(2).all(|w| w[0].name < w[1].name));
    assert_eq!(feature_gates::GATES.len(), 117);
    let gate = feature_gates::find("EndpointSliceProxying").unwrap();
    assert!(gate.default && !gate.locked);
    assert!(feature_gates::find("APIPriorityAndFairness").is_some(), "generic apiserver gates are included");
    assert!(feature_gates::find("ServiceNodeExclusion").is_some(), "controller-manager gates are included");
}
