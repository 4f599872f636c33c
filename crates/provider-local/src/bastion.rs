//! Bastion: a Pod running sshd and a Service in front of it, in the shoot's namespace of the
//! seed. The bastion's user data (which installs the user's SSH key) is mounted from a Secret
//! and run before sshd starts; a NetworkPolicy admits SSH only from the `spec.ingress` ranges.
//! `status.ingress` comes from the Service: its load-balancer ingress for type LoadBalancer
//! (waiting until one is assigned), else its cluster IP. Everything is owned by the Bastion and
//! labelled with the shoot's technical ID, and removed on delete.

use crate::common::{apply_params, delete_if_exists, describe, shoot_labels, technical_id};
use crate::error::Error;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use extension_sdk::api::extensions::Bastion;
use extension_sdk::k8s_openapi::ByteString;
use extension_sdk::k8s_openapi::api::core::v1::{
    Container, ContainerPort, LoadBalancerIngress, Pod, PodSpec, Secret, SecretVolumeSource, Service, ServicePort,
    ServiceSpec, Volume, VolumeMount,
};
use extension_sdk::k8s_openapi::api::networking::v1::{
    NetworkPolicy, NetworkPolicyIngressRule, NetworkPolicyPeer, NetworkPolicyPort, NetworkPolicySpec,
};
use extension_sdk::k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use extension_sdk::k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use extension_sdk::kube::api::{ObjectMeta, Patch};
use extension_sdk::kube::{Api, Client, Resource, ResourceExt};
use extension_sdk::{Actuator, ActuatorError, ClusterContext, Outcome};
use std::collections::BTreeMap;
use std::time::Duration;

const COMPONENT: &str = "bastion";
/// Label selecting a bastion's Pod.
pub const LABEL_BASTION: &str = "bastion.provider-local.gardener.cloud/name";
/// Default image of bastion Pods: any image with `sh` and `sshd`.
pub const DEFAULT_IMAGE: &str = "lscr.io/linuxserver/openssh-server:latest";

/// Settings of the Bastion actuator.
#[derive(Clone, Debug)]
pub struct BastionConfig {
    pub image: String,
    /// `ClusterIP` (default; the kind and local setups have no load balancers) or `LoadBalancer`.
    pub service_type: String,
}

impl Default for BastionConfig {
    fn default() -> Self {
        Self { image: DEFAULT_IMAGE.into(), service_type: "ClusterIP".into() }
    }
}

/// The name of every object of a bastion.
pub fn object_name(bastion: &Bastion) -> String {
    format!("bastion-{}", bastion.name_any())
}

/// The objects of a bastion: user-data Secret, Pod, Service and NetworkPolicy.
pub fn objects(bastion: &Bastion, config: &BastionConfig) -> Result<(Secret, Pod, Service, NetworkPolicy), Error> {
    let object = describe(bastion);
    let id = technical_id(bastion)?;
    let name = object_name(bastion);
    let mut labels = shoot_labels(&id, COMPONENT);
    labels.insert(LABEL_BASTION.into(), bastion.name_any());
    let select = BTreeMap::from([(LABEL_BASTION.to_string(), bastion.name_any())]);
    let meta = ObjectMeta {
        name: Some(name.clone()),
        labels: Some(labels),
        owner_references: bastion.controller_owner_ref(&()).map(|r| vec![r]),
        ..Default::default()
    };
    let user_data = STANDARD
        .decode(bastion.spec.user_data.trim())
        .map_err(|e| Error::config(&object, "spec.userData", format!("not base64: {e}")))?;
    let secret = Secret {
        metadata: meta.clone(),
        data: Some(BTreeMap::from([("userData".to_string(), ByteString(user_data))])),
        type_: Some("Opaque".into()),
        ..Default::default()
    };
    let pod = Pod {
        metadata: meta.clone(),
        spec: Some(PodSpec {
            automount_service_account_token: Some(false),
            containers: vec![Container {
                name: "sshd".into(),
                image: Some(config.image.clone()),
                command: Some(vec![
                    "/bin/sh".into(),
                    "-c".into(),
                    "sh /etc/bastion/userData && exec /usr/sbin/sshd -D -e".into(),
                ]),
                ports: Some(vec![ContainerPort {
                    name: Some("ssh".into()),
                    container_port: 22,
                    protocol: Some("TCP".into()),
                    ..Default::default()
                }]),
                volume_mounts: Some(vec![VolumeMount {
                    name: "user-data".into(),
                    mount_path: "/etc/bastion".into(),
                    read_only: Some(true),
                    ..Default::default()
                }]),
                ..Default::default()
            }],
            volumes: Some(vec![Volume {
                name: "user-data".into(),
                secret: Some(SecretVolumeSource { secret_name: Some(name.clone()), ..Default::default() }),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        status: None,
    };
    let service = Service {
        metadata: meta.clone(),
        spec: Some(ServiceSpec {
            type_: Some(config.service_type.clone()),
            selector: Some(select.clone()),
            ports: Some(vec![ServicePort {
                name: Some("ssh".into()),
                port: 22,
                // Server-side apply keys the list by port and protocol; both must be set.
                protocol: Some("TCP".into()),
                target_port: Some(IntOrString::Int(22)),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        status: None,
    };
    let from = bastion
        .spec
        .ingress
        .iter()
        .map(|i| NetworkPolicyPeer { ip_block: Some(i.ip_block.clone()), ..Default::default() })
        .collect();
    let policy = NetworkPolicy {
        metadata: meta,
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(LabelSelector { match_labels: Some(select), ..Default::default() }),
            policy_types: Some(vec!["Ingress".into()]),
            ingress: Some(vec![NetworkPolicyIngressRule {
                from: Some(from),
                ports: Some(vec![NetworkPolicyPort {
                    port: Some(IntOrString::Int(22)),
                    protocol: Some("TCP".into()),
                    ..Default::default()
                }]),
            }]),
            egress: None,
        }),
    };
    Ok((secret, pod, service, policy))
}

/// The address of a bastion's Service, once it has one.
pub fn ingress_of(service: &Service) -> Option<LoadBalancerIngress> {
    let lb = service.status.as_ref().and_then(|s| s.load_balancer.as_ref()).and_then(|l| l.ingress.as_ref());
    if let Some(first) = lb.and_then(|i| i.first()) {
        return Some(first.clone());
    }
    let spec = service.spec.as_ref()?;
    if spec.type_.as_deref() == Some("LoadBalancer") {
        return None;
    }
    let ip = spec.cluster_ip.clone().filter(|ip| !ip.is_empty() && ip != "None")?;
    Some(LoadBalancerIngress { ip: Some(ip), ..Default::default() })
}

/// The Bastion actuator.
#[derive(Clone)]
pub struct LocalBastion {
    client: Client,
    config: BastionConfig,
}

crate::debug_without_client!(LocalBastion);

impl LocalBastion {
    pub fn new(client: Client, config: BastionConfig) -> Self {
        Self { client, config }
    }
}

impl Actuator<Bastion> for LocalBastion {
    #[tracing::instrument(skip_all, fields(bastion = %describe(bastion)))]
    async fn reconcile(&self, bastion: &Bastion, _: &ClusterContext) -> Result<Outcome<Bastion>, ActuatorError> {
        let ns = bastion.namespace().unwrap_or_default();
        let name = object_name(bastion);
        let (secret, pod, service, policy) = objects(bastion, &self.config)?;
        let params = apply_params(COMPONENT);
        let what = |kind: &str| format!("applying {kind} {ns}/{name}");
        Api::<Secret>::namespaced(self.client.clone(), &ns)
            .patch(&name, &params, &Patch::Apply(&secret))
            .await
            .map_err(Error::kube(what("Secret")))?;
        Api::<NetworkPolicy>::namespaced(self.client.clone(), &ns)
            .patch(&name, &params, &Patch::Apply(&policy))
            .await
            .map_err(Error::kube(what("NetworkPolicy")))?;
        Api::<Pod>::namespaced(self.client.clone(), &ns)
            .patch(&name, &params, &Patch::Apply(&pod))
            .await
            .map_err(Error::kube(what("Pod")))?;
        let service = Api::<Service>::namespaced(self.client.clone(), &ns)
            .patch(&name, &params, &Patch::Apply(&service))
            .await
            .map_err(Error::kube(what("Service")))?;
        let Some(ingress) = ingress_of(&service) else {
            tracing::info!("waiting for the bastion Service to get an address");
            return Err(ActuatorError::requeue_after(Duration::from_secs(5)));
        };
        Ok(Outcome::done()
            .with_provider_status(serde_json::json!({"service": format!("{ns}/{name}"), "pod": format!("{ns}/{name}")}))
            .with_status(move |s: &mut extension_sdk::api::extensions::BastionStatus| s.ingress = Some(ingress)))
    }

    #[tracing::instrument(skip_all, fields(bastion = %describe(bastion)))]
    async fn delete(&self, bastion: &Bastion, _: &ClusterContext) -> Result<(), ActuatorError> {
        let ns = bastion.namespace().unwrap_or_default();
        let name = object_name(bastion);
        let c = &self.client;
        delete_if_exists(&Api::<Service>::namespaced(c.clone(), &ns), &name, "Service").await?;
        delete_if_exists(&Api::<Pod>::namespaced(c.clone(), &ns), &name, "Pod").await?;
        delete_if_exists(&Api::<NetworkPolicy>::namespaced(c.clone(), &ns), &name, "NetworkPolicy").await?;
        delete_if_exists(&Api::<Secret>::namespaced(c.clone(), &ns), &name, "Secret").await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use extension_sdk::api::extensions::BastionSpec;
    use extension_sdk::api::extensions::bastion::BastionIngressPolicy;
    use extension_sdk::k8s_openapi::api::core::v1::{LoadBalancerStatus, ServiceStatus};
    use extension_sdk::k8s_openapi::api::networking::v1::IPBlock;

    fn bastion() -> Bastion {
        let mut b = Bastion::new(
            "b1",
            BastionSpec {
                user_data: STANDARD.encode("echo key >> ~/.ssh/authorized_keys"),
                ingress: vec![BastionIngressPolicy { ip_block: IPBlock { cidr: "10.0.0.0/8".into(), except: None } }],
                ..Default::default()
            },
        );
        b.metadata.namespace = Some("shoot--dev--a".into());
        b
    }

    #[test]
    fn objects_select_the_pod_and_admit_only_the_ingress_ranges() {
        let (secret, pod, service, policy) =
            objects(&bastion(), &BastionConfig::default()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(secret.data.unwrap_or_default()["userData"].0, b"echo key >> ~/.ssh/authorized_keys");
        let pod_labels = pod.metadata.labels.unwrap_or_default();
        for (k, v) in service.spec.and_then(|s| s.selector).unwrap_or_default() {
            assert_eq!(pod_labels.get(&k), Some(&v));
        }
        assert_eq!(pod_labels["shoot.gardener.cloud/technical-id"], "shoot--dev--a");
        let v = serde_json::to_value(&policy).unwrap_or_default();
        assert_eq!(v["spec"]["ingress"][0]["from"][0]["ipBlock"]["cidr"], "10.0.0.0/8");
        let mut bad = bastion();
        bad.spec.user_data = "%%".into();
        assert!(objects(&bad, &BastionConfig::default()).is_err());
    }

    #[test]
    fn ingress_from_load_balancer_or_cluster_ip() {
        let svc = |type_: &str, ip: Option<&str>, lb: Option<&str>| Service {
            spec: Some(ServiceSpec { type_: Some(type_.into()), cluster_ip: ip.map(Into::into), ..Default::default() }),
            status: Some(ServiceStatus {
                load_balancer: Some(LoadBalancerStatus {
                    ingress: lb.map(|h| vec![LoadBalancerIngress { hostname: Some(h.into()), ..Default::default() }]),
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(
            ingress_of(&svc("ClusterIP", Some("10.0.0.5"), None)).and_then(|i| i.ip).as_deref(),
            Some("10.0.0.5")
        );
        assert_eq!(ingress_of(&svc("LoadBalancer", Some("10.0.0.5"), None)), None);
        assert_eq!(
            ingress_of(&svc("LoadBalancer", Some("10.0.0.5"), Some("lb.local"))).and_then(|i| i.hostname).as_deref(),
            Some("lb.local")
        );
    }
}
