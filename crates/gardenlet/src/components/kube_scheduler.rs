//! kube-scheduler: configured by a `KubeSchedulerConfiguration` file (its kubeconfig, leader
//! election and, for `profile: bin-packing`, the scoring) in the ConfigMap
//! [`CONFIG_MAP`], mounted at [`CONFIG_DIR`]; the shoot's feature gates as a flag and
//! `kubeMaxPDVols` as the `KUBE_MAX_PD_VOLS` environment variable
//! ([`super::common::SchedulerSettings`]).
//!
//! Bin-packing is Gardener's profile for Kubernetes 1.20 (`kubescheduler.config.k8s.io/v1beta1`):
//! `NodeResourcesMostAllocated` scores instead of `NodeResourcesLeastAllocated` and
//! `NodeResourcesBalancedAllocation`. Gardener runs it as the profile `bin-packing-scheduler`
//! and has a webhook point every pod at it; there is no such webhook here, so the
//! `default-scheduler` profile scores the same way (every pod is bin-packed, as in Gardener), and
//! `bin-packing-scheduler` exists too for pods that name it.

use super::common::{self, ControlPlaneValues, Images, file, secrets};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, ConfigMapVolumeSource, Container, EnvVar, Volume, VolumeMount};
use serde_json::json;
use std::collections::BTreeMap;

pub const NAME: &str = "kube-scheduler";
pub const PORT: i32 = 10259;
const APP: &str = "kubernetes";
const ROLE: &str = "scheduler";
/// The ConfigMap in the seed namespace holding the configuration file.
pub const CONFIG_MAP: &str = "kube-scheduler-config";
/// Where the ConfigMap is mounted.
pub const CONFIG_DIR: &str = "/var/lib/kube-scheduler-config";
/// The configuration file's key in the ConfigMap.
pub const CONFIG_KEY: &str = "config.yaml";
/// The configuration API of kube-scheduler 1.20.
pub const CONFIG_API_VERSION: &str = "kubescheduler.config.k8s.io/v1beta1";
/// The profile name Gardener gives the bin-packing scheduler.
pub const BIN_PACKING_SCHEDULER: &str = "bin-packing-scheduler";
/// The environment variable kube-scheduler's volume limits read (`kubeMaxPDVols`).
pub const KUBE_MAX_PD_VOLS: &str = "KUBE_MAX_PD_VOLS";

pub const MOUNTED_SECRETS: &[&str] = &[secrets::KUBECONFIG_KUBE_SCHEDULER];

/// The `KubeSchedulerConfiguration`: the kubeconfig and leader election always (with a
/// configuration file kube-scheduler ignores the equivalent flags), the bin-packing profiles
/// when asked for.
pub fn configuration(values: &ControlPlaneValues) -> serde_json::Value {
    let mut config = json!({
        "apiVersion": CONFIG_API_VERSION,
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": { "kubeconfig": file(secrets::KUBECONFIG_KUBE_SCHEDULER, secrets::KUBECONFIG) },
        "leaderElection": { "leaderElect": true },
    });
    if values.scheduler.bin_packing {
        let plugins = json!({ "score": {
            "disabled": [{ "name": "NodeResourcesLeastAllocated" }, { "name": "NodeResourcesBalancedAllocation" }],
            "enabled": [{ "name": "NodeResourcesMostAllocated" }],
        } });
        config["profiles"] = json!([
            { "schedulerName": "default-scheduler", "plugins": plugins },
            { "schedulerName": BIN_PACKING_SCHEDULER, "plugins": plugins },
        ]);
    }
    config
}

/// The configuration as the file's text (YAML).
pub fn configuration_text(values: &ControlPlaneValues) -> Result<String, serde_yaml::Error> {
    serde_yaml::to_string(&configuration(values))
}

/// The ConfigMap with the configuration file, owned like the Deployment.
pub fn config_map(values: &ControlPlaneValues) -> Result<ConfigMap, serde_yaml::Error> {
    Ok(ConfigMap {
        metadata: common::metadata(CONFIG_MAP, values, common::component_labels(APP, ROLE)),
        data: Some(BTreeMap::from([(CONFIG_KEY.to_string(), configuration_text(values)?)])),
        ..Default::default()
    })
}

/// The command line: the configuration file, the delegated authentication and authorization,
/// the secure port and the shoot's feature gates.
pub fn args(values: &ControlPlaneValues) -> Vec<String> {
    let kubeconfig = file(secrets::KUBECONFIG_KUBE_SCHEDULER, secrets::KUBECONFIG);
    let mut args = vec![
        format!("--config={CONFIG_DIR}/{CONFIG_KEY}"),
        format!("--authentication-kubeconfig={kubeconfig}"),
        format!("--authorization-kubeconfig={kubeconfig}"),
        format!("--secure-port={PORT}"),
    ];
    args.extend(common::feature_gates_flag(&values.scheduler.feature_gates));
    args
}

/// The environment: `KUBE_MAX_PD_VOLS` when the shoot sets `kubeMaxPDVols`.
pub fn env(values: &ControlPlaneValues) -> Vec<EnvVar> {
    values
        .scheduler
        .kube_max_pd_vols
        .iter()
        .map(|v| EnvVar { name: KUBE_MAX_PD_VOLS.to_string(), value: Some(v.clone()), ..Default::default() })
        .collect()
}

pub fn deployment(values: &ControlPlaneValues) -> Deployment {
    let env = env(values);
    let container = Container {
        name: NAME.to_string(),
        image: Some(Images::resolve(&values.images.kube_scheduler, &values.kubernetes_version)),
        command: Some(vec!["kube-scheduler".to_string()]),
        args: Some(args(values)),
        env: (!env.is_empty()).then_some(env),
        liveness_probe: Some(common::https_probe("/healthz", PORT, 15, 10)),
        resources: Some(common::resources(
            values.requests_percent,
            50,
            64,
            super::security::limits::KUBE_SCHEDULER_MIB,
        )),
        volume_mounts: Some(vec![VolumeMount {
            name: CONFIG_MAP.to_string(),
            mount_path: CONFIG_DIR.to_string(),
            read_only: Some(true),
            ..Default::default()
        }]),
        ..Default::default()
    };
    let mut deployment = common::deployment(values, NAME, (APP, ROLE), MOUNTED_SECRETS, container, None);
    if let Some(template) = deployment.spec.as_mut().map(|s| &mut s.template) {
        // A changed configuration rolls the pods (the file alone would change under them
        // unread: kube-scheduler reads it once).
        let text = configuration_text(values).unwrap_or_default();
        let meta = template.metadata.get_or_insert_with(Default::default);
        meta.annotations.get_or_insert_with(BTreeMap::new).insert("checksum/config".into(), common::checksum(&text));
        if let Some(pod) = template.spec.as_mut() {
            pod.volumes.get_or_insert_with(Vec::new).push(Volume {
                name: CONFIG_MAP.to_string(),
                config_map: Some(ConfigMapVolumeSource { name: CONFIG_MAP.to_string(), ..Default::default() }),
                ..Default::default()
            });
        }
    }
    deployment
}
