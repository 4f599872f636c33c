//! kube-scheduler: no special flags beyond its kubeconfig (as kubeadm does).

use super::common::{self, ControlPlaneValues, Images, file, secrets};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Container;

pub const NAME: &str = "kube-scheduler";
pub const PORT: i32 = 10259;
const APP: &str = "kubernetes";
const ROLE: &str = "scheduler";

pub const MOUNTED_SECRETS: &[&str] = &[secrets::KUBECONFIG_KUBE_SCHEDULER];

pub fn args() -> Vec<String> {
    let kubeconfig = file(secrets::KUBECONFIG_KUBE_SCHEDULER, secrets::KUBECONFIG);
    vec![
        format!("--kubeconfig={kubeconfig}"),
        format!("--authentication-kubeconfig={kubeconfig}"),
        format!("--authorization-kubeconfig={kubeconfig}"),
        "--leader-elect=true".to_string(),
        format!("--secure-port={PORT}"),
    ]
}

pub fn deployment(values: &ControlPlaneValues) -> Deployment {
    let container = Container {
        name: NAME.to_string(),
        image: Some(Images::resolve(&values.images.kube_scheduler, &values.kubernetes_version)),
        command: Some(vec!["kube-scheduler".to_string()]),
        args: Some(args()),
        liveness_probe: Some(common::https_probe("/healthz", PORT, 15, 10)),
        resources: Some(common::requests(values.requests_percent, 50, 64)),
        ..Default::default()
    };
    common::deployment(values, NAME, (APP, ROLE), MOUNTED_SECRETS, container, None)
}
