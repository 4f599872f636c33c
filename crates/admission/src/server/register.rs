//! The MutatingWebhookConfiguration and ValidatingWebhookConfiguration that route requests to
//! this server, with its CA bundle, applied with server-side apply (field manager
//! `gardener-admission`). `failurePolicy: Fail`: when the server is down, nothing it guards is
//! admitted unchecked.
//!
//! Pods (the Pod Security Standards, [`crate::podsecurity`]) are sent only from namespaces not
//! labelled `pod-security.kubernetes.io/enforce: privileged` ([`pod_namespace_selector`]): the
//! namespace this server runs in carries that label, so its own pods can be created while no
//! replica serves (with `failurePolicy: Fail` they could not, and nothing would ever serve again).

use crate::review::kinds::{MUTATED, VALIDATED};
use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhook, MutatingWebhookConfiguration, RuleWithOperations, ServiceReference, ValidatingWebhook,
    ValidatingWebhookConfiguration, WebhookClientConfig,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, LabelSelectorRequirement, ObjectMeta, OwnerReference,
};
use kube::api::{Patch, PatchParams};
use kube::{Api, Client};
use serde::{Deserialize, Serialize};

/// The field manager of the webhook configurations.
pub const FIELD_MANAGER: &str = "gardener-admission";

/// How the API server reaches the webhook server.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ClientTarget {
    /// A base URL such as `https://127.0.0.1:9443` (local runs, tests).
    Url(String),
    /// An in-cluster Service.
    Service { namespace: String, name: String, port: i32 },
}

/// The API group and operations of each resource the server judges.
fn group_of(resource: &str) -> &'static str {
    match resource {
        "bastions" => "operations.gardener.cloud",
        "adminkubeconfigrequests" => "authentication.gardener.cloud",
        "managedseeds" | "managedseedsets" => "seedmanagement.gardener.cloud",
        "credentialsbindings" | "workloadidentities" => "security.gardener.cloud",
        _ => "core.gardener.cloud",
    }
}

fn operations(resource: &str, validating: bool) -> Vec<String> {
    let mut ops = vec!["CREATE".to_string(), "UPDATE".to_string()];
    if validating && resource == "shoots" {
        ops.push("DELETE".into());
    }
    ops
}

fn client_config(target: &ClientTarget, path: &str, ca_bundle: &str) -> WebhookClientConfig {
    let ca = Some(ByteString(ca_bundle.as_bytes().to_vec()));
    match target {
        ClientTarget::Url(base) => WebhookClientConfig {
            url: Some(format!("{}{path}", base.trim_end_matches('/'))),
            ca_bundle: ca,
            service: None,
        },
        ClientTarget::Service { namespace, name, port } => WebhookClientConfig {
            service: Some(ServiceReference {
                namespace: namespace.clone(),
                name: name.clone(),
                path: Some(path.to_string()),
                port: Some(*port),
            }),
            ca_bundle: ca,
            url: None,
        },
    }
}

/// The rules of the pods webhook: creation, and the `ephemeralcontainers` subresource through
/// which containers are added to a running pod (other pod updates cannot change what the
/// checks judge, as upstream PodSecurity admission reasons).
fn pod_rules() -> Vec<RuleWithOperations> {
    let rule = |resource: &str, operation: &str| RuleWithOperations {
        api_groups: Some(vec![String::new()]),
        api_versions: Some(vec!["v1".into()]),
        resources: Some(vec![resource.into()]),
        operations: Some(vec![operation.into()]),
        scope: Some("Namespaced".into()),
    };
    vec![rule("pods", "CREATE"), rule("pods/ephemeralcontainers", "UPDATE")]
}

/// Which namespaces' pods are sent to the webhook: those not labelled `privileged`.
pub fn pod_namespace_selector() -> LabelSelector {
    LabelSelector {
        match_expressions: Some(vec![LabelSelectorRequirement {
            key: crate::podsecurity::ENFORCE_LABEL.into(),
            operator: "NotIn".into(),
            values: Some(vec![crate::podsecurity::Level::Privileged.as_str().into()]),
        }]),
        match_labels: None,
    }
}

fn rule(resource: &str, validating: bool) -> RuleWithOperations {
    RuleWithOperations {
        api_groups: Some(vec![group_of(resource).into()]),
        api_versions: Some(vec!["*".into()]),
        resources: Some(vec![resource.into()]),
        operations: Some(operations(resource, validating)),
        scope: Some("*".into()),
    }
}

/// The mutating configuration `name`, one webhook per mutated resource.
pub fn mutating(name: &str, target: &ClientTarget, ca_bundle: &str) -> MutatingWebhookConfiguration {
    MutatingWebhookConfiguration {
        metadata: ObjectMeta { name: Some(name.into()), ..Default::default() },
        webhooks: Some(
            MUTATED
                .iter()
                .map(|r| MutatingWebhook {
                    name: format!("{r}.mutate.admission.gardener.cloud"),
                    admission_review_versions: vec!["v1".into()],
                    client_config: client_config(target, &format!("/mutate/{r}"), ca_bundle),
                    failure_policy: Some("Fail".into()),
                    side_effects: "None".into(),
                    timeout_seconds: Some(10),
                    match_policy: Some("Equivalent".into()),
                    reinvocation_policy: Some("IfNeeded".into()),
                    rules: Some(vec![rule(r, false)]),
                    ..Default::default()
                })
                .collect(),
        ),
    }
}

/// The webhooks of SeedRestriction for the resources that have no other rules
/// ([`crate::seedrestriction`]): CREATE only, so nothing else pays for a call. Gardener's kinds
/// fail closed. The Kubernetes kinds (Leases, ConfigMaps, Secrets, Namespaces,
/// ServiceAccounts, RBAC, CSRs) are `Ignore`: with `Fail`, the garden's own kube-controller-manager
/// could not create its leader Lease, nor Helm this server's namespace, while no replica serves
/// (at a cold start, before it can). A seed gains nothing from that: its creates are allowed by the
/// seed authorizer of this same server, and while it cannot be called the seed is refused.
fn restriction_webhooks(target: &ClientTarget, ca_bundle: &str) -> impl Iterator<Item = ValidatingWebhook> {
    crate::review::kinds::restricted_only().map(|(group, resource)| ValidatingWebhook {
        name: format!("{resource}.seedrestriction.admission.gardener.cloud"),
        admission_review_versions: vec!["v1".into()],
        client_config: client_config(target, &format!("/validate/{resource}"), ca_bundle),
        failure_policy: Some(if group.ends_with("gardener.cloud") { "Fail" } else { "Ignore" }.into()),
        side_effects: "None".into(),
        timeout_seconds: Some(10),
        match_policy: Some("Equivalent".into()),
        rules: Some(vec![RuleWithOperations {
            api_groups: Some(vec![group.into()]),
            api_versions: Some(vec!["*".into()]),
            resources: Some(vec![resource.into()]),
            operations: Some(vec!["CREATE".into()]),
            scope: Some("*".into()),
        }]),
        ..Default::default()
    })
}

/// The validating configuration `name`, one webhook per validated resource, and SeedRestriction's.
pub fn validating(name: &str, target: &ClientTarget, ca_bundle: &str) -> ValidatingWebhookConfiguration {
    ValidatingWebhookConfiguration {
        metadata: ObjectMeta { name: Some(name.into()), ..Default::default() },
        webhooks: Some(
            VALIDATED
                .iter()
                .map(|r| ValidatingWebhook {
                    name: format!("{r}.validate.admission.gardener.cloud"),
                    admission_review_versions: vec!["v1".into()],
                    client_config: client_config(target, &format!("/validate/{r}"), ca_bundle),
                    failure_policy: Some("Fail".into()),
                    side_effects: "None".into(),
                    timeout_seconds: Some(10),
                    match_policy: Some("Equivalent".into()),
                    rules: Some(if *r == "pods" { pod_rules() } else { vec![rule(r, true)] }),
                    namespace_selector: (*r == "pods").then(pod_namespace_selector),
                    ..Default::default()
                })
                .chain(restriction_webhooks(target, ca_bundle))
                .collect(),
        ),
    }
}

/// Applies both configurations, owned by `owner` when given.
pub async fn register(
    client: &Client,
    name: &str,
    target: &ClientTarget,
    ca_bundle: &str,
    owner: Option<&OwnerReference>,
) -> Result<(), kube::Error> {
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let mut m = mutating(name, target, ca_bundle);
    m.metadata.owner_references = owner.map(|o| vec![o.clone()]);
    let m = serde_json::json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
        "metadata": m.metadata, "webhooks": m.webhooks,
    });
    Api::<MutatingWebhookConfiguration>::all(client.clone()).patch(name, &params, &Patch::Apply(&m)).await?;
    let mut v = validating(name, target, ca_bundle);
    v.metadata.owner_references = owner.map(|o| vec![o.clone()]);
    let v = serde_json::json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": v.metadata, "webhooks": v.webhooks,
    });
    Api::<ValidatingWebhookConfiguration>::all(client.clone()).patch(name, &params, &Patch::Apply(&v)).await?;
    register_conversion(client, target, ca_bundle).await
}

/// The merge patch that points the conversion of the ControllerDeployment CRD at this server.
/// `service` and `url` exclude each other, so the one not used is cleared explicitly.
pub fn conversion_patch(target: &ClientTarget, ca_bundle: &str) -> serde_json::Value {
    let config = client_config(target, api::core::v1::CONVERSION_PATH, ca_bundle);
    let service = config
        .service
        .map(|s| serde_json::json!({"namespace": s.namespace, "name": s.name, "path": s.path, "port": s.port}));
    serde_json::json!({"spec": {"conversion": {
        "strategy": "Webhook",
        "webhook": {
            "conversionReviewVersions": ["v1"],
            "clientConfig": {"url": config.url, "service": service, "caBundle": config.ca_bundle},
        },
    }}})
}

/// Points the ControllerDeployment CRD's conversion webhook at this server with `ca_bundle`.
/// A garden without that CRD has nothing to convert.
async fn register_conversion(client: &Client, target: &ClientTarget, ca_bundle: &str) -> Result<(), kube::Error> {
    let crds = Api::<CustomResourceDefinition>::all(client.clone());
    let patch = Patch::Merge(conversion_patch(target, ca_bundle));
    match crds.patch(crate::server::rbac::CONVERTED_CRD, &PatchParams::default(), &patch).await {
        Err(kube::Error::Api(status)) if status.code == 404 => {
            tracing::warn!(
                crd = crate::server::rbac::CONVERTED_CRD,
                "CRD not installed; no conversion webhook registered"
            );
            Ok(())
        }
        other => other.map(|_| ()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configurations_point_at_the_server_and_fail_closed() {
        let v = validating("gardener-admission", &ClientTarget::Url("https://127.0.0.1:9443/".into()), "CA");
        let hooks = v.webhooks.unwrap();
        let shoots = hooks.iter().find(|h| h.name == "shoots.validate.admission.gardener.cloud").unwrap();
        assert_eq!(shoots.client_config.url.as_deref(), Some("https://127.0.0.1:9443/validate/shoots"));
        assert_eq!(shoots.client_config.ca_bundle, Some(ByteString(b"CA".to_vec())));
        assert_eq!(shoots.failure_policy.as_deref(), Some("Fail"));
        let ops = shoots.rules.as_ref().unwrap()[0].operations.clone().unwrap();
        assert_eq!(ops, ["CREATE", "UPDATE", "DELETE"]);
        let target = ClientTarget::Service { namespace: "garden".into(), name: "gardener-admission".into(), port: 443 };
        let m = mutating("gardener-admission", &target, "CA");
        let hook = &m.webhooks.unwrap()[0];
        let svc = hook.client_config.service.as_ref().unwrap();
        assert_eq!((svc.path.as_deref(), svc.port), (Some("/mutate/shoots"), Some(443)));
        assert_eq!(hook.failure_policy.as_deref(), Some("Fail"));
    }

    #[test]
    fn pods_are_sent_on_create_and_ephemeral_containers_unless_the_namespace_is_privileged() {
        let v = validating("gardener-admission", &ClientTarget::Url("https://127.0.0.1:9443".into()), "CA");
        let hooks = v.webhooks.unwrap();
        let pods = hooks.iter().find(|h| h.name == "pods.validate.admission.gardener.cloud").unwrap();
        assert_eq!(pods.client_config.url.as_deref(), Some("https://127.0.0.1:9443/validate/pods"));
        assert_eq!(pods.failure_policy.as_deref(), Some("Fail"));
        let rules: Vec<_> = pods
            .rules
            .iter()
            .flatten()
            .map(|r| (r.api_groups.clone().unwrap(), r.resources.clone().unwrap(), r.operations.clone().unwrap()))
            .collect();
        assert_eq!(
            rules,
            [
                (vec![String::new()], vec!["pods".to_string()], vec!["CREATE".to_string()]),
                (vec![String::new()], vec!["pods/ephemeralcontainers".to_string()], vec!["UPDATE".to_string()]),
            ]
        );
        let selector = serde_json::to_value(pods.namespace_selector.as_ref().unwrap()).unwrap();
        assert_eq!(
            selector,
            serde_json::json!({"matchExpressions": [
                {"key": "pod-security.kubernetes.io/enforce", "operator": "NotIn", "values": ["privileged"]}
            ]})
        );
        // The other webhooks see every namespace.
        assert!(hooks.iter().filter(|h| h.name != pods.name).all(|h| h.namespace_selector.is_none()));
    }

    #[test]
    fn seed_restriction_is_asked_on_create_only_and_fails_closed_for_gardener_kinds() {
        let v = validating("gardener-admission", &ClientTarget::Url("https://127.0.0.1:9443".into()), "CA");
        let hooks = v.webhooks.unwrap();
        let hook = |name: &str| hooks.iter().find(|h| h.name == name).unwrap_or_else(|| panic!("no webhook {name}"));
        let states = hook("shootstates.seedrestriction.admission.gardener.cloud");
        assert_eq!(states.client_config.url.as_deref(), Some("https://127.0.0.1:9443/validate/shootstates"));
        assert_eq!(states.failure_policy.as_deref(), Some("Fail"));
        let leases = hook("leases.seedrestriction.admission.gardener.cloud");
        assert_eq!(leases.failure_policy.as_deref(), Some("Ignore"));
        let rule = &leases.rules.as_ref().unwrap()[0];
        assert_eq!(rule.api_groups.as_deref(), Some(&["coordination.k8s.io".to_string()][..]));
        for h in hooks.iter().filter(|h| h.name.contains(".seedrestriction.")) {
            assert_eq!(
                h.rules.as_ref().unwrap()[0].operations.as_deref(),
                Some(&["CREATE".to_string()][..]),
                "{}",
                h.name
            );
        }
        // Seeds, InternalSecrets and Bastions already have a validating webhook on CREATE.
        assert!(hooks.iter().all(|h| h.name != "seeds.seedrestriction.admission.gardener.cloud"));
    }

    #[test]
    fn conversion_patch_sets_one_kind_of_address_and_clears_the_other() {
        let url = conversion_patch(&ClientTarget::Url("https://127.0.0.1:9443".into()), "CA");
        let config = &url["spec"]["conversion"]["webhook"]["clientConfig"];
        assert_eq!(config["url"], "https://127.0.0.1:9443/convert");
        assert!(config["service"].is_null());
        assert_eq!(config["caBundle"], "Q0E=");
        assert_eq!(url["spec"]["conversion"]["strategy"], "Webhook");
        let target = ClientTarget::Service { namespace: "garden".into(), name: "gardener-admission".into(), port: 443 };
        let svc = conversion_patch(&target, "CA");
        let config = &svc["spec"]["conversion"]["webhook"]["clientConfig"];
        assert!(config["url"].is_null());
        assert_eq!(config["service"]["path"], "/convert");
        assert_eq!(config["service"]["port"], 443);
    }
}
