#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use super::*;
use serde_json::{Value, json};

const K: &str = "spec.kubernetes.kubelet";

/// A shoot of `version` with the shoot-level kubelet settings `kubelet` and the pools `pools`
/// (`(name, kubernetes)`, the pool's `kubernetes` as JSON).
fn shoot_with(version: &str, kubelet: Option<Value>, pools: &[(&str, Option<Value>)]) -> Shoot {
    let workers: Vec<Value> = pools
        .iter()
        .map(|(name, kubernetes)| {
            let mut w = json!({"name": name, "machine": {"type": "local"}, "minimum": 1, "maximum": 1});
            if let Some(k) = kubernetes {
                w["kubernetes"] = k.clone();
            }
            w
        })
        .collect();
    let mut s = json!({
        "apiVersion": "core.gardener.cloud/v1beta1",
        "kind": "Shoot",
        "metadata": {"name": "demo", "namespace": "garden-dev"},
        "spec": {"region": "local", "provider": {"type": "local", "workers": workers}, "kubernetes": {"version": version}},
    });
    if let Some(k) = kubelet {
        s["spec"]["kubernetes"]["kubelet"] = k;
    }
    serde_json::from_value(s).unwrap()
}

/// The errors of a shoot of `version` whose only kubelet settings are `kubelet` (shoot level).
fn errors(version: &str, kubelet: Value) -> ErrorList {
    validate(&shoot_with(version, Some(kubelet), &[("a", None)]))
}

/// Asserts that `kubelet` on `version` is refused exactly once at `field` (below
/// `spec.kubernetes.kubelet`) with an error whose text contains `detail`.
#[track_caller]
fn refused(version: &str, kubelet: Value, field: &str, detail: &str) {
    let errs = errors(version, kubelet.clone());
    let path = format!("{K}.{field}");
    let at: Vec<String> = errs.iter().filter(|e| e.path.as_str() == path).map(ToString::to_string).collect();
    assert_eq!(at.len(), 1, "{kubelet} on {version}: want one error at {path}, got: {errs}");
    assert!(at[0].contains(detail), "{kubelet} on {version}: {:?} should contain {detail:?}", at[0]);
    assert!(at[0].starts_with(&path), "the message names the field: {}", at[0]);
}

#[track_caller]
fn accepted(version: &str, kubelet: Value) {
    let errs = errors(version, kubelet.clone());
    assert!(errs.is_empty(), "{kubelet} on {version}: {errs}");
}

#[test]
fn every_setting_the_1_20_kubelet_can_do_is_accepted() {
    accepted(
        "1.20.2",
        json!({
            "featureGates": {"RotateKubeletServerCertificate": true},
            "cpuCFSQuota": false,
            "cpuManagerPolicy": "none",
            "evictionHard": {"memoryAvailable": "200Mi", "imageFSAvailable": "5%", "imageFSInodesFree": "5%", "nodeFSAvailable": "5%", "nodeFSInodesFree": "0%"},
            "evictionSoft": {"memoryAvailable": "400Mi", "nodeFSAvailable": "10%"},
            "evictionSoftGracePeriod": {"memoryAvailable": "1m30s", "nodeFSAvailable": "0s"},
            "evictionMinimumReclaim": {"memoryAvailable": "0Mi", "nodeFSAvailable": "1Gi"},
            "evictionMaxPodGracePeriod": 0,
            "evictionPressureTransitionPeriod": "4m",
            "maxPods": 64,
            "podPidsLimit": 100,
            "failSwapOn": true,
            "kubeReserved": {"cpu": "80m", "memory": "1Gi", "ephemeralStorage": "1Gi", "pid": "20k"},
            "systemReserved": {"cpu": "0", "memory": "0.5Gi"},
            "imageGCHighThresholdPercent": 90,
            "imageGCLowThresholdPercent": 70,
            "imageMinimumGCAge": "3m",
            "serializeImagePulls": true,
            "registryPullQPS": 0,
            "registryBurst": 20,
            "containerLogMaxSize": "50Mi",
            "containerLogMaxFiles": 2,
            "protectKernelDefaults": false,
            "streamingConnectionIdleTimeout": "4h",
        }),
    );
    assert!(validate(&shoot_with("1.20.2", None, &[("a", None)])).is_empty(), "no settings");
}

#[test]
fn fields_newer_than_the_kubelet_are_refused_naming_the_field_and_the_version() {
    let cases = [
        (json!({"seccompDefault": true}), "seccompDefault", "1.25", "1.24.9"),
        (json!({"seccompDefault": false}), "seccompDefault", "1.25", "1.20.2"),
        (json!({"memorySwap": {}, "featureGates": {}}), "memorySwap", "1.22", "1.21.0"),
        (json!({"imageMaximumGCAge": "24h"}), "imageMaximumGCAge", "1.29", "1.28.3"),
        (json!({"maxParallelImagePulls": 2}), "maxParallelImagePulls", "1.27", "1.26.1"),
    ];
    for (kubelet, field, min, version) in cases {
        refused(version, kubelet.clone(), field, &format!("{field} needs Kubernetes {min} or later"));
        refused(version, kubelet, field, &format!("this kubelet runs Kubernetes {version}"));
    }
    // The user's case: seccompDefault on 1.20 used to be accepted and silently ignored.
    refused(
        "1.20.2",
        json!({"seccompDefault": true}),
        "seccompDefault",
        "Forbidden: seccompDefault needs Kubernetes 1.25",
    );
    accepted("1.25.0", json!({"seccompDefault": true}));
    accepted("v1.27.1", json!({"maxParallelImagePulls": 2}));
    accepted("1.30.0", json!({"imageMaximumGCAge": "24h"}));
}

#[test]
fn seccomp_default_needs_its_feature_gate_when_the_gate_is_set() {
    refused(
        "1.26.0",
        json!({"seccompDefault": true, "featureGates": {"SeccompDefault": false}}),
        "seccompDefault",
        "feature gate is disabled",
    );
    accepted("1.26.0", json!({"seccompDefault": false, "featureGates": {"SeccompDefault": false}}));
    accepted("1.26.0", json!({"seccompDefault": true, "featureGates": {"SeccompDefault": true}}));
}

#[test]
fn swap_needs_node_swap_no_fail_swap_on_and_a_behaviour_of_the_version() {
    let gate = json!({"NodeSwap": true});
    accepted("1.22.0", json!({"memorySwap": {"swapBehavior": "LimitedSwap"}, "featureGates": gate}));
    accepted("1.28.0", json!({"memorySwap": {"swapBehavior": "UnlimitedSwap"}, "featureGates": gate}));
    accepted("1.30.0", json!({"memorySwap": {"swapBehavior": "NoSwap"}, "featureGates": gate}));
    refused(
        "1.28.0",
        json!({"memorySwap": {"swapBehavior": "LimitedSwap"}, "failSwapOn": true, "featureGates": gate}),
        "memorySwap",
        "'FailSwapOn=true'",
    );
    refused("1.28.0", json!({"memorySwap": {"swapBehavior": "LimitedSwap"}}), "memorySwap", "'NodeSwap' feature gate");
    refused(
        "1.28.0",
        json!({"memorySwap": {"swapBehavior": "NoSwap"}, "featureGates": gate}),
        "memorySwap.swapBehavior",
        "supported values: \"LimitedSwap\", \"UnlimitedSwap\"",
    );
    refused(
        "1.30.0",
        json!({"memorySwap": {"swapBehavior": "UnlimitedSwap"}, "featureGates": gate}),
        "memorySwap.swapBehavior",
        "supported values: \"NoSwap\", \"LimitedSwap\"",
    );
}

#[test]
fn image_maximum_gc_age_rules() {
    refused("1.29.1", json!({"imageMaximumGCAge": "24h"}), "imageMaximumGCAge", "feature gate ImageMaximumGCAge");
    accepted("1.29.1", json!({"imageMaximumGCAge": "24h", "featureGates": {"ImageMaximumGCAge": true}}));
    accepted("1.30.0", json!({"imageMaximumGCAge": "0s"}));
    refused("1.30.0", json!({"imageMaximumGCAge": "1m"}), "imageMaximumGCAge", "greater than imageMinimumGCAge");
    refused(
        "1.30.0",
        json!({"imageMaximumGCAge": "5m", "imageMinimumGCAge": "10m"}),
        "imageMaximumGCAge",
        "greater than",
    );
    refused("1.30.0", json!({"imageMaximumGCAge": "-1s"}), "imageMaximumGCAge", "must be non-negative");
    refused("1.30.0", json!({"imageMaximumGCAge": "a day"}), "imageMaximumGCAge", "not a duration");
}

#[test]
fn max_parallel_image_pulls_rules() {
    refused("1.27.0", json!({"maxParallelImagePulls": 0}), "maxParallelImagePulls", "value must be >= 1");
    refused(
        "1.27.0",
        json!({"maxParallelImagePulls": 3, "serializeImagePulls": true}),
        "maxParallelImagePulls",
        "serializeImagePulls is set to true",
    );
    accepted("1.27.0", json!({"maxParallelImagePulls": 1, "serializeImagePulls": true}));
    accepted("1.27.0", json!({"maxParallelImagePulls": 5}));
}

#[test]
fn image_pull_progress_deadline_and_late_system_reserved_are_refused() {
    for version in ["1.20.2", "1.30.0"] {
        refused(version, json!({"imagePullProgressDeadline": "1m"}), "imagePullProgressDeadline", "containerd");
    }
    refused("1.31.0", json!({"systemReserved": {"cpu": "1"}}), "systemReserved", "starting from Kubernetes 1.31");
    accepted("1.30.9", json!({"systemReserved": {"cpu": "1"}}));
}

#[test]
fn settings_that_cannot_take_effect_on_nested_machines_are_refused_with_the_reason() {
    refused("1.20.2", json!({"protectKernelDefaults": true}), "protectKernelDefaults", "share the seed's kernel");
    refused("1.20.2", json!({"protectKernelDefaults": true}), "protectKernelDefaults", "vm.overcommit_memory=1");
    accepted("1.20.2", json!({"protectKernelDefaults": false}));
    let errs = errors("1.20.2", json!({"cpuManagerPolicy": "static"}));
    let at: Vec<String> = errs.iter().map(ToString::to_string).collect();
    assert_eq!(at.len(), 2, "{errs}");
    assert!(at[0].starts_with(
        "spec.kubernetes.kubelet.cpuManagerPolicy: Forbidden: cpuManagerPolicy static cannot take effect"
    ));
    assert!(at[0].contains("each machine's kubelet would hand out the same CPUs"), "{}", at[0]);
    assert!(at[1].contains("needs kubeReserved.cpu or systemReserved.cpu above 0"), "{}", at[1]);
    refused(
        "1.20.2",
        json!({"cpuManagerPolicy": "static", "kubeReserved": {"cpu": "100m"}}),
        "cpuManagerPolicy",
        "Forbidden",
    );
    refused(
        "1.20.2",
        json!({"cpuManagerPolicy": "dynamic"}),
        "cpuManagerPolicy",
        "supported values: \"none\", \"static\"",
    );
}

#[test]
fn single_values_are_checked_as_gardener_and_the_kubelet_do() {
    let cases: &[(Value, &str, &str)] = &[
        (json!({"maxPods": -1}), "maxPods", "must be greater than or equal to 0"),
        (json!({"maxPods": 0}), "maxPods", "its default (110)"),
        (json!({"podPidsLimit": 99}), "podPidsLimit", "must be at least 100"),
        (json!({"imageGCHighThresholdPercent": 101}), "imageGCHighThresholdPercent", "in [0,100]"),
        (json!({"imageGCLowThresholdPercent": -1}), "imageGCLowThresholdPercent", "in [0,100]"),
        (
            json!({"imageGCHighThresholdPercent": 50, "imageGCLowThresholdPercent": 50}),
            "imageGCLowThresholdPercent",
            "must be less than imageGCHighThresholdPercent",
        ),
        (json!({"imageGCHighThresholdPercent": 80}), "imageGCHighThresholdPercent", "the kubelet's default 80"),
        (json!({"imageGCLowThresholdPercent": 85}), "imageGCLowThresholdPercent", "the kubelet's default 85"),
        (json!({"registryPullQPS": -1}), "registryPullQPS", "greater than or equal to 0"),
        (json!({"registryBurst": -1}), "registryBurst", "greater than or equal to 0"),
        (json!({"registryBurst": 0}), "registryBurst", "its default (10)"),
        (json!({"containerLogMaxFiles": 1}), "containerLogMaxFiles", "value must be >= 2."),
        (json!({"containerLogMaxSize": "-1Mi"}), "containerLogMaxSize", "must be a non-negative quantity"),
        (json!({"containerLogMaxSize": "1500m"}), "containerLogMaxSize", "whole number of bytes"),
        (json!({"containerLogMaxSize": "big"}), "containerLogMaxSize", "must be a quantity"),
        (json!({"streamingConnectionIdleTimeout": "29s"}), "streamingConnectionIdleTimeout", "between 30s and 4h"),
        (json!({"streamingConnectionIdleTimeout": "4h0m1s"}), "streamingConnectionIdleTimeout", "between 30s and 4h"),
        (json!({"streamingConnectionIdleTimeout": "5 minutes"}), "streamingConnectionIdleTimeout", "not a duration"),
        (json!({"kubeReserved": {"cpu": "-1"}}), "kubeReserved.cpu", "must be a non-negative quantity"),
        (
            json!({"systemReserved": {"ephemeralStorage": "lots"}}),
            "systemReserved.ephemeralStorage",
            "must be a quantity",
        ),
        (json!({"kubeReserved": {"pid": "-5"}}), "kubeReserved.pid", "must be a non-negative quantity"),
        (json!({"imageMinimumGCAge": "0s"}), "imageMinimumGCAge", "its default (2m)"),
        (json!({"imageMinimumGCAge": "-1m"}), "imageMinimumGCAge", "must be non-negative"),
        (json!({"imageMinimumGCAge": "2"}), "imageMinimumGCAge", "missing unit"),
    ];
    for (kubelet, field, detail) in cases {
        refused("1.20.2", kubelet.clone(), field, detail);
    }
    for kubelet in [
        json!({"maxPods": 1}),
        json!({"podPidsLimit": 100}),
        json!({"imageGCHighThresholdPercent": 81}),
        json!({"imageGCLowThresholdPercent": 84}),
        json!({"imageGCHighThresholdPercent": 100, "imageGCLowThresholdPercent": 0}),
        json!({"containerLogMaxSize": "0.5Ki"}),
        json!({"streamingConnectionIdleTimeout": "30s"}),
        json!({"kubeReserved": {"cpu": "0"}}),
    ] {
        accepted("1.20.2", kubelet);
    }
}

#[test]
fn eviction_values_parse_as_the_kubelet_parses_them() {
    let cases: &[(Value, &str, &str)] = &[
        (json!({"evictionHard": {"memoryAvailable": "0"}}), "evictionHard.memoryAvailable", "must be greater than 0"),
        (
            json!({"evictionHard": {"nodeFSAvailable": "101%"}}),
            "evictionHard.nodeFSAvailable",
            "must not be greater than 100%",
        ),
        (json!({"evictionSoft": {"imageFSAvailable": "5.5%"}}), "evictionSoft.imageFSAvailable", "or a percentage"),
        (json!({"evictionSoft": {"imageFSInodesFree": "-5%"}}), "evictionSoft.imageFSInodesFree", "or a percentage"),
        (
            json!({"evictionHard": {"nodeFSInodesFree": "lots"}}),
            "evictionHard.nodeFSInodesFree",
            "valid resource quantity",
        ),
        (
            json!({"evictionHard": {"imageFSInodesFree": "-1"}}),
            "evictionHard.imageFSInodesFree",
            "must be greater than 0",
        ),
        (
            json!({"evictionSoftGracePeriod": {"memoryAvailable": "soon"}}),
            "evictionSoftGracePeriod.memoryAvailable",
            "not a duration",
        ),
        (
            json!({"evictionSoftGracePeriod": {"nodeFSInodesFree": "-1s"}}),
            "evictionSoftGracePeriod.nodeFSInodesFree",
            "must be non-negative",
        ),
        (
            json!({"evictionMinimumReclaim": {"imageFSAvailable": "-1Mi"}}),
            "evictionMinimumReclaim.imageFSAvailable",
            "must be a non-negative quantity",
        ),
        (
            json!({"evictionMinimumReclaim": {"nodeFSInodesFree": "x"}}),
            "evictionMinimumReclaim.nodeFSInodesFree",
            "quantity",
        ),
        (json!({"evictionPressureTransitionPeriod": "0"}), "evictionPressureTransitionPeriod", "its default (5m)"),
        (json!({"evictionPressureTransitionPeriod": "-1m"}), "evictionPressureTransitionPeriod", "non-negative"),
        (json!({"evictionPressureTransitionPeriod": "1x"}), "evictionPressureTransitionPeriod", "not a duration"),
        (json!({"evictionMaxPodGracePeriod": -1}), "evictionMaxPodGracePeriod", "greater than or equal to 0"),
    ];
    for (kubelet, field, detail) in cases {
        refused("1.20.2", kubelet.clone(), field, detail);
    }
    accepted(
        "1.20.2",
        json!({"evictionHard": {"memoryAvailable": "1", "nodeFSAvailable": "100%", "imageFSAvailable": "0%"}}),
    );
}

#[test]
fn feature_gates_the_version_does_not_know_and_unknown_fields_are_refused() {
    refused(
        "1.20.2",
        json!({"featureGates": {"SeccompDefault": true}}),
        "featureGates.SeccompDefault",
        "no feature gate SeccompDefault",
    );
    refused("1.20.2", json!({"featureGates": {"BlockVolume": false}}), "featureGates.BlockVolume", "locked to true");
    refused("1.20.2", json!({"singleProcessOOMKill": true}), "singleProcessOOMKill", "stored and ignored");
}

#[test]
fn a_pool_is_checked_on_its_own_settings_and_version() {
    let pool = |k: Value| Some(json!({"version": "1.24.0", "kubelet": k}));
    let s = shoot_with(
        "1.26.0",
        Some(json!({"seccompDefault": true})),
        &[("own", pool(json!({"seccompDefault": true, "maxPods": -1}))), ("plain", None)],
    );
    let errs = validate(&s);
    let shown: Vec<String> = errs.iter().map(ToString::to_string).collect();
    assert_eq!(errs.len(), 2, "{errs}");
    assert!(shown[0].starts_with(
        "spec.provider.workers[0].kubernetes.kubelet.seccompDefault: Forbidden: seccompDefault needs Kubernetes 1.25 or later"
    ));
    assert!(shown[0].contains("this kubelet runs Kubernetes 1.24.0"), "the pool's version: {}", shown[0]);
    assert!(shown[1].starts_with("spec.provider.workers[0].kubernetes.kubelet.maxPods: Invalid value"));
    // A pool without settings of its own inherits the shoot's, and is checked on its version.
    let s = shoot_with(
        "1.26.0",
        Some(json!({"seccompDefault": true})),
        &[("old", Some(json!({"version": "1.24.0"}))), ("new", None)],
    );
    let errs = validate(&s);
    assert_eq!(errs.len(), 1, "{errs}");
    let e = errs.iter().next().unwrap().to_string();
    assert!(
        e.starts_with("spec.kubernetes.kubelet.seccompDefault: Forbidden: seccompDefault needs Kubernetes 1.25"),
        "{e}"
    );
    assert!(
        e.contains("worker pool \"old\", spec.provider.workers[0], inherits these settings on Kubernetes 1.24.0"),
        "{e}"
    );
    // Refused at the shoot level already: not again for each pool.
    let s = shoot_with(
        "1.24.0",
        Some(json!({"seccompDefault": true})),
        &[("a", Some(json!({"version": "1.23.0"}))), ("b", Some(json!({"version": "1.22.0"})))],
    );
    assert_eq!(validate(&s).len(), 1, "{}", validate(&s));
    // A pool's own settings replace the shoot's: the shoot's do not apply to it.
    let s = shoot_with(
        "1.26.0",
        Some(json!({"seccompDefault": true})),
        &[("old", Some(json!({"version": "1.24.0", "kubelet": {"maxPods": 50}})))],
    );
    assert!(validate(&s).is_empty(), "{}", validate(&s));
}

#[test]
fn a_workerless_shoot_has_no_kubelet_to_configure() {
    let errs = validate(&shoot_with("1.20.2", Some(json!({"maxPods": 50})), &[]));
    assert_eq!(
        errs.to_string(),
        "spec.kubernetes.kubelet: Forbidden: this field should not be set for workerless Shoot clusters: they have no kubelets"
    );
    assert!(validate(&shoot_with("1.20.2", None, &[])).is_empty());
}

#[test]
fn create_and_update_apply_the_kubelet_rules() {
    use crate::fixtures;
    use crate::identity::{Identities, UserInfo};
    let mut s = fixtures::shoot();
    s.spec.kubernetes.kubelet = Some(KubeletConfig { protect_kernel_defaults: Some(true), ..Default::default() });
    let user = UserInfo::new("alice", &["system:authenticated"]);
    let ids = Identities::default_seed_assigners();
    let profile = fixtures::cloud_profile_spec();
    let ctx = crate::shoot::ShootContext::with_profile(Some(&profile), fixtures::now(), &user, &ids);
    let path = "spec.kubernetes.kubelet.protectKernelDefaults";
    let mine =
        |errs: &ErrorList| errs.iter().any(|e| e.path.as_str() == path && e.detail == PROTECT_KERNEL_DEFAULTS_REFUSAL);
    assert!(mine(&crate::shoot::validate_create(&s, ctx)), "create");
    assert!(mine(&crate::shoot::validate_update(&s, &s, ctx)), "update, even when unchanged");
}
