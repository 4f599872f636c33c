//! The permissions the webhook server needs in the garden, as RBAC rules: list and watch the
//! objects its caches hold, and server-side apply its two webhook configurations. The Helm
//! chart's ClusterRole carries exactly these; the integration tests run the server under them.

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
        rule("core.gardener.cloud", &["cloudprofiles", "seeds", "shoots", "projects"], &["list", "watch"]),
        rule(
            "admissionregistration.k8s.io",
            &["mutatingwebhookconfigurations", "validatingwebhookconfigurations"],
            // Server-side apply: `patch`, plus `create` for the first apply (the API server
            // checks both when the object does not exist yet; the integration tests show it).
            &["create", "patch"],
        ),
    ]
}
