//! kube-controller-manager: cluster signing with the shoot's client CA (kubelet client
//! certificates must be trusted by the API server's `--client-ca-file`), bootstrap signer and
//! token cleaner for TLS bootstrapping, the service-account key, and the root CA for pods; and
//! the shoot's own settings ([`super::common::ControllerManagerSettings`]): the node CIDR mask
//! size, the horizontal pod autoscaler's timings, the node lifecycle's grace periods and the
//! feature gates.

use super::common::{self, ControlPlaneValues, ControllerManagerSettings, Images, file, secrets};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Container;

pub const NAME: &str = "kube-controller-manager";
pub const PORT: i32 = 10257;
const APP: &str = "kubernetes";
const ROLE: &str = "controller-manager";

pub const MOUNTED_SECRETS: &[&str] = &[
    secrets::CA_BUNDLE,
    secrets::CA_CLIENT,
    secrets::SERVICE_ACCOUNT_KEY,
    secrets::KUBECONFIG_KUBE_CONTROLLER_MANAGER,
];

pub fn args(values: &ControlPlaneValues) -> Vec<String> {
    let kubeconfig = file(secrets::KUBECONFIG_KUBE_CONTROLLER_MANAGER, secrets::KUBECONFIG);
    let mut args = vec![
        format!("--kubeconfig={kubeconfig}"),
        format!("--authentication-kubeconfig={kubeconfig}"),
        format!("--authorization-kubeconfig={kubeconfig}"),
        "--controllers=*,bootstrapsigner,tokencleaner".to_string(),
        format!("--cluster-name={}", values.namespace),
        format!("--cluster-signing-cert-file={}", file(secrets::CA_CLIENT, secrets::CA_CERT)),
        format!("--cluster-signing-key-file={}", file(secrets::CA_CLIENT, secrets::CA_KEY)),
        "--leader-elect=true".to_string(),
        format!("--root-ca-file={}", file(secrets::CA_BUNDLE, secrets::BUNDLE)),
        format!("--secure-port={PORT}"),
        format!("--service-account-private-key-file={}", file(secrets::SERVICE_ACCOUNT_KEY, secrets::SA_KEY)),
        format!("--service-cluster-ip-range={}", values.service_cidr),
        "--use-service-account-credentials=true".to_string(),
    ];
    if let Some(pods) = &values.pod_cidr {
        args.push("--allocate-node-cidrs=true".to_string());
        args.push(format!("--cluster-cidr={pods}"));
        let mask = values.controller_manager.node_cidr_mask_size.unwrap_or(DEFAULT_NODE_CIDR_MASK_SIZE);
        args.push(format!("--node-cidr-mask-size={mask}"));
    }
    args.extend(settings_args(&values.controller_manager));
    args
}

/// `--node-cidr-mask-size` when the shoot sets none (kube-controller-manager's own IPv4 default).
pub const DEFAULT_NODE_CIDR_MASK_SIZE: i32 = 24;

/// The flags of the shoot's settings other than the node CIDR mask size, each only when set.
pub fn settings_args(s: &ControllerManagerSettings) -> Vec<String> {
    let hpa = &s.horizontal_pod_autoscaler;
    let durations = [
        ("horizontal-pod-autoscaler-sync-period", &hpa.sync_period),
        ("horizontal-pod-autoscaler-downscale-stabilization", &hpa.downscale_stabilization),
        ("horizontal-pod-autoscaler-initial-readiness-delay", &hpa.initial_readiness_delay),
        ("horizontal-pod-autoscaler-cpu-initialization-period", &hpa.cpu_initialization_period),
        ("node-monitor-grace-period", &s.node_monitor_grace_period),
    ];
    let mut args: Vec<String> =
        durations.into_iter().filter_map(|(flag, v)| v.as_ref().map(|v| format!("--{flag}={v}"))).collect();
    if let Some(t) = hpa.tolerance {
        args.push(format!("--horizontal-pod-autoscaler-tolerance={t}"));
    }
    args.extend(common::feature_gates_flag(&s.feature_gates));
    args
}

pub fn deployment(values: &ControlPlaneValues) -> Deployment {
    let container = Container {
        name: NAME.to_string(),
        image: Some(Images::resolve(&values.images.kube_controller_manager, &values.kubernetes_version)),
        command: Some(vec!["kube-controller-manager".to_string()]),
        args: Some(args(values)),
        liveness_probe: Some(common::https_probe("/healthz", PORT, 15, 10)),
        resources: Some(common::resources(
            values.requests_percent,
            100,
            128,
            super::security::limits::KUBE_CONTROLLER_MANAGER_MIB,
        )),
        ..Default::default()
    };
    common::deployment(values, NAME, (APP, ROLE), MOUNTED_SECRETS, container, None)
}
