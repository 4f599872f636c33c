//! Which Quotas count and which shoots share their scope, for shoots on SecretBindings and on
//! CredentialsBindings.

use super::*;
use crate::fixtures;
use crate::review::StaticLookup;
use api::core::quota::QuotaScope;
use api::core::{Quota, QuotaSpec, SecretBinding};
use api::security::CredentialsBinding;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

const NS: &str = "garden-dev";

fn quota(name: &str, scope: &str, cpu: &str) -> Arc<Quota> {
    let mut q = Quota::new(
        name,
        QuotaSpec {
            metrics: [("cpu".to_string(), Quantity(cpu.into()))].into(),
            scope: QuotaScope { kind: scope.into(), ..Default::default() },
            ..Default::default()
        },
    );
    q.metadata.namespace = Some(NS.into());
    Arc::new(q)
}

fn reference(name: &str) -> ObjectReference {
    ObjectReference { name: name.into(), ..Default::default() }
}

fn secret_binding(name: &str, secret: &str, quotas: &[&str]) -> Arc<SecretBinding> {
    let mut b = SecretBinding::new(name, Default::default());
    b.metadata.namespace = Some(NS.into());
    b.spec.secret_ref.name = secret.into();
    b.spec.quotas = quotas.iter().map(|q| reference(q)).collect();
    Arc::new(b)
}

fn credentials_binding(name: &str, kind: &str, credentials: &str, quotas: &[&str]) -> Arc<CredentialsBinding> {
    let mut b = CredentialsBinding::new(name, Default::default());
    b.metadata.namespace = Some(NS.into());
    b.spec.credentials_ref = ObjectReference {
        kind: Some(kind.into()),
        name: credentials.into(),
        namespace: Some(NS.into()),
        ..Default::default()
    };
    b.spec.quotas = quotas.iter().map(|q| reference(q)).collect();
    Arc::new(b)
}

/// A fixture shoot (1 CPU machines, at most 2: 2 CPU) on the SecretBinding or
/// CredentialsBinding `binding`.
fn shoot(name: &str, secret_binding: Option<&str>, credentials_binding: Option<&str>) -> Shoot {
    let mut s = fixtures::shoot();
    s.metadata.name = Some(name.into());
    s.metadata.namespace = Some(NS.into());
    s.spec.secret_binding_name = secret_binding.map(Into::into);
    s.spec.credentials_binding_name = credentials_binding.map(Into::into);
    s
}

fn garden(shoots: Vec<Shoot>) -> StaticLookup {
    StaticLookup {
        quotas: vec![quota("project", "Project", "3"), quota("secret", "Secret", "3")],
        secret_bindings: vec![
            secret_binding("sb-project", "creds", &["project"]),
            secret_binding("sb-secret", "creds", &["secret"]),
            secret_binding("sb-other-secret", "other", &["secret"]),
        ],
        credentials_bindings: vec![
            credentials_binding("cb-project", "Secret", "creds", &["project"]),
            credentials_binding("cb-secret", "Secret", "creds", &["secret"]),
            credentials_binding("cb-identity", "WorkloadIdentity", "creds", &["secret"]),
            credentials_binding("cb-none", "Secret", "creds", &[]),
        ],
        shoots: shoots.into_iter().map(Arc::new).collect(),
        ..Default::default()
    }
}

#[test]
fn credentials_binding_quotas_count_like_secret_binding_quotas() {
    let profile = fixtures::cloud_profile_spec();
    // (existing shoots, the new shoot, refused by quota?)
    let cases: Vec<(&str, Vec<Shoot>, Shoot, Option<&str>)> = vec![
        ("alone on a credentials binding", vec![], shoot("new", None, Some("cb-project")), None),
        (
            "project quota through a credentials binding",
            vec![shoot("a", Some("sb-project"), None)],
            shoot("new", None, Some("cb-project")),
            Some("quota garden-dev/project allows cpu 3; the shoots in its scope would use 4 (this shoot 2)"),
        ),
        (
            "a credentials binding without quotas is not limited",
            vec![shoot("a", Some("sb-project"), None)],
            shoot("new", None, Some("cb-none")),
            None,
        ),
        (
            "secret scope: a secret binding and a credentials binding to the same secret share it",
            vec![shoot("a", Some("sb-secret"), None)],
            shoot("new", None, Some("cb-secret")),
            Some("quota garden-dev/secret allows cpu 3"),
        ),
        (
            "secret scope: a workload identity of the same name is other credentials",
            vec![shoot("a", Some("sb-secret"), None)],
            shoot("new", None, Some("cb-identity")),
            None,
        ),
        (
            "secret scope: shoots on other secrets do not count",
            vec![shoot("a", Some("sb-other-secret"), None)],
            shoot("new", None, Some("cb-secret")),
            None,
        ),
        (
            "a binding that does not exist counts nothing",
            vec![shoot("a", Some("sb-project"), None)],
            shoot("new", None, Some("nope")),
            None,
        ),
    ];
    for (name, existing, new, want) in cases {
        let l = garden(existing);
        let errs = check(&l, &new, None, &profile);
        match want {
            None => assert!(errs.is_empty(), "{name}: {errs}"),
            Some(w) => assert!(errs.to_string().contains(w), "{name}: want {w:?}, got {errs}"),
        }
    }
}
