#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use super::*;
use crate::shoot::objects::extensions::{BOOTSTRAP_KUBECONFIG_PATH, node_agent_secret_name, operating_system_configs};
use api::extensions::OperatingSystemConfig;
use serde_json::{Value, json};

/// A shoot with two pools, `a` and `b`; `kubelet` is the shoot's `spec.kubernetes.kubelet`,
/// `a`/`b` the pools' own `kubernetes.kubelet` (JSON, the API's names).
fn shoot(kubelet: Option<Value>, a: Option<Value>, b: Option<Value>) -> Shoot {
    let pool = |name: &str, kubelet: Option<Value>| {
        let mut p = json!({"name": name, "machine": {"type": "local", "image": {"name": "local", "version": "1.0.0"}}, "minimum": 1, "maximum": 1});
        if let Some(k) = kubelet {
            p["kubernetes"] = json!({"kubelet": k});
        }
        p
    };
    let mut s = json!({
        "apiVersion": "core.gardener.cloud/v1beta1",
        "kind": "Shoot",
        "metadata": {"name": "demo", "namespace": "garden-dev"},
        "spec": {
            "region": "local",
            "provider": {"type": "local", "workers": [pool("a", a), pool("b", b)]},
            "kubernetes": {"version": "1.20.2"},
            "networking": {"type": "local", "pods": "10.96.0.0/11", "services": "10.112.0.0/13"},
        },
    });
    if let Some(k) = kubelet {
        s["spec"]["kubernetes"]["kubelet"] = k;
    }
    serde_json::from_value(s).unwrap()
}

fn values(s: &Shoot) -> ShootValues {
    ShootValues::new(s, None).unwrap()
}

/// Pool `i`'s kubelet configuration file, parsed back.
fn pool_file(s: &Shoot, i: usize) -> Value {
    let text = pool_config(&values(s), s, &s.spec.provider.workers[i]);
    serde_yaml::from_str(&text).unwrap()
}

/// The configuration before this module: the hard-coded file every pool got.
fn former_file(dns: &str) -> String {
    format!(
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nauthentication:\n  anonymous:\n    enabled: false\n  webhook:\n    enabled: true\n  x509:\n    clientCAFile: {KUBELET_CLIENT_CA_PATH}\nauthorization:\n  mode: Webhook\nrotateCertificates: true\ncgroupDriver: cgroupfs\nfailSwapOn: false\nreadOnlyPort: 0\nclusterDomain: cluster.local\nclusterDNS:\n- {dns}\nevictionHard:\n  memory.available: 100Mi\n  nodefs.available: \"1%\"\n  nodefs.inodesFree: \"1%\"\n  imagefs.available: \"1%\"\nimageGCHighThresholdPercent: 100\nimageGCLowThresholdPercent: 99\nserializeImagePulls: false\nmaxPods: 110\n"
    )
}

#[test]
fn without_settings_a_pool_gets_exactly_the_former_base() {
    let s = shoot(None, None, None);
    let v = values(&s);
    let former: Value = serde_yaml::from_str(&former_file("10.112.0.10")).unwrap();
    assert_eq!(pool_file(&s, 0), former);
    assert_eq!(pool_file(&s, 1), former);
    let base: Value = serde_yaml::from_str(&kubelet_config(&v)).unwrap();
    assert_eq!(base, former, "kubelet_config is the base");
    // An empty settings object is no settings.
    let empty = shoot(Some(json!({})), Some(json!({})), None);
    assert_eq!(pool_file(&empty, 0), former);
    assert_eq!(pool_file(&empty, 1), former);
}

#[test]
fn a_shoot_setting_reaches_every_pool_without_its_own() {
    let s = shoot(Some(json!({"maxPods": 50, "registryPullQPS": 3})), None, None);
    for i in 0..2 {
        let file = pool_file(&s, i);
        assert_eq!(file["maxPods"], json!(50), "pool {i}");
        assert_eq!(file["registryPullQPS"], json!(3), "pool {i}");
    }
}

#[test]
fn a_pool_setting_replaces_the_shoot_settings_for_that_pool_only() {
    let s = shoot(
        Some(json!({"maxPods": 50, "registryPullQPS": 3})),
        Some(json!({"maxPods": 30, "serializeImagePulls": true})),
        None,
    );
    let a = pool_file(&s, 0);
    assert_eq!(a["maxPods"], json!(30), "the pool's value wins");
    assert_eq!(a["serializeImagePulls"], json!(true));
    assert!(
        a.get("registryPullQPS").is_none(),
        "Gardener's semantics: a pool's kubelet settings replace the shoot's as a whole: {a}"
    );
    let b = pool_file(&s, 1);
    assert_eq!(b["maxPods"], json!(50), "the other pool keeps the shoot's");
    assert_eq!(b["registryPullQPS"], json!(3));
    assert_eq!(b["serializeImagePulls"], json!(false), "base");
}

#[test]
fn what_a_setting_leaves_unset_keeps_the_base() {
    let s = shoot(Some(json!({"maxPods": 50, "evictionHard": {"memoryAvailable": "300Mi"}})), None, None);
    let file = pool_file(&s, 0);
    let former: Value = serde_yaml::from_str(&former_file("10.112.0.10")).unwrap();
    for key in [
        "authentication",
        "authorization",
        "rotateCertificates",
        "cgroupDriver",
        "failSwapOn",
        "readOnlyPort",
        "clusterDomain",
        "clusterDNS",
        "imageGCHighThresholdPercent",
        "imageGCLowThresholdPercent",
        "serializeImagePulls",
    ] {
        assert_eq!(file[key], former[key], "{key}");
    }
    assert_eq!(
        file["evictionHard"],
        json!({"memory.available": "300Mi", "nodefs.available": "1%", "nodefs.inodesFree": "1%", "imagefs.available": "1%"}),
        "merged per signal"
    );
    let keys: Vec<&String> = file.as_object().unwrap().keys().collect();
    assert_eq!(keys.len(), former.as_object().unwrap().len(), "nothing else is added: {keys:?}");
}

/// Every field of the API's `KubeletConfig`, each with a value of its own.
fn every_field() -> Value {
    json!({
        "featureGates": {"RotateKubeletServerCertificate": true, "CPUManager": false},
        "cpuCFSQuota": false,
        "cpuManagerPolicy": "none",
        "evictionHard": {"memoryAvailable": "201Mi", "imageFSAvailable": "11%", "imageFSInodesFree": "12%", "nodeFSAvailable": "13%", "nodeFSInodesFree": "14%"},
        "evictionSoft": {"memoryAvailable": "401Mi", "imageFSAvailable": "21%", "imageFSInodesFree": "22%", "nodeFSAvailable": "23%", "nodeFSInodesFree": "24%"},
        "evictionSoftGracePeriod": {"memoryAvailable": "1m1s", "imageFSAvailable": "1m2s", "imageFSInodesFree": "1m3s", "nodeFSAvailable": "1m4s", "nodeFSInodesFree": "1m5s"},
        "evictionMinimumReclaim": {"memoryAvailable": "1Mi", "imageFSAvailable": "2Mi", "imageFSInodesFree": "3k", "nodeFSAvailable": "4Mi", "nodeFSInodesFree": "5k"},
        "evictionMaxPodGracePeriod": 33,
        "evictionPressureTransitionPeriod": "4m30s",
        "maxPods": 64,
        "podPidsLimit": 1024,
        "failSwapOn": true,
        "kubeReserved": {"cpu": "81m", "memory": "1Gi", "ephemeralStorage": "2Gi", "pid": "20k"},
        "systemReserved": {"cpu": "1", "memory": "512Mi", "ephemeralStorage": "3Gi", "pid": "10k"},
        "imageGCHighThresholdPercent": 90,
        "imageGCLowThresholdPercent": 70,
        "imageMinimumGCAge": "3m",
        "imageMaximumGCAge": "72h",
        "serializeImagePulls": true,
        "maxParallelImagePulls": 1,
        "registryPullQPS": 7,
        "registryBurst": 14,
        "seccompDefault": true,
        "containerLogMaxSize": "50Mi",
        "containerLogMaxFiles": 4,
        "protectKernelDefaults": false,
        "streamingConnectionIdleTimeout": "30m",
        "memorySwap": {"swapBehavior": "LimitedSwap"},
    })
}

#[test]
fn every_mapped_field_appears_under_its_kubelet_configuration_name() {
    let s = shoot(Some(every_field()), None, None);
    let file = pool_file(&s, 0);
    let signals = |m: &str, ia: &str, ii: &str, na: &str, ni: &str| json!({"memory.available": m, "imagefs.available": ia, "imagefs.inodesFree": ii, "nodefs.available": na, "nodefs.inodesFree": ni});
    let want = [
        ("featureGates", json!({"RotateKubeletServerCertificate": true, "CPUManager": false})),
        ("cpuCFSQuota", json!(false)),
        ("cpuManagerPolicy", json!("none")),
        ("evictionHard", signals("201Mi", "11%", "12%", "13%", "14%")),
        ("evictionSoft", signals("401Mi", "21%", "22%", "23%", "24%")),
        ("evictionSoftGracePeriod", signals("1m1s", "1m2s", "1m3s", "1m4s", "1m5s")),
        ("evictionMinimumReclaim", signals("1Mi", "2Mi", "3k", "4Mi", "5k")),
        ("evictionMaxPodGracePeriod", json!(33)),
        ("evictionPressureTransitionPeriod", json!("4m30s")),
        ("maxPods", json!(64)),
        ("podPidsLimit", json!(1024)),
        ("failSwapOn", json!(true)),
        ("kubeReserved", json!({"cpu": "81m", "memory": "1Gi", "ephemeral-storage": "2Gi", "pid": "20k"})),
        ("systemReserved", json!({"cpu": "1", "memory": "512Mi", "ephemeral-storage": "3Gi", "pid": "10k"})),
        ("imageGCHighThresholdPercent", json!(90)),
        ("imageGCLowThresholdPercent", json!(70)),
        ("imageMinimumGCAge", json!("3m")),
        ("imageMaximumGCAge", json!("72h")),
        ("serializeImagePulls", json!(true)),
        ("maxParallelImagePulls", json!(1)),
        ("registryPullQPS", json!(7)),
        ("registryBurst", json!(14)),
        ("seccompDefault", json!(true)),
        ("containerLogMaxSize", json!("50Mi")),
        ("containerLogMaxFiles", json!(4)),
        ("protectKernelDefaults", json!(false)),
        ("streamingConnectionIdleTimeout", json!("30m")),
        ("memorySwap", json!({"swapBehavior": "LimitedSwap"})),
    ];
    for (key, value) in &want {
        assert_eq!(file.get(*key), Some(value), "{key} in {file:#}");
    }
    // Every name above is a field of the API (an unknown one would land in `unmodeled`), and
    // every field of the API is set above: the pattern names them all, so a new field fails to
    // compile here until it is mapped (or refused, as imagePullProgressDeadline: dockershim only).
    let api: KubeletConfig = serde_json::from_value(every_field()).unwrap();
    assert!(api.unmodeled.is_empty(), "every name above is a field of the API: {:?}", api.unmodeled);
    let KubeletConfig {
        feature_gates: _,
        cpu_cfs_quota: Some(_),
        cpu_manager_policy: Some(_),
        eviction_hard: Some(_),
        eviction_max_pod_grace_period: Some(_),
        eviction_minimum_reclaim: Some(_),
        eviction_pressure_transition_period: Some(_),
        eviction_soft: Some(_),
        eviction_soft_grace_period: Some(_),
        max_pods: Some(_),
        pod_pids_limit: Some(_),
        image_pull_progress_deadline: None,
        fail_swap_on: Some(_),
        kube_reserved: Some(_),
        system_reserved: Some(_),
        image_gc_high_threshold_percent: Some(_),
        image_gc_low_threshold_percent: Some(_),
        serialize_image_pulls: Some(_),
        registry_pull_qps: Some(_),
        registry_burst: Some(_),
        seccomp_default: Some(_),
        container_log_max_size: Some(_),
        container_log_max_files: Some(_),
        protect_kernel_defaults: Some(_),
        streaming_connection_idle_timeout: Some(_),
        memory_swap: Some(_),
        max_parallel_image_pulls: Some(_),
        image_minimum_gc_age: Some(_),
        image_maximum_gc_age: Some(_),
        unmodeled: _,
    } = api
    else {
        panic!("a field of the API is not set above");
    };
    assert_eq!(want.len(), every_field().as_object().unwrap().len(), "one expectation per field set");
    // The quantity "1" stays a string: the kubelet's reserved maps hold strings.
    assert!(pool_config(&values(&s), &s, &s.spec.provider.workers[0]).contains("cpu: '1'"));
}

#[test]
fn the_image_gc_thresholds_are_one_setting() {
    let high_only = shoot(Some(json!({"imageGCHighThresholdPercent": 90})), None, None);
    let file = pool_file(&high_only, 0);
    assert_eq!(file["imageGCHighThresholdPercent"], json!(90));
    assert!(
        file.get("imageGCLowThresholdPercent").is_none(),
        "the kubelet's default (80) applies, not the base's 99, which is not below 90: {file}"
    );
    let low_only = shoot(Some(json!({"imageGCLowThresholdPercent": 40})), None, None);
    let file = pool_file(&low_only, 0);
    assert_eq!(file["imageGCLowThresholdPercent"], json!(40));
    assert!(file.get("imageGCHighThresholdPercent").is_none(), "the kubelet's default (85): {file}");
}

#[test]
fn a_soft_threshold_without_a_grace_period_gets_gardeners_default() {
    let s = shoot(
        Some(
            json!({"evictionSoft": {"memoryAvailable": "300Mi", "nodeFSAvailable": "10%"}, "evictionSoftGracePeriod": {"nodeFSAvailable": "2m"}}),
        ),
        None,
        None,
    );
    let file = pool_file(&s, 0);
    assert_eq!(file["evictionSoft"], json!({"memory.available": "300Mi", "nodefs.available": "10%"}));
    assert_eq!(
        file["evictionSoftGracePeriod"],
        json!({"memory.available": DEFAULT_SOFT_GRACE_PERIOD, "nodefs.available": "2m"}),
        "the kubelet refuses to start with a soft threshold that has no grace period"
    );
}

#[test]
fn feature_gates_and_reserved_resources_merge_by_name() {
    let s = shoot(Some(json!({"featureGates": {"A": true}, "kubeReserved": {"memory": "1Gi"}})), None, None);
    let file = pool_file(&s, 0);
    assert_eq!(file["featureGates"], json!({"A": true}));
    assert_eq!(file["kubeReserved"], json!({"memory": "1Gi"}), "only what is set");
    assert!(file.get("systemReserved").is_none());
}

fn oscs(s: &Shoot) -> Vec<OperatingSystemConfig> {
    operating_system_configs(&values(s), s, "token: x", "CA", "KCA", None)
}

fn kubelet_file(osc: &OperatingSystemConfig) -> Value {
    let file = osc.spec.files.iter().find(|f| f.path == KUBELET_CONFIG_PATH).unwrap();
    serde_yaml::from_str(&file.content.inline.as_ref().unwrap().data).unwrap()
}

#[test]
fn each_pool_operating_system_config_carries_its_own_kubelet_configuration() {
    let s = shoot(Some(json!({"maxPods": 50})), Some(json!({"maxPods": 30})), None);
    let o = oscs(&s);
    assert_eq!(o.len(), 2);
    assert_eq!(kubelet_file(&o[0])["maxPods"], json!(30));
    assert_eq!(kubelet_file(&o[1])["maxPods"], json!(50));
    assert_ne!(o[0].spec, o[1].spec, "the pools' configurations differ");
    assert!(o.iter().all(|osc| osc.spec.files.iter().any(|f| f.path == BOOTSTRAP_KUBECONFIG_PATH)));
}

#[test]
fn a_changed_kubelet_setting_replaces_the_pools_machines_and_only_its_own() {
    let key = |s: &Shoot| -> Vec<String> {
        oscs(s).iter().zip(["a", "b"]).map(|(osc, pool)| node_agent_secret_name(pool, osc)).collect()
    };
    let before = key(&shoot(None, None, None));
    let same = key(&shoot(None, None, None));
    assert_eq!(before, same, "rendering is deterministic");
    let pool_a = key(&shoot(None, Some(json!({"registryBurst": 20})), None));
    assert_ne!(pool_a[0], before[0], "pool a's key changes: its machines are replaced");
    assert_eq!(pool_a[1], before[1], "pool b is untouched");
    let shoot_level = key(&shoot(Some(json!({"registryBurst": 20})), None, None));
    assert!(shoot_level.iter().zip(&before).all(|(a, b)| a != b), "a shoot setting changes every pool");
    assert_eq!(shoot_level[0], pool_a[0], "the same settings give the same key, wherever they are set");
}
