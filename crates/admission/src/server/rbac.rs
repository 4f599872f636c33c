//! The permissions the webhook server needs in the garden, as RBAC rules: list and watch the
//! objects its caches hold (Namespaces too: their pod security label), and server-side apply its two webhook configurations; in its own
//! namespace, read and write the Secret its replicas share the certificates through. The Helm
//! chart's ClusterRole and Role carry exactly these; the integration tests run the server under
//! them.

use k8s_openapi::api::rbac::v1::PolicyRule;

fn rule(group: &str, resources: &[&str], verbs: &[&str]) -> PolicyRule {
    PolicyRule {
        api_groups: Some(vec![group.into()]),
        resources: Some(resources.iter().map(|r| (*r).to_string()).collect()),
        verbs: verbs.iter().map(|v| (*v).to_string()).collect(),
        ..Default::default()
    }
}

/// The ClusterRole rules of the webhook server.
pub fn rules() -> Vec<PolicyRule> {
    vec![
        rule(
            "core.gardener.cloud",
            &[
                "cloudprofiles",
                "namespacedcloudprofiles",
                "seeds",
                "shoots",
                "projects",
                "secretbindings",
                "quotas",
                "exposureclasses",
                // The extension types a Shoot or Seed may name (crate::extensions).
                "controllerregistrations",
                // The seed authorizer: which seed each installation, bucket and entry is for
                // (crate::seedauth).
                "controllerinstallations",
                "backupbuckets",
                "backupentries",
            ],
            &["list", "watch"],
        ),
        rule("security.gardener.cloud", &["credentialsbindings"], &["list", "watch"]),
        // The seed authorizer: the shoot of each Bastion (crate::seedauth).
        rule("operations.gardener.cloud", &["bastions"], &["list", "watch"]),
        // The pod security level of a namespace is its label (crate::podsecurity).
        rule("", &["namespaces"], &["list", "watch"]),
        // A shoot registered as a seed by a ManagedSeed is not deleted under it.
        rule("seedmanagement.gardener.cloud", &["managedseeds"], &["list", "watch"]),
        rule(
            "admissionregistration.k8s.io",
            &["mutatingwebhookconfigurations", "validatingwebhookconfigurations"],
            // Server-side apply: `patch`, plus `create` for the first apply (the API server
            // checks both when the object does not exist yet; the integration tests show it).
            &["create", "patch"],
        ),
        // Points the ControllerDeployment CRD's conversion webhook at this server (its CA
        // bundle), and nothing else of any CRD.
        PolicyRule {
            resource_names: Some(vec![CONVERTED_CRD.into()]),
            ..rule("apiextensions.k8s.io", &["customresourcedefinitions"], &["patch"])
        },
    ]
}

/// The CRD whose versions this server converts.
pub const CONVERTED_CRD: &str = "controllerdeployments.core.gardener.cloud";

/// The Role rules in the namespace of the certificate Secret `secret`: read and replace it by
/// name; `create` cannot be limited to a name (the name is not known to the authorizer before
/// the object exists).
pub fn secret_rules(secret: &str) -> Vec<PolicyRule> {
    vec![
        PolicyRule { resource_names: Some(vec![secret.into()]), ..rule("", &["secrets"], &["get", "update"]) },
        rule("", &["secrets"], &["create"]),
    ]
}

/// The rule to read the owner of the webhook configurations, ClusterRole `owner`
/// (see `ServerConfig::owner`).
pub fn owner_rule(owner: &str) -> PolicyRule {
    PolicyRule {
        resource_names: Some(vec![owner.into()]),
        ..rule("rbac.authorization.k8s.io", &["clusterroles"], &["get"])
    }
}
