//! The shoot's audit policy: `spec.kubernetes.kubeAPIServer.auditConfig.auditPolicy.configMapRef`
//! names a ConfigMap in the shoot's garden namespace whose `policy` key holds an
//! `audit.k8s.io` Policy. gardenlet reads it during the reconcile and copies it next to the
//! API server ([`crate::components::kube_apiserver::config_maps`]). A missing ConfigMap or key
//! fails the reconcile, naming the ConfigMap (Gardener does the same).
//!
//! [`policy_of`] decides; [`read`] only fetches.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, Client};

/// The data key of the policy in the referenced ConfigMap (Gardener's).
pub const POLICY_KEY: &str = "policy";

/// The field that names the ConfigMap, for messages.
const FIELD: &str = "spec.kubernetes.kubeAPIServer.auditConfig.auditPolicy.configMapRef";

/// Why the audit policy cannot be used.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum AuditPolicyError {
    #[error("reading ConfigMap {namespace}/{name} ({FIELD}) from the garden: {message}")]
    Read { namespace: String, name: String, message: String },
    #[error("ConfigMap {namespace}/{name} ({FIELD}) does not exist")]
    NotFound { namespace: String, name: String },
    #[error("ConfigMap {namespace}/{name} ({FIELD}) has no data key {POLICY_KEY:?}")]
    MissingKey { namespace: String, name: String },
    #[error("ConfigMap {namespace}/{name} ({FIELD}): {POLICY_KEY:?} is not an audit.k8s.io Policy: {problem}")]
    NotAPolicy { namespace: String, name: String, problem: String },
}

/// The policy text of the ConfigMap `namespace/name` (`None`: it does not exist): its
/// `policy` key, which must be a YAML (or JSON) object of kind `Policy` of `audit.k8s.io`,
/// so that a bad policy fails the reconcile instead of the API server's start.
pub fn policy_of(config_map: Option<&ConfigMap>, namespace: &str, name: &str) -> Result<String, AuditPolicyError> {
    let (ns, n) = (namespace.to_string(), name.to_string());
    let config_map = config_map.ok_or_else(|| AuditPolicyError::NotFound { namespace: ns.clone(), name: n.clone() })?;
    let policy = config_map
        .data
        .as_ref()
        .and_then(|d| d.get(POLICY_KEY))
        .filter(|p| !p.trim().is_empty())
        .ok_or_else(|| AuditPolicyError::MissingKey { namespace: ns.clone(), name: n.clone() })?;
    let not_a_policy =
        |problem: String| AuditPolicyError::NotAPolicy { namespace: ns.clone(), name: n.clone(), problem };
    let parsed: serde_json::Value = serde_yaml::from_str(policy).map_err(|e| not_a_policy(e.to_string()))?;
    let kind = parsed.get("kind").and_then(|k| k.as_str());
    let api_version = parsed.get("apiVersion").and_then(|k| k.as_str()).unwrap_or_default();
    if kind != Some("Policy") || !api_version.starts_with("audit.k8s.io/") {
        return Err(not_a_policy(format!("kind {kind:?}, apiVersion {api_version:?}")));
    }
    Ok(policy.clone())
}

/// Reads the policy the shoot references from its garden namespace; `Ok(None)` when it
/// references none.
pub async fn read(garden: &Client, namespace: &str, name: Option<&str>) -> Result<Option<String>, AuditPolicyError> {
    let Some(name) = name else {
        return Ok(None);
    };
    let api: Api<ConfigMap> = Api::namespaced(garden.clone(), namespace);
    let config_map = api.get_opt(name).await.map_err(|e| AuditPolicyError::Read {
        namespace: namespace.to_string(),
        name: name.to_string(),
        message: e.to_string(),
    })?;
    policy_of(config_map.as_ref(), namespace, name).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn config_map(data: &[(&str, &str)]) -> ConfigMap {
        ConfigMap {
            data: Some(data.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>()),
            ..Default::default()
        }
    }

    const POLICY: &str = "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n";

    #[test]
    fn the_policy_key_of_an_existing_config_map_is_the_policy() {
        let cm = config_map(&[("policy", POLICY)]);
        assert_eq!(policy_of(Some(&cm), "garden-dev", "audit").unwrap(), POLICY);
    }

    #[test]
    fn a_missing_config_map_key_or_policy_fails_naming_the_config_map() {
        let err = policy_of(None, "garden-dev", "audit").unwrap_err();
        assert_eq!(
            err.to_string(),
            "ConfigMap garden-dev/audit (spec.kubernetes.kubeAPIServer.auditConfig.auditPolicy.configMapRef) does not exist"
        );
        let err = policy_of(Some(&config_map(&[("other", POLICY)])), "garden-dev", "audit").unwrap_err();
        assert_eq!(err, AuditPolicyError::MissingKey { namespace: "garden-dev".into(), name: "audit".into() });
        assert!(err.to_string().contains("has no data key \"policy\""), "{err}");
        let err = policy_of(Some(&config_map(&[("policy", "kind: ConfigMap\n")])), "garden-dev", "audit").unwrap_err();
        assert!(matches!(err, AuditPolicyError::NotAPolicy { .. }), "{err}");
        let err = policy_of(Some(&config_map(&[("policy", ": : [")])), "garden-dev", "audit").unwrap_err();
        assert!(err.to_string().contains("garden-dev/audit"), "{err}");
    }
}
