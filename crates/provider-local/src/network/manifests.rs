//! What the Network deploys into a shoot, pure: the pod routes agent ([`crate::pod_routes`]) as a
//! DaemonSet in `kube-system` on every node, in the node's network namespace, with its
//! ServiceAccount and least-privilege RBAC (read Nodes, nothing else). A networking extension
//! (Calico, Cilium) deploys its node agent the same way.

use crate::node_agent::{self, Agent, BINARY, core_rule, node_name_env};
use extension_sdk::k8s_openapi::api::core::v1::{
    Capabilities, Container, PodSpec, ResourceRequirements, SecurityContext,
};
use extension_sdk::k8s_openapi::api::rbac::v1::PolicyRule;
use extension_sdk::k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use std::collections::BTreeMap;

/// Name of the ServiceAccount, ClusterRole, ClusterRoleBinding and DaemonSet.
pub const NAME: &str = "provider-local-pod-routes";
/// Where the namespaced objects go.
pub const NAMESPACE: &str = node_agent::NAMESPACE;

/// Everything deployed into a shoot, in the order it is applied.
pub type Objects = Agent;

/// Exactly what the agent calls: it watches Nodes (their pod CIDRs and addresses). No writes.
pub fn rules() -> Vec<PolicyRule> {
    vec![core_rule("nodes", &["get", "list", "watch"])]
}

/// The objects for the agent image `image` (provider-local's own): one agent pod per node
/// ([`node_agent`]; without it the node's pods reach no other node's pods), in the node's
/// network namespace (`hostNetwork`), the node's name from the downward API.
///
/// It runs as root with `NET_ADMIN` only (to change the node's routing table), without
/// privilege escalation and on a read-only root file system.
pub fn objects(image: &str) -> Objects {
    let quantities = |pairs: &[(&str, &str)]| -> BTreeMap<String, Quantity> {
        pairs.iter().map(|(k, v)| (k.to_string(), Quantity(v.to_string()))).collect()
    };
    let container = Container {
        name: "pod-routes".into(),
        image: Some(image.into()),
        image_pull_policy: Some("IfNotPresent".into()),
        command: Some(vec![BINARY.into(), "pod-routes".into(), "--node-name=$(NODE_NAME)".into()]),
        env: Some(vec![node_name_env()]),
        resources: Some(ResourceRequirements {
            requests: Some(quantities(&[("cpu", "5m"), ("memory", "16Mi")])),
            limits: Some(quantities(&[("memory", "96Mi")])),
            ..Default::default()
        }),
        security_context: Some(SecurityContext {
            allow_privilege_escalation: Some(false),
            read_only_root_filesystem: Some(true),
            capabilities: Some(Capabilities { add: Some(vec!["NET_ADMIN".into()]), drop: Some(vec!["ALL".into()]) }),
            ..Default::default()
        }),
        ..Default::default()
    };
    let pod = PodSpec { host_network: Some(true), ..Default::default() };
    Agent::new(NAME, super::COMPONENT, rules(), container, pod)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_agent_runs_on_every_node_in_its_network_with_net_admin_only() {
        let o = objects("reg/provider-local:v1");
        let spec = o.daemon_set.spec.and_then(|s| s.template.spec).expect("a pod spec");
        assert_eq!(spec.host_network, Some(true));
        assert_eq!(spec.service_account_name.as_deref(), Some(NAME));
        let tolerations = spec.tolerations.unwrap_or_default();
        assert_eq!(tolerations.len(), 1);
        assert_eq!(tolerations[0].operator.as_deref(), Some("Exists"));
        assert_eq!(tolerations[0].key, None, "every taint");
        let c = &spec.containers[0];
        assert_eq!(c.image.as_deref(), Some("reg/provider-local:v1"));
        assert_eq!(c.command.clone().unwrap_or_default()[1..], ["pod-routes", "--node-name=$(NODE_NAME)"]);
        let caps = c.security_context.as_ref().and_then(|s| s.capabilities.clone()).expect("capabilities");
        assert_eq!(caps.add, Some(vec!["NET_ADMIN".to_string()]));
        assert_eq!(caps.drop, Some(vec!["ALL".to_string()]));
        assert_eq!(c.security_context.as_ref().and_then(|s| s.privileged), None, "not privileged");
    }

    #[test]
    fn the_agent_may_only_read_nodes() {
        let rules = rules();
        assert_eq!(rules.len(), 1);
        assert_eq!(rules[0].resources, Some(vec!["nodes".to_string()]));
        assert_eq!(rules[0].verbs, ["get", "list", "watch"]);
        let o = objects("i");
        let subjects = o.cluster_role_binding.subjects.clone().unwrap_or_default();
        assert_eq!(subjects[0].name, NAME);
        assert_eq!(o.cluster_role_binding.role_ref.name, NAME);
        assert_eq!(o.references().len(), 4);
    }
}
