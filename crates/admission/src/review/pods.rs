//! Pods: the Pod Security Standards ([`crate::podsecurity`]) at the level of the pod's
//! namespace, read from the watch-fed cache ([`super::Lookup::namespace`]).
//!
//! The webhook configuration sends Pod CREATE and UPDATE of the `ephemeralcontainers`
//! subresource here (adding an ephemeral container is the one update upstream judges in full),
//! and only for namespaces not labelled `privileged` ([`crate::server::register`]). So an
//! UPDATE arriving here is always the subresource. Its object is the Pod (Kubernetes 1.23+) or,
//! while ephemeral containers were alpha (1.16 to 1.22), an `EphemeralContainers` object with the
//! list alone; then only the ephemeral containers are judged, without the pod's own
//! settings (stricter at `restricted`: a pod-level `runAsNonRoot` is not seen).

use super::decode::decode;
use super::{Admission, Outcome, Request};
use crate::field::{ErrorList, FieldError, Path};
use crate::podsecurity;
use k8s_openapi::api::core::v1::Pod;
use kube::core::admission::Operation;
use serde_json::{Value, json};

pub(super) fn validate(adm: &Admission, req: &Request<'_>) -> Outcome {
    if !matches!(req.operation, Operation::Create | Operation::Update) {
        return Outcome::default();
    }
    let pod = match req.object.as_ref().map(as_pod) {
        Some(Ok(pod)) => pod,
        Some(Err(errors)) => return Outcome { errors, ..Default::default() },
        None => {
            let errors = ErrorList(vec![FieldError::required(Path::new("object"), "the request carries no object")]);
            return Outcome { errors, ..Default::default() };
        }
    };
    let namespace = req.namespace.or(pod.metadata.namespace.as_deref()).unwrap_or_default();
    let cached = adm.lookup().namespace(namespace);
    let labels = cached.as_ref().map(|ns| ns.metadata.labels.clone().unwrap_or_default());
    let enforcement = podsecurity::level_of(labels.as_ref(), adm.config().default_pod_security_level);
    let spec = pod.spec.unwrap_or_default();
    let violations = podsecurity::check(enforcement.level, &spec, &pod.metadata);
    if violations.is_empty() {
        return Outcome::default();
    }
    let name = pod.metadata.name.as_deref().or(pod.metadata.generate_name.as_deref()).unwrap_or_default();
    Outcome {
        errors: podsecurity::to_errors(&violations),
        summary: Some(podsecurity::summary(name, namespace, &enforcement)),
        ..Default::default()
    }
}

/// The pod of a request's object: a Pod, or the `EphemeralContainers` object of Kubernetes
/// 1.16 to 1.22 as a Pod with only those containers.
fn as_pod(object: &Value) -> Result<Pod, ErrorList> {
    if object.get("kind").and_then(Value::as_str) == Some("EphemeralContainers") {
        let shaped = json!({
            "metadata": object.get("metadata").cloned().unwrap_or(Value::Null),
            "spec": {"containers": [], "ephemeralContainers": object.get("ephemeralContainers").cloned().unwrap_or(Value::Null)},
        });
        return decode(&shaped);
    }
    decode(object)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::UserInfo;
    use crate::review::{Endpoint, RulesConfig, StaticLookup};
    use k8s_openapi::api::core::v1::Namespace;
    use std::sync::Arc;

    fn namespace(name: &str, level: Option<&str>) -> Arc<Namespace> {
        let labels = level.map(|l| [(podsecurity::ENFORCE_LABEL.to_string(), l.to_string())].into());
        let metadata = k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some(name.into()),
            labels,
            ..Default::default()
        };
        Arc::new(Namespace { metadata, ..Default::default() })
    }

    fn admission(config: RulesConfig) -> Admission {
        let lookup = StaticLookup {
            namespaces: vec![
                namespace("plain", None),
                namespace("hard", Some("restricted")),
                namespace("open", Some("privileged")),
                namespace("typo", Some("restriced")),
            ],
            ..Default::default()
        };
        Admission::new(Arc::new(lookup), config)
    }

    fn privileged_pod(ns: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "root", "namespace": ns},
               "spec": {"containers": [{"name": "x", "image": "x", "securityContext": {"privileged": true}}]}})
    }

    fn plain_pod(ns: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "web-", "namespace": ns},
               "spec": {"containers": [{"name": "app", "image": "nginx"}]}})
    }

    fn decide(adm: &Admission, operation: Operation, ns: &str, object: Value) -> Outcome {
        let req = Request {
            operation,
            namespace: Some(ns),
            user: UserInfo::new("alice", &["system:authenticated"]),
            object: Some(object),
            old_object: None,
        };
        adm.decide(Endpoint::Validate, "pods", &req)
    }

    /// The refusal as the API server's client sees it (without the webhook's prefix).
    fn refusal(o: &Outcome) -> String {
        format!("{}: {}", o.summary.clone().unwrap_or_default(), o.errors)
    }

    #[test]
    fn the_namespace_label_sets_the_level() {
        let adm = admission(RulesConfig::default());
        let o = decide(&adm, Operation::Create, "plain", privileged_pod("plain"));
        assert_eq!(
            refusal(&o),
            "pod \"root\" in namespace \"plain\" violates PodSecurity \"baseline:latest\" (namespace has no label \
             pod-security.kubernetes.io/enforce: default level baseline): spec.containers[0].securityContext.privileged: \
             Forbidden: privileged (container \"x\" must not set securityContext.privileged=true)"
        );
        assert!(decide(&adm, Operation::Create, "plain", plain_pod("plain")).errors.is_empty());
        assert!(decide(&adm, Operation::Create, "open", privileged_pod("open")).errors.is_empty());
        let o = decide(&adm, Operation::Create, "hard", plain_pod("hard"));
        assert!(
            refusal(&o).starts_with("pod \"web-\" in namespace \"hard\" violates PodSecurity \"restricted:latest\": ["),
            "{}",
            refusal(&o)
        );
        assert!(refusal(&o).contains("spec.containers[0].securityContext.runAsNonRoot: Forbidden"), "{}", refusal(&o));
        let o = decide(&adm, Operation::Create, "typo", plain_pod("typo"));
        assert!(refusal(&o).contains("=\"restriced\" is not a level"), "{}", refusal(&o));
        // A namespace the cache has not seen yet: restricted until it has.
        let o = decide(&adm, Operation::Create, "new", plain_pod("new"));
        assert!(
            refusal(&o).contains("\"restricted:latest\" (namespace not yet in the admission server's cache"),
            "{}",
            refusal(&o)
        );
        // Deletions are never judged.
        assert!(decide(&adm, Operation::Delete, "plain", privileged_pod("plain")).errors.is_empty());
    }

    #[test]
    fn the_default_level_is_configurable() {
        let adm =
            admission(RulesConfig { default_pod_security_level: podsecurity::Level::Restricted, ..Default::default() });
        let o = decide(&adm, Operation::Create, "plain", plain_pod("plain"));
        assert!(refusal(&o).contains("default level restricted"), "{}", refusal(&o));
        let adm =
            admission(RulesConfig { default_pod_security_level: podsecurity::Level::Privileged, ..Default::default() });
        assert!(decide(&adm, Operation::Create, "plain", privileged_pod("plain")).errors.is_empty());
    }

    #[test]
    fn ephemeral_containers_are_judged_in_either_shape() {
        let adm = admission(RulesConfig::default());
        let mut pod = plain_pod("plain");
        pod["spec"]["ephemeralContainers"] =
            json!([{"name": "debug", "image": "busybox", "securityContext": {"privileged": true}}]);
        let o = decide(&adm, Operation::Update, "plain", pod);
        assert!(
            refusal(&o).contains("spec.ephemeralContainers[0].securityContext.privileged: Forbidden"),
            "{}",
            refusal(&o)
        );
        let alpha = json!({"apiVersion": "v1", "kind": "EphemeralContainers", "metadata": {"name": "web", "namespace": "plain"},
                           "ephemeralContainers": [{"name": "debug", "image": "busybox", "securityContext": {"capabilities": {"add": ["SYS_PTRACE"]}}}]});
        let o = decide(&adm, Operation::Update, "plain", alpha);
        assert!(
            refusal(&o).contains("spec.ephemeralContainers[0].securityContext.capabilities.add[0]: Forbidden"),
            "{}",
            refusal(&o)
        );
        let not_a_pod = decide(&adm, Operation::Create, "plain", json!({"spec": {"containers": "x"}}));
        assert!(not_a_pod.errors.to_string().starts_with("spec.containers: Invalid value"), "{}", not_a_pod.errors);
    }
}
