//! Each refusal of `spec.kubernetes.kubeAPIServer` names its field, and what this system
//! honours passes.

use super::*;
use crate::fixtures;
use serde_json::json;

/// The fixture shoot (Kubernetes 1.20.2) with `spec.kubernetes.kubeAPIServer` from JSON.
fn shoot(apiserver: serde_json::Value) -> Shoot {
    let mut s = fixtures::shoot();
    s.spec.kubernetes.kube_api_server = Some(serde_json::from_value(apiserver).unwrap());
    s
}

fn errors(apiserver: serde_json::Value) -> Vec<String> {
    validate(&shoot(apiserver)).iter().map(|e| e.to_string()).collect()
}

/// The one error of `apiserver`, which must be about `field`.
fn refused(apiserver: serde_json::Value, field: &str) -> String {
    let errs = errors(apiserver);
    assert_eq!(errs.len(), 1, "{errs:?}");
    let full = format!("spec.kubernetes.kubeAPIServer.{field}: ");
    assert!(errs[0].starts_with(&full), "{} is not about {full}", errs[0]);
    errs[0].clone()
}

fn ca_pem() -> String {
    rcgen::generate_simple_self_signed(vec!["issuer.example.com".to_string()]).unwrap().cert.pem()
}

#[test]
fn every_honoured_setting_passes() {
    let ok = json!({
        "admissionPlugins": [
            {"name": "PodNodeSelector", "config": {"podNodeSelectorPluginConfig": {"clusterDefaultNodeSelector": "a=b"}}},
            {"name": "EventRateLimit", "config": "apiVersion: eventratelimit.admission.k8s.io/v1alpha1\nkind: Configuration\nlimits:\n- type: Server\n  qps: 10\n  burst: 20\n"},
            {"name": "DefaultStorageClass", "disabled": true},
            {"name": "PodSecurityPolicy"}
        ],
        "apiAudiences": ["kubernetes", "gardener"],
        "auditConfig": {"auditPolicy": {"configMapRef": {"name": "audit-policy"}}},
        "enableAnonymousAuthentication": false,
        "enableBasicAuthentication": false,
        "eventTTL": "24h",
        "logging": {"verbosity": 3, "httpAccessVerbosity": 4},
        "defaultNotReadyTolerationSeconds": 120,
        "defaultUnreachableTolerationSeconds": 0,
        "oidcConfig": {
            "issuerURL": "https://issuer.example.com/dex",
            "clientID": "shoot",
            "caBundle": ca_pem(),
            "usernameClaim": "email",
            "usernamePrefix": "oidc:",
            "groupsClaim": "groups",
            "groupsPrefix": "oidc:",
            "signingAlgs": ["RS256", "ES256"],
            "requiredClaims": {"hd": "example.com"}
        },
        "serviceAccountConfig": {"issuer": "https://issuer.example.com", "extendTokenExpiration": false, "maxTokenExpiration": "720h"},
        "requests": {"maxNonMutatingInflight": 800, "maxMutatingInflight": 400},
        "watchCacheSizes": {"default": 100, "resources": [{"resource": "secrets", "size": 500}, {"apiGroup": "apps", "resource": "deployments", "size": 50}]},
        "encryptionConfig": {"resources": ["configmaps", "deployments.apps"]}
    });
    assert_eq!(errors(ok), Vec::<String>::new());
}

#[test]
fn admission_plugins_follow_gardeners_list_for_the_version() {
    let e = refused(json!({"admissionPlugins": [{"name": "Foo"}]}), "admissionPlugins[0].name");
    assert!(e.contains("unknown admission plugin \"Foo\""), "{e}");
    let e = refused(json!({"admissionPlugins": [{"name": "PodSecurity"}]}), "admissionPlugins[0].name");
    assert!(e.ends_with("admission plugin \"PodSecurity\" is not supported in Kubernetes version 1.20.2"), "{e}");
    let e = refused(json!({"admissionPlugins": [{"name": "PodPreset"}]}), "admissionPlugins[0].name");
    assert!(e.contains("not supported in Kubernetes version 1.20.2"), "removed in 1.20: {e}");
    let e = refused(json!({"admissionPlugins": [{"name": "SecurityContextDeny"}]}), "admissionPlugins[0].name");
    assert!(e.contains("is forbidden"), "{e}");
    let e = refused(json!({"admissionPlugins": [{"name": ""}]}), "admissionPlugins[0].name");
    assert!(e.contains("Required value"), "{e}");
}

#[test]
fn required_admission_plugins_cannot_be_disabled() {
    for name in ["NamespaceLifecycle", "NodeRestriction", "MutatingAdmissionWebhook", "ValidatingAdmissionWebhook"] {
        let e = refused(json!({"admissionPlugins": [{"name": name, "disabled": true}]}), "admissionPlugins[0]");
        assert!(e.ends_with(&format!("admission plugin {name:?} cannot be disabled")), "{e}");
    }
    assert_eq!(errors(json!({"admissionPlugins": [{"name": "LimitRanger", "disabled": true}]})), Vec::<String>::new());
}

#[test]
fn plugin_config_only_for_configurable_plugins_and_as_an_object() {
    let e = refused(
        json!({"admissionPlugins": [{"name": "AlwaysPullImages", "config": {"a": 1}}]}),
        "admissionPlugins[0].config",
    );
    assert!(e.ends_with("admission plugin \"AlwaysPullImages\" does not allow configuration"), "{e}");
    let e = refused(
        json!({"admissionPlugins": [{"name": "PodNodeSelector", "config": "- a\n- b\n"}]}),
        "admissionPlugins[0].config",
    );
    assert!(e.contains("must be an object"), "{e}");
}

#[test]
fn a_plugin_kubeconfig_is_refused() {
    let e = refused(
        json!({"admissionPlugins": [{"name": "ValidatingAdmissionWebhook", "kubeconfigSecretName": "wh"}]}),
        "admissionPlugins[0].kubeconfigSecretName",
    );
    assert!(e.contains("not supported by this system"), "{e}");
}

#[test]
fn oidc_needs_issuer_and_client_together_and_an_https_issuer() {
    let e = refused(json!({"oidcConfig": {"issuerURL": "https://i.example.com"}}), "oidcConfig.clientID");
    assert!(e.contains("clientID must be set when issuerURL is provided"), "{e}");
    let e = refused(json!({"oidcConfig": {"clientID": "c"}}), "oidcConfig.issuerURL");
    assert!(e.contains("issuerURL must be set when clientID is provided"), "{e}");
    let e =
        refused(json!({"oidcConfig": {"clientID": "c", "issuerURL": "http://i.example.com"}}), "oidcConfig.issuerURL");
    assert!(e.ends_with("must have https scheme"), "{e}");
    for (url, why) in [
        ("https://i.example.com/?a=b", "must not contain a query"),
        ("https://i.example.com/#x", "must not contain a fragment"),
        ("https://u:p@i.example.com", "must not contain a username or password"),
    ] {
        let e = refused(json!({"oidcConfig": {"clientID": "c", "issuerURL": url}}), "oidcConfig.issuerURL");
        assert!(e.ends_with(why), "{e}");
    }
    let errs = errors(json!({"oidcConfig": {"clientID": "", "issuerURL": ""}}));
    assert_eq!(errs.len(), 2, "{errs:?}");
}

#[test]
fn oidc_ca_claims_algorithms_and_client_authentication() {
    let base = |extra: serde_json::Value| {
        let mut v = json!({"oidcConfig": {"clientID": "c", "issuerURL": "https://i.example.com"}});
        for (k, x) in extra.as_object().unwrap() {
            v["oidcConfig"][k] = x.clone();
        }
        v
    };
    let e = refused(base(json!({"caBundle": "not a certificate"})), "oidcConfig.caBundle");
    assert!(e.contains("not a valid PEM-encoded certificate"), "{e}");
    let e = refused(base(json!({"signingAlgs": ["RS256", "HS256"]})), "oidcConfig.signingAlgs[1]");
    assert!(e.contains("Unsupported value: \"HS256\""), "{e}");
    for field in ["usernameClaim", "usernamePrefix", "groupsClaim", "groupsPrefix"] {
        let e = refused(base(json!({field: ""})), &format!("oidcConfig.{field}"));
        assert!(e.contains("cannot be empty when key is provided"), "{e}");
    }
    let e = refused(base(json!({"clientAuthentication": {"secret": "s"}})), "oidcConfig.clientAuthentication");
    assert!(e.contains("Forbidden") && e.contains("API server ignores it"), "{e}");
}

#[test]
fn service_account_settings_on_1_20() {
    let e = refused(
        json!({"serviceAccountConfig": {"acceptedIssuers": ["https://old"]}}),
        "serviceAccountConfig.acceptedIssuers",
    );
    assert!(e.contains("needs Kubernetes 1.22 or later"), "{e}");
    let e = refused(
        json!({"serviceAccountConfig": {"maxTokenExpiration": "24h"}}),
        "serviceAccountConfig.maxTokenExpiration",
    );
    assert!(e.ends_with("must be at least 720h (30d)"), "{e}");
    let e = refused(
        json!({"serviceAccountConfig": {"maxTokenExpiration": "2161h"}}),
        "serviceAccountConfig.maxTokenExpiration",
    );
    assert!(e.ends_with("must be at most 2160h (90d)"), "{e}");
    let e = refused(
        json!({"serviceAccountConfig": {"maxTokenExpiration": "-1h"}}),
        "serviceAccountConfig.maxTokenExpiration",
    );
    assert!(e.ends_with("can not be negative"), "{e}");
    let e = refused(
        json!({"serviceAccountConfig": {"maxTokenExpiration": "30d"}}),
        "serviceAccountConfig.maxTokenExpiration",
    );
    assert!(e.contains("must be a duration"), "{e}");
    let e = refused(json!({"serviceAccountConfig": {"issuer": ""}}), "serviceAccountConfig.issuer");
    assert!(e.contains("cannot be empty"), "{e}");
}

#[test]
fn accepted_issuers_from_1_22_must_differ() {
    let mut s = shoot(
        json!({"serviceAccountConfig": {"issuer": "https://a", "acceptedIssuers": ["https://b", "https://a", "https://b"]}}),
    );
    s.spec.kubernetes.version = "1.22.0".into();
    let errs: Vec<String> = validate(&s).iter().map(|e| e.to_string()).collect();
    assert_eq!(
        errs,
        vec![
            "spec.kubernetes.kubeAPIServer.serviceAccountConfig.acceptedIssuers[1]: Invalid value: \"https://a\": acceptedIssuers cannot contains the issuer field value: https://a".to_string(),
            "spec.kubernetes.kubeAPIServer.serviceAccountConfig.acceptedIssuers[2]: Duplicate value: \"https://b\"".to_string(),
        ]
    );
}

#[test]
fn basic_authentication_is_refused() {
    let e = refused(json!({"enableBasicAuthentication": true}), "enableBasicAuthentication");
    assert!(e.contains("removed in Kubernetes 1.19"), "{e}");
}

#[test]
fn the_audit_policy_reference_needs_a_name() {
    let e = refused(
        json!({"auditConfig": {"auditPolicy": {"configMapRef": {"name": ""}}}}),
        "auditConfig.auditPolicy.configMapRef.name",
    );
    assert!(e.contains("Required value"), "{e}");
}

#[test]
fn limits_event_ttl_and_tolerations_are_bounded() {
    let e = refused(json!({"eventTTL": "169h"}), "eventTTL");
    assert!(e.ends_with("can not be longer than 7d"), "{e}");
    let e = refused(json!({"eventTTL": "-1s"}), "eventTTL");
    assert!(e.ends_with("can not be negative"), "{e}");
    let e = refused(json!({"eventTTL": "1 hour"}), "eventTTL");
    assert!(e.contains("must be a duration"), "{e}");
    let e = refused(json!({"requests": {"maxNonMutatingInflight": 801}}), "requests.maxNonMutatingInflight");
    assert!(e.ends_with("cannot set higher than 800"), "{e}");
    let e = refused(json!({"requests": {"maxMutatingInflight": 401}}), "requests.maxMutatingInflight");
    assert!(e.ends_with("cannot set higher than 400"), "{e}");
    refused(json!({"requests": {"maxMutatingInflight": -1}}), "requests.maxMutatingInflight");
    refused(json!({"watchCacheSizes": {"default": -1}}), "watchCacheSizes.default");
    refused(
        json!({"watchCacheSizes": {"resources": [{"resource": "", "size": 1}]}}),
        "watchCacheSizes.resources[0].resource",
    );
    refused(
        json!({"watchCacheSizes": {"resources": [{"resource": "pods", "size": -1}]}}),
        "watchCacheSizes.resources[0].size",
    );
    refused(json!({"logging": {"verbosity": -1}}), "logging.verbosity");
    refused(json!({"logging": {"httpAccessVerbosity": -1}}), "logging.httpAccessVerbosity");
    refused(json!({"defaultNotReadyTolerationSeconds": -1}), "defaultNotReadyTolerationSeconds");
    refused(json!({"defaultUnreachableTolerationSeconds": -1}), "defaultUnreachableTolerationSeconds");
}

#[test]
fn encryption_resources_are_unique_not_secrets_and_without_wildcards() {
    let e = refused(
        json!({"encryptionConfig": {"resources": ["configmaps", "configmaps."]}}),
        "encryptionConfig.resources[1]",
    );
    assert!(e.contains("Duplicate value"), "{e}");
    let e = refused(json!({"encryptionConfig": {"resources": ["secrets"]}}), "encryptionConfig.resources[0]");
    assert!(e.ends_with("\"secrets\" are always encrypted"), "{e}");
    let e = refused(json!({"encryptionConfig": {"resources": ["*.apps"]}}), "encryptionConfig.resources[0]");
    assert!(e.ends_with("wildcards are not supported"), "{e}");
}

#[test]
fn an_encrypted_resource_can_be_added_but_not_removed() {
    let old = shoot(json!({"encryptionConfig": {"resources": ["configmaps"]}}));
    let added = shoot(json!({"encryptionConfig": {"resources": ["configmaps.", "deployments.apps"]}}));
    assert!(validate_update(&added, &old).is_empty());
    let errs = validate_update(&old, &added);
    assert_eq!(errs.len(), 1, "{errs}");
    assert!(errs.to_string().starts_with("spec.kubernetes.kubeAPIServer.encryptionConfig.resources: Forbidden: \"deployments.apps\" cannot be removed"), "{errs}");
}

/// A created shoot asking for `provider` (none: unset), its status recording `in_use` and an
/// etcd encryption key rotation in `phase`.
fn created(provider: Option<&str>, in_use: &str, phase: Option<&str>, hibernated: bool) -> Shoot {
    let mut config = json!({"resources": ["configmaps"]});
    if let Some(p) = provider {
        config["provider"] = json!({"type": p});
    }
    let mut s = shoot(json!({"encryptionConfig": config}));
    s.spec.hibernation = hibernated.then(|| serde_json::from_value(json!({"enabled": true})).unwrap());
    let mut credentials = json!({"encryptionAtRest": {"resources": ["configmaps"], "provider": {"type": in_use}}});
    if let Some(phase) = phase {
        credentials["rotation"] = json!({"etcdEncryptionKey": {"phase": phase}});
    }
    s.status = Some(
        serde_json::from_value(json!({
            "lastOperation": {"type": "Reconcile", "state": "Succeeded", "progress": 100, "description": "",
                              "lastUpdateTime": "2026-01-01T00:00:00Z"},
            "credentials": credentials,
        }))
        .unwrap(),
    );
    s
}

fn provider_errors(new: &Shoot, old: &Shoot) -> Vec<String> {
    validate_update(new, old).iter().map(|e| e.to_string()).collect()
}

#[test]
fn the_provider_is_one_gardener_offers() {
    for ok in ["aescbc", "aesgcm", "secretbox"] {
        assert!(errors(json!({"encryptionConfig": {"provider": {"type": ok}}})).is_empty(), "{ok}");
    }
    let e = refused(json!({"encryptionConfig": {"provider": {"type": "kms"}}}), "encryptionConfig.provider.type");
    assert!(e.contains("Unsupported value: \"kms\"") && e.contains("\"secretbox\""), "{e}");
}

#[test]
fn the_provider_changes_only_where_its_key_rotation_can_run() {
    let old = created(None, "aescbc", Some("Completed"), false);
    let new = created(Some("secretbox"), "aescbc", Some("Completed"), false);
    assert!(provider_errors(&new, &old).is_empty(), "a created, awake shoot may change it");
    assert!(provider_errors(&old, &old).is_empty(), "no change, no rule");

    let field = "spec.kubernetes.kubeAPIServer.encryptionConfig.provider.type: Forbidden: ";
    let only = |new: &Shoot, old: &Shoot, why: &str| {
        let errs = provider_errors(new, old);
        assert_eq!(errs, vec![format!("{field}{why}")]);
    };
    let mut creating = new.clone();
    creating.status.as_mut().unwrap().last_operation =
        serde_json::from_value(json!({"type": "Create", "state": "Processing", "progress": 50, "description": "",
                                      "lastUpdateTime": "2026-01-01T00:00:00Z"}))
        .unwrap();
    only(
        &creating,
        &old,
        "changing the provider rotates the etcd encryption key, and credentials cannot be rotated before the shoot was created successfully",
    );
    only(
        &created(Some("secretbox"), "aescbc", Some("Completed"), true),
        &old,
        "changing the provider rotates the etcd encryption key, and credentials cannot be rotated while the shoot is hibernated or hibernating",
    );
    only(
        &created(Some("secretbox"), "aescbc", Some("Prepared"), false),
        &created(None, "aescbc", Some("Prepared"), false),
        "changing the provider rotates the etcd encryption key, and the rotation of the etcd encryption key cannot start in phase Prepared; it is under way",
    );
    // aescbc → secretbox is still rolling out (the status says aescbc): no second change.
    only(
        &created(Some("aesgcm"), "aescbc", Some("Completed"), false),
        &new,
        "the provider cannot be changed while an earlier change of it is being rolled out",
    );
    let mut both = new.clone();
    let config = both.spec.kubernetes.kube_api_server.as_mut().unwrap().encryption_config.as_mut().unwrap();
    config.resources.push("deployments.apps".into());
    only(&both, &old, "the provider and the resources cannot be changed at the same time");
}

#[test]
fn go_durations_parse_like_go() {
    assert_eq!(duration_seconds("1h30m"), Some(5400.0));
    assert_eq!(duration_seconds("0"), Some(0.0));
    assert_eq!(duration_seconds("1.5s"), Some(1.5));
    assert_eq!(duration_seconds("-2m"), Some(-120.0));
    assert_eq!(duration_seconds("3"), None, "a unit is required");
    assert_eq!(duration_seconds("1d"), None);
    assert_eq!(duration_seconds(""), None);
}
