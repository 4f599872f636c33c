//! kube-controller-manager: cluster signing with the shoot's client CA (kubelet client
//! certificates must be trusted by the API server's `--client-ca-file`), bootstrap signer and
//! token cleaner for TLS bootstrapping, the service-account key, and the root CA for pods.

use super::common::{self, ControlPlaneValues, Images, file, secrets};
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
        args.push("--node-cidr-mask-size=24".to_string());
    }
    args
}

pub fn deployment(values: &ControlPlaneValues) -> Deployment {
    let container = Container {
        name: NAME.to_string(),
        image: Some(Images::resolve(&values.images.kube_controller_manager, &values.kubernetes_version)),
        command: Some(vec!["kube-controller-manager".to_string()]),
        args: Some(args(values)),
        liveness_probe: Some(common::https_probe("/healthz", PORT, 15, 10)),
        resources: Some(common::requests(values.requests_percent, 100, 128)),
        ..Default::default()
    };
    common::deployment(values, NAME, (APP, ROLE), MOUNTED_SECRETS, container, None)
}
