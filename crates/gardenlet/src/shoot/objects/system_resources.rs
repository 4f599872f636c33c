//! Objects gardenlet applies to the shoot's own API, as kubeadm does after `init`: the
//! bootstrap token Secret, the RBAC that lets bootstrapping kubelets post CSRs and have node
//! client CSRs auto-approved (and renewals by nodes), and `cluster-info` in `kube-public`,
//! readable anonymously; and the system components the nodes run (kube-proxy,
//! [`crate::components::kube_proxy`], unless the shoot turns it off, and cluster DNS,
//! [`crate::components::cluster_dns`]). Builders are pure; [`apply`] writes them and deletes
//! kube-proxy's objects from a shoot that turned it off ([`delete_kube_proxy`]).

use crate::components::{cluster_dns, konnectivity, kube_proxy};
use crate::shoot::operation::apply::disruption_budgets;
use k8s_openapi::ByteString;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use std::collections::BTreeMap;

const FIELD_MANAGER: &str = "gardenlet";

fn meta(name: &str, namespace: Option<&str>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_string()),
        namespace: namespace.map(str::to_string),
        labels: Some(BTreeMap::from([("gardener.cloud/role".to_string(), "system-component".to_string())])),
        ..Default::default()
    }
}

fn group(name: &str) -> Subject {
    Subject {
        api_group: Some("rbac.authorization.k8s.io".into()),
        kind: "Group".into(),
        name: name.into(),
        namespace: None,
    }
}

fn cluster_role_binding(name: &str, role: &str, subject: Subject) -> ClusterRoleBinding {
    ClusterRoleBinding {
        metadata: meta(name, None),
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "ClusterRole".into(),
            name: role.into(),
        },
        subjects: Some(vec![subject]),
    }
}

/// The three bindings of kubeadm's TLS-bootstrap phase.
pub fn bootstrap_rbac() -> Vec<ClusterRoleBinding> {
    vec![
        cluster_role_binding("kubeadm:kubelet-bootstrap", "system:node-bootstrapper", group("system:bootstrappers")),
        cluster_role_binding(
            "kubeadm:node-autoapprove-bootstrap",
            "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
            group("system:bootstrappers"),
        ),
        cluster_role_binding(
            "kubeadm:node-autoapprove-certificate-rotation",
            "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
            group("system:nodes"),
        ),
    ]
}

/// `kube-public/cluster-info` with the kubeconfig (server + CA, no credentials), and the Role
/// and RoleBinding that let `system:anonymous` read exactly that ConfigMap.
pub fn cluster_info(kubeconfig: &str) -> (ConfigMap, Role, RoleBinding) {
    let cm = ConfigMap {
        metadata: meta("cluster-info", Some("kube-public")),
        data: Some(BTreeMap::from([("kubeconfig".to_string(), kubeconfig.to_string())])),
        ..Default::default()
    };
    let role = Role {
        metadata: meta("kubeadm:bootstrap-signer-clusterinfo", Some("kube-public")),
        rules: Some(vec![PolicyRule {
            api_groups: Some(vec![String::new()]),
            resources: Some(vec!["configmaps".into()]),
            resource_names: Some(vec!["cluster-info".into()]),
            verbs: vec!["get".into()],
            ..Default::default()
        }]),
    };
    let binding = RoleBinding {
        metadata: meta("kubeadm:bootstrap-signer-clusterinfo", Some("kube-public")),
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "Role".into(),
            name: "kubeadm:bootstrap-signer-clusterinfo".into(),
        },
        subjects: Some(vec![Subject {
            api_group: Some("rbac.authorization.k8s.io".into()),
            kind: "User".into(),
            name: "system:anonymous".into(),
            namespace: None,
        }]),
    };
    (cm, role, binding)
}

/// The bootstrap-token Secret in `kube-system`.
pub fn bootstrap_token_secret(secret: &pki::Secret) -> Secret {
    Secret {
        metadata: meta(&secret.name, Some("kube-system")),
        type_: Some(secret.type_.clone()),
        data: Some(secret.data.iter().map(|(k, v)| (k.clone(), ByteString(v.as_bytes().to_vec()))).collect()),
        ..Default::default()
    }
}

/// Applies every object to the shoot.
pub async fn apply(
    shoot: &kube::Client,
    token: &pki::Secret,
    cluster_info_kubeconfig: &str,
    components: &Components,
) -> Result<(), kube::Error> {
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let secret = bootstrap_token_secret(token);
    Api::<Secret>::namespaced(shoot.clone(), "kube-system").patch(&token.name, &params, &Patch::Apply(&secret)).await?;
    let bindings: Api<ClusterRoleBinding> = Api::all(shoot.clone());
    for b in bootstrap_rbac() {
        let name = b.metadata.name.clone().unwrap_or_default();
        bindings.patch(&name, &params, &Patch::Apply(&b)).await?;
    }
    let (cm, role, binding) = cluster_info(cluster_info_kubeconfig);
    Api::<ConfigMap>::namespaced(shoot.clone(), "kube-public")
        .patch("cluster-info", &params, &Patch::Apply(&cm))
        .await?;
    Api::<Role>::namespaced(shoot.clone(), "kube-public")
        .patch("kubeadm:bootstrap-signer-clusterinfo", &params, &Patch::Apply(&role))
        .await?;
    Api::<RoleBinding>::namespaced(shoot.clone(), "kube-public")
        .patch("kubeadm:bootstrap-signer-clusterinfo", &params, &Patch::Apply(&binding))
        .await?;
    match &components.kube_proxy {
        Some(values) => apply_kube_proxy(shoot, &params, values).await?,
        None => delete_kube_proxy(shoot).await?,
    }
    apply_cluster_dns(shoot, &params, &components.cluster_dns).await?;
    if let Some(values) = &components.konnectivity {
        apply_konnectivity_agent(shoot, &params, values).await?;
    }
    Ok(())
}

/// The system components' settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Components {
    /// kube-proxy's values; `None` when the shoot turns it off (`spec.kubernetes.kubeProxy.enabled:
    /// false`): its objects are deleted.
    pub kube_proxy: Option<kube_proxy::Values>,
    pub cluster_dns: cluster_dns::Values,
    /// The tunnel's agents; `None` for a shoot without the tunnel.
    pub konnectivity: Option<konnectivity::AgentValues>,
}

/// Deletes kube-proxy's objects (the DaemonSet first, its pods go with it; the ConfigMap, the
/// ClusterRoleBinding and the ServiceAccount) from the shoot; objects already gone are fine.
pub async fn delete_kube_proxy(shoot: &kube::Client) -> Result<(), kube::Error> {
    let (ns, name) = (kube_proxy::NAMESPACE, kube_proxy::NAME);
    let params = DeleteParams::background();
    gone(Api::<DaemonSet>::namespaced(shoot.clone(), ns).delete(name, &params).await)?;
    gone(Api::<ConfigMap>::namespaced(shoot.clone(), ns).delete(name, &params).await)?;
    gone(Api::<ClusterRoleBinding>::all(shoot.clone()).delete(kube_proxy::CLUSTER_ROLE_BINDING, &params).await)?;
    gone(Api::<ServiceAccount>::namespaced(shoot.clone(), ns).delete(name, &params).await)
}

/// A deletion's result, with "not found" as success.
fn gone<T>(result: Result<T, kube::Error>) -> Result<(), kube::Error> {
    match result {
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        other => other.map(|_| ()),
    }
}

async fn apply_cluster_dns(
    shoot: &kube::Client,
    params: &PatchParams,
    values: &cluster_dns::Values,
) -> Result<(), kube::Error> {
    let ns = cluster_dns::NAMESPACE;
    let name = cluster_dns::NAME;
    let serde = kube::Error::SerdeError;
    Api::<ServiceAccount>::namespaced(shoot.clone(), ns)
        .patch(name, params, &Patch::Apply(&cluster_dns::service_account().map_err(serde)?))
        .await?;
    let role = cluster_dns::cluster_role().map_err(serde)?;
    Api::<ClusterRole>::all(shoot.clone()).patch(&role.name_any(), params, &Patch::Apply(&role)).await?;
    let binding = cluster_dns::cluster_role_binding().map_err(serde)?;
    Api::<ClusterRoleBinding>::all(shoot.clone()).patch(&binding.name_any(), params, &Patch::Apply(&binding)).await?;
    Api::<ConfigMap>::namespaced(shoot.clone(), ns)
        .patch(name, params, &Patch::Apply(&cluster_dns::config_map(values).map_err(serde)?))
        .await?;
    Api::<Service>::namespaced(shoot.clone(), ns)
        .patch(cluster_dns::SERVICE, params, &Patch::Apply(&cluster_dns::service(values).map_err(serde)?))
        .await?;
    Api::<Deployment>::namespaced(shoot.clone(), ns)
        .patch(name, params, &Patch::Apply(&cluster_dns::deployment(values).map_err(serde)?))
        .await?;
    disruption_budgets(shoot, ns).patch(name, params, &Patch::Apply(&cluster_dns::disruption_budget())).await?;
    Ok(())
}

fn typed<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> Result<T, kube::Error> {
    serde_json::from_value(value).map_err(kube::Error::SerdeError)
}

async fn apply_konnectivity_agent(
    shoot: &kube::Client,
    params: &PatchParams,
    values: &konnectivity::AgentValues,
) -> Result<(), kube::Error> {
    let (ns, name) = (konnectivity::NAMESPACE, konnectivity::AGENT);
    let account: ServiceAccount = typed(konnectivity::agent_service_account())?;
    Api::<ServiceAccount>::namespaced(shoot.clone(), ns).patch(name, params, &Patch::Apply(&account)).await?;
    let role: ClusterRole = typed(konnectivity::agent_cluster_role())?;
    Api::<ClusterRole>::all(shoot.clone()).patch(&role.name_any(), params, &Patch::Apply(&role)).await?;
    let binding: ClusterRoleBinding = typed(konnectivity::agent_cluster_role_binding())?;
    Api::<ClusterRoleBinding>::all(shoot.clone()).patch(&binding.name_any(), params, &Patch::Apply(&binding)).await?;
    let secret: Secret = typed(konnectivity::agent_secret(values))?;
    Api::<Secret>::namespaced(shoot.clone(), ns).patch(name, params, &Patch::Apply(&secret)).await?;
    let deployment: Deployment = typed(konnectivity::agent_deployment(values))?;
    Api::<Deployment>::namespaced(shoot.clone(), ns).patch(name, params, &Patch::Apply(&deployment)).await?;
    disruption_budgets(shoot, ns).patch(name, params, &Patch::Apply(&konnectivity::agent_disruption_budget())).await?;
    Ok(())
}

async fn apply_kube_proxy(
    shoot: &kube::Client,
    params: &PatchParams,
    values: &kube_proxy::Values,
) -> Result<(), kube::Error> {
    let ns = kube_proxy::NAMESPACE;
    let name = kube_proxy::NAME;
    Api::<ServiceAccount>::namespaced(shoot.clone(), ns)
        .patch(name, params, &Patch::Apply(&kube_proxy::service_account()))
        .await?;
    let binding = kube_proxy::cluster_role_binding().map_err(kube::Error::SerdeError)?;
    Api::<ClusterRoleBinding>::all(shoot.clone()).patch(&binding.name_any(), params, &Patch::Apply(&binding)).await?;
    Api::<ConfigMap>::namespaced(shoot.clone(), ns)
        .patch(name, params, &Patch::Apply(&kube_proxy::config_map(values)))
        .await?;
    let ds = kube_proxy::daemon_set(values).map_err(kube::Error::SerdeError)?;
    Api::<DaemonSet>::namespaced(shoot.clone(), ns).patch(name, params, &Patch::Apply(&ds)).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rbac_matches_kubeadm() {
        let b = bootstrap_rbac();
        let pairs: Vec<(String, String)> =
            b.iter().map(|b| (b.role_ref.name.clone(), b.subjects.as_ref().unwrap()[0].name.clone())).collect();
        assert_eq!(
            pairs,
            [
                ("system:node-bootstrapper".to_string(), "system:bootstrappers".to_string()),
                (
                    "system:certificates.k8s.io:certificatesigningrequests:nodeclient".into(),
                    "system:bootstrappers".into()
                ),
                ("system:certificates.k8s.io:certificatesigningrequests:selfnodeclient".into(), "system:nodes".into()),
            ]
        );
    }

    #[test]
    fn cluster_info_is_readable_by_anonymous_only_by_name() {
        let (cm, role, binding) = cluster_info("apiVersion: v1\n");
        assert_eq!(cm.metadata.namespace.as_deref(), Some("kube-public"));
        let rule = &role.rules.unwrap()[0];
        assert_eq!(rule.resource_names.as_ref().unwrap(), &["cluster-info"]);
        assert_eq!(rule.verbs, ["get"]);
        assert_eq!(binding.subjects.unwrap()[0].name, "system:anonymous");
    }
}
