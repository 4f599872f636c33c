//! What gardenlet renders for kube-scheduler and kube-controller-manager, given to the real
//! binaries of the test assets (1.20). kube-scheduler's `--write-config-to` writes the
//! configuration it would run with and exits, so the test sees the score plugins each profile ends
//! up with, and that the file, the feature gates flag and the API version are accepted.
//! kube-controller-manager parses and validates its flags before it reads its kubeconfig: failing
//! on a missing kubeconfig means every flag was accepted.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use gardenlet::components::common::secrets;
use gardenlet::components::{ControlPlaneValues, Images, kube_controller_manager, kube_scheduler};
use std::collections::BTreeMap;

fn values(bin_packing: bool) -> ControlPlaneValues {
    ControlPlaneValues {
        namespace: "shoot--dev--demo".into(),
        kubernetes_version: "1.20.2".into(),
        replicas: 1,
        etcd_replicas: 1,
        failure_tolerance: None,
        service_cidr: "10.112.0.0/13".into(),
        pod_cidr: Some("10.96.0.0/11".into()),
        tunnel: false,
        cluster_domain: "cluster.local".into(),
        advertised_host: "api.demo.dev.example.com".into(),
        images: Images::default(),
        owner: None,
        apiserver: Default::default(),
        controller_manager: Default::default(),
        scheduler: gardenlet::components::common::SchedulerSettings {
            bin_packing,
            kube_max_pd_vols: None,
            feature_gates: BTreeMap::from([("DefaultPodTopologySpread".to_string(), false)]),
        },
        secret_checksums: BTreeMap::new(),
        etcd_backup: None,
        etcd_defragmentation_schedule: "0 0 */3 * *".to_string(),
        requests_percent: 100,
    }
}

/// The configuration kube-scheduler runs with, for the rendered file and flags (the kubeconfig
/// path pointed at a file that exists: kube-scheduler reads it while loading).
fn effective(values: &ControlPlaneValues) -> serde_yaml::Value {
    let assets = testenv::Assets::from_env().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(&kubeconfig, "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\ncurrent-context: c\nusers:\n- name: u\n  user: {token: x}\n").unwrap();
    let rendered = kube_scheduler::configuration_text(values).unwrap();
    let mounted = format!("/srv/kubernetes/{}/{}", secrets::KUBECONFIG_KUBE_SCHEDULER, secrets::KUBECONFIG);
    assert!(rendered.contains(&mounted), "{rendered}");
    let config = dir.path().join("config.yaml");
    // With --config, kube-scheduler 1.20 ignores --port and serves its insecure health port
    // 10251 unless the file says otherwise, and tests running side by side collided on it.
    // (Port 0 is refused; a free loopback port each.)
    let port = testenv::free_port("127.0.0.1".parse().unwrap()).unwrap();
    let quiet = format!("healthzBindAddress: 127.0.0.1:{port}\nmetricsBindAddress: 127.0.0.1:{port}\n");
    std::fs::write(&config, format!("{quiet}{}", rendered.replace(&mounted, kubeconfig.to_str().unwrap()))).unwrap();
    let out = dir.path().join("out.yaml");
    let gates: Vec<String> =
        kube_scheduler::args(values).into_iter().filter(|a| a.starts_with("--feature-gates=")).collect();
    assert_eq!(gates.len(), 1);
    let status = std::process::Command::new(&assets.kube_scheduler)
        .arg(format!("--config={}", config.display()))
        .arg(format!("--write-config-to={}", out.display()))
        .args(&gates)
        // No listeners: tests and other schedulers on this host hold the default ports.
        .args(["--port=0", "--secure-port=0"])
        .output()
        .unwrap();
    assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));
    serde_yaml::from_str(&std::fs::read_to_string(out).unwrap()).unwrap()
}

/// Each profile's scheduler name and enabled score plugins.
fn score_plugins(config: &serde_yaml::Value) -> Vec<(String, Vec<String>)> {
    config["profiles"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|p| {
            let names = p["plugins"]["score"]["enabled"]
                .as_sequence()
                .unwrap()
                .iter()
                .map(|e| e["name"].as_str().unwrap().to_string())
                .collect();
            (p["schedulerName"].as_str().unwrap().to_string(), names)
        })
        .collect()
}

#[test]
fn kube_scheduler_1_20_runs_bin_packing_with_most_allocated_scoring_in_both_profiles() {
    let config = effective(&values(true));
    assert_eq!(config["leaderElection"]["leaderElect"], serde_yaml::Value::Bool(true));
    let profiles = score_plugins(&config);
    let names: Vec<&str> = profiles.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["default-scheduler", "bin-packing-scheduler"]);
    for (name, plugins) in &profiles {
        assert!(plugins.contains(&"NodeResourcesMostAllocated".to_string()), "{name}: {plugins:?}");
        for gone in ["NodeResourcesLeastAllocated", "NodeResourcesBalancedAllocation"] {
            assert!(!plugins.contains(&gone.to_string()), "{name} still scores with {gone}: {plugins:?}");
        }
    }
}

#[test]
fn kube_scheduler_1_20_runs_balanced_with_its_default_scoring() {
    let profiles = score_plugins(&effective(&values(false)));
    assert_eq!(profiles.len(), 1);
    let (name, plugins) = &profiles[0];
    assert_eq!(name, "default-scheduler");
    assert!(plugins.contains(&"NodeResourcesLeastAllocated".to_string()), "{plugins:?}");
    assert!(!plugins.contains(&"NodeResourcesMostAllocated".to_string()), "{plugins:?}");
}

/// kube-controller-manager's error output for `args` (with a kubeconfig that does not exist, so
/// it stops right after validating its flags, and no listeners).
fn controller_manager_stderr(args: &[String]) -> String {
    let assets = testenv::Assets::from_env().unwrap();
    let output = std::process::Command::new(&assets.kube_controller_manager)
        .args(args.iter().filter(|a| !a.starts_with("--kubeconfig=") && !a.starts_with("--secure-port=")))
        .args(["--kubeconfig=/nonexistent/kubeconfig", "--port=0", "--secure-port=0"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn kube_controller_manager_1_20_accepts_every_settings_flag() {
    let mut v = values(false);
    v.controller_manager = gardenlet::components::common::ControllerManagerSettings {
        node_cidr_mask_size: Some(26),
        horizontal_pod_autoscaler: api::core::shoot::kubernetes::HorizontalPodAutoscalerConfig {
            sync_period: Some("30s".into()),
            tolerance: Some(0.2),
            downscale_stabilization: Some("10m".into()),
            initial_readiness_delay: Some("45s".into()),
            cpu_initialization_period: Some("2m0s".into()),
            ..Default::default()
        },
        node_monitor_grace_period: Some("55s".into()),
        feature_gates: BTreeMap::from([("HPAScaleToZero".to_string(), true)]),
    };
    let args = kube_controller_manager::args(&v);
    assert!(args.iter().any(|a| a == "--horizontal-pod-autoscaler-tolerance=0.2"), "{args:?}");
    let stderr = controller_manager_stderr(&args);
    assert!(stderr.contains("stat /nonexistent/kubeconfig"), "a flag was refused: {stderr}");
    // What admission refuses would stop the component: an unknown gate, a locked one.
    for gate in ["NoSuchGate=true", "StartupProbe=false"] {
        let stderr = controller_manager_stderr(&[format!("--feature-gates={gate}")]);
        assert!(stderr.contains("invalid argument"), "{gate}: {stderr}");
    }
}
