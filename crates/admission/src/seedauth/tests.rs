use super::authorizer::{Attributes, Decision, decide};
use super::fixtures::*;
use super::graph::StaticGraph;
use api::helpers::seed_identity;
use std::sync::Arc;

/// Seeds `a` and `b`: shoot `garden-p/sa` on `a` (SecretBinding to a Secret in namespace
/// `creds`, an audit policy ConfigMap), `garden-p/sb` on `b` (CredentialsBinding),
/// `garden-p/mig` migrating from `a` to `b`, `garden/host` on `a` registered by ManagedSeed
/// `garden/ms1`; BackupBuckets `uid-a` and `uid-b` of the two seeds; BackupEntries of `sa`, of
/// `mig` (still kept on `a`) and of a deleted shoot `gone` on `a` (its deletion grace period).
fn garden() -> StaticGraph {
    let mut sa = shoot("garden-p", "sa", Some("a"), Some("a"));
    let policy = serde_json::json!({"auditConfig": {"auditPolicy": {"configMapRef": {"name": "sa-audit"}}}});
    sa.spec.kubernetes.kube_api_server = Some(serde_json::from_value(policy).unwrap());
    let mut sb = shoot("garden-p", "sb", Some("b"), Some("b"));
    sb.spec.secret_binding_name = None;
    sb.spec.credentials_binding_name = Some("sb-cb".into());
    StaticGraph {
        shoots: vec![
            Arc::new(sa),
            Arc::new(sb),
            Arc::new(shoot("garden-p", "mig", Some("b"), Some("a"))),
            Arc::new(shoot("garden", "host", Some("a"), None)),
        ],
        secret_bindings: vec![Arc::new(secret_binding("garden-p", "sa-sb", Some("creds"), "sa-credentials"))],
        credentials_bindings: vec![Arc::new(credentials_binding("garden-p", "sb-cb", "sb-credentials"))],
        managed_seeds: vec![Arc::new(managed_seed("ms1", "host"))],
        controller_installations: vec![
            Arc::new(controller_installation("ci-a", "a")),
            Arc::new(controller_installation("ci-b", "b")),
        ],
        bastions: vec![Arc::new(bastion("garden-p", "ba", "sa"))],
        projects: vec![Arc::new(project("p", "garden-p"))],
        backup_buckets: vec![Arc::new(backup_bucket("uid-a", "a")), Arc::new(backup_bucket("uid-b", "b"))],
        backup_entries: vec![
            Arc::new(backup_entry("garden-p", "sa--1", "a", Some("a"), "sa")),
            Arc::new(backup_entry("garden-p", "mig--3", "a", Some("a"), "mig")),
            Arc::new(backup_entry("garden-p", "gone--4", "a", Some("a"), "gone")),
        ],
    }
}

fn attrs(seed: &str, verb: &str, resource: &str, ns: &str, name: &str) -> Attributes {
    let (group, resource) = match resource.split_once('.') {
        Some((r, g)) => (g.to_string(), r.to_string()),
        None => (String::new(), resource.to_string()),
    };
    let (resource, subresource) = match resource.split_once('/') {
        Some((r, s)) => (r.to_string(), s.to_string()),
        None => (resource, String::new()),
    };
    Attributes {
        user: seed_identity::user(seed),
        groups: vec![seed_identity::GROUP.into(), "system:authenticated".into()],
        verb: verb.into(),
        group,
        resource,
        subresource,
        namespace: ns.into(),
        name: name.into(),
        non_resource: false,
    }
}

/// (verb, resource[/subresource][.group], namespace, name): allowed for seed `a`, no opinion
/// for seed `b`.
const OWNED_BY_A: &[(&str, &str, &str, &str)] = &[
    ("patch", "seeds.core.gardener.cloud", "", "a"),
    ("delete", "seeds.core.gardener.cloud", "", "a"),
    ("patch", "seeds/status.core.gardener.cloud", "", "a"),
    ("delete", "seeds.core.gardener.cloud", "", "ms1"),
    ("patch", "shoots.core.gardener.cloud", "garden-p", "sa"),
    ("update", "shoots/status.core.gardener.cloud", "garden-p", "sa"),
    ("get", "shootstates.core.gardener.cloud", "garden-p", "sa"),
    ("patch", "shootstates.core.gardener.cloud", "garden-p", "sa"),
    ("delete", "shootstates.core.gardener.cloud", "garden-p", "sa"),
    ("get", "internalsecrets.core.gardener.cloud", "garden-p", "sa.ca-client"),
    ("patch", "internalsecrets.core.gardener.cloud", "garden-p", "sa.ca-client"),
    ("patch", "configmaps", "garden-p", "sa.ca-cluster"),
    ("get", "configmaps", "garden-p", "sa-audit"),
    ("get", "secrets", "garden-p", "sa.ssh-keypair"),
    ("delete", "secrets", "garden-p", "sa.ssh-keypair.old"),
    ("get", "secrets", "creds", "sa-credentials"),
    ("get", "secretbindings.core.gardener.cloud", "garden-p", "sa-sb"),
    ("get", "controllerinstallations.core.gardener.cloud", "", "ci-a"),
    ("patch", "controllerinstallations/status.core.gardener.cloud", "", "ci-a"),
    ("get", "managedseeds.seedmanagement.gardener.cloud", "garden", "ms1"),
    ("patch", "managedseeds/status.seedmanagement.gardener.cloud", "garden", "ms1"),
    ("patch", "bastions.operations.gardener.cloud", "garden-p", "ba"),
    ("patch", "bastions/status.operations.gardener.cloud", "garden-p", "ba"),
    ("get", "leases.coordination.k8s.io", "gardener-system-seed-lease", "a"),
    ("patch", "leases.coordination.k8s.io", "gardener-system-seed-lease", "a"),
    ("update", "leases.coordination.k8s.io", "garden", "gardenlet-a-leader-election"),
    ("get", "serviceaccounts", "garden", "gardenlet-ms1"),
    ("delete", "secrets", "garden", "gardenlet-ms1-token"),
    ("create", "serviceaccounts/token", "garden", "gardenlet-ms1"),
    ("patch", "clusterroles.rbac.authorization.k8s.io", "", "gardener.cloud:system:gardenlet:ms1"),
    ("bind", "clusterroles.rbac.authorization.k8s.io", "", "gardener.cloud:system:gardenlet:ms1"),
    ("escalate", "clusterroles.rbac.authorization.k8s.io", "", "gardener.cloud:system:gardenlet:ms1"),
    ("delete", "clusterrolebindings.rbac.authorization.k8s.io", "", "gardener.cloud:system:gardenlet:ms1"),
    ("patch", "clusterroles.rbac.authorization.k8s.io", "", "gardener.cloud:system:gardenlet:ms1:bootstrap"),
    ("bind", "clusterroles.rbac.authorization.k8s.io", "", "gardener.cloud:system:gardenlet:ms1:bootstrap"),
    ("patch", "roles.rbac.authorization.k8s.io", "garden", "gardener.cloud:system:gardenlet:ms1:leader-election"),
    ("create", "certificatesigningrequests/seedclient.certificates.k8s.io", "", "a"),
    ("get", "backupbuckets.core.gardener.cloud", "", "uid-a"),
    ("patch", "backupbuckets/status.core.gardener.cloud", "", "uid-a"),
    ("delete", "backupbuckets.core.gardener.cloud", "", "uid-a"),
    ("patch", "backupentries.core.gardener.cloud", "garden-p", "sa--1"),
    ("patch", "backupentries/status.core.gardener.cloud", "garden-p", "sa--1"),
    // The entry of a deleted shoot, kept for the deletion grace period.
    ("patch", "backupentries.core.gardener.cloud", "garden-p", "gone--4"),
];

/// Allowed for seed `b`, no opinion for `a`.
const OWNED_BY_B: &[(&str, &str, &str, &str)] = &[
    ("get", "credentialsbindings.security.gardener.cloud", "garden-p", "sb-cb"),
    ("get", "secrets", "garden-p", "sb-credentials"),
    ("patch", "controllerinstallations.core.gardener.cloud", "", "ci-b"),
    ("patch", "backupbuckets.core.gardener.cloud", "", "uid-b"),
];

/// Allowed for both seeds (the migrating shoot, and what every gardenlet's informers need).
const SHARED: &[(&str, &str, &str, &str)] = &[
    ("get", "shoots.core.gardener.cloud", "garden-p", "mig"),
    ("patch", "shoots/status.core.gardener.cloud", "garden-p", "mig"),
    ("get", "shootstates.core.gardener.cloud", "garden-p", "mig"),
    ("patch", "internalsecrets.core.gardener.cloud", "garden-p", "mig.ca-client"),
    ("get", "secretbindings.core.gardener.cloud", "garden-p", "mig-sb"),
    ("list", "shoots.core.gardener.cloud", "", ""),
    // As list and watch: any shoot's spec, also another seed's.
    ("get", "shoots.core.gardener.cloud", "garden-p", "sa"),
    ("get", "shoots.core.gardener.cloud", "garden-p", "sb"),
    ("watch", "controllerinstallations.core.gardener.cloud", "", ""),
    ("list", "bastions.operations.gardener.cloud", "", ""),
    ("get", "cloudprofiles.core.gardener.cloud", "", "local"),
    ("list", "controllerdeployments.core.gardener.cloud", "", ""),
    ("get", "exposureclasses.core.gardener.cloud", "", "x"),
    ("get", "projects.core.gardener.cloud", "", "p"),
    ("get", "namespaces", "", "garden-p"),
    ("get", "namespaces", "", "gardener-system-seed-lease"),
    ("create", "namespaces", "", ""),
    ("create", "shootstates.core.gardener.cloud", "garden-p", ""),
    ("create", "events", "garden-p", ""),
    ("patch", "events.events.k8s.io", "garden-p", "e"),
    ("create", "certificatesigningrequests.certificates.k8s.io", "", ""),
    ("get", "certificatesigningrequests.certificates.k8s.io", "", "csr-1"),
    ("get", "seeds.core.gardener.cloud", "", "b"),
    // A ShootState whose Shoot is gone may be deleted.
    ("delete", "shootstates.core.gardener.cloud", "garden-p", "gone"),
    // The entry of the migrating shoot: the source keeps it, the destination takes it over.
    ("patch", "backupentries.core.gardener.cloud", "garden-p", "mig--3"),
    ("update", "backupentries/status.core.gardener.cloud", "garden-p", "mig--3"),
    ("create", "backupentries.core.gardener.cloud", "garden-p", ""),
    ("create", "backupbuckets.core.gardener.cloud", "", ""),
    ("watch", "backupentries.core.gardener.cloud", "", ""),
];

/// No opinion for either seed.
const NOBODYS: &[(&str, &str, &str, &str)] = &[
    ("get", "secrets", "garden-p", "other"),
    ("list", "secrets", "garden-p", ""),
    ("patch", "secrets", "creds", "sa-credentials"),
    ("delete", "shoots.core.gardener.cloud", "garden-p", "sa"),
    ("patch", "shoots.core.gardener.cloud", "garden-p", "missing"),
    ("get", "internalsecrets.core.gardener.cloud", "garden-p", "sa.other"),
    ("patch", "seeds/spec.core.gardener.cloud", "", "a"),
    ("get", "pods", "garden-p", "p"),
    ("update", "cloudprofiles.core.gardener.cloud", "", "local"),
    ("get", "namespaces", "", "kube-system"),
    ("get", "leases.coordination.k8s.io", "kube-system", "a"),
    ("get", "serviceaccounts", "garden", "gardenlet"),
    ("create", "serviceaccounts/token", "garden", "gardener-admission"),
    ("patch", "clusterroles.rbac.authorization.k8s.io", "", "cluster-admin"),
    ("bind", "clusterroles.rbac.authorization.k8s.io", "", "gardener.cloud:system:gardenlet:a"),
    ("bind", "clusterroles.rbac.authorization.k8s.io", "", "gardener.cloud:system:gardenlet:a:bootstrap"),
    ("delete", "events", "garden-p", "e"),
    ("get", "backupbuckets.core.gardener.cloud", "", "a"),
    ("get", "backupentries.core.gardener.cloud", "garden-p", "missing"),
    ("patch", "backupentries/spec.core.gardener.cloud", "garden-p", "sa--1"),
];

fn allowed(g: &StaticGraph, seed: &str, case: &(&str, &str, &str, &str)) -> bool {
    decide(g, &attrs(seed, case.0, case.1, case.2, case.3)) == Decision::Allow
}

#[test]
fn each_object_is_allowed_to_its_seed_and_to_no_other() {
    let g = garden();
    let mut wrong = Vec::new();
    for (cases, a, b) in
        [(OWNED_BY_A, true, false), (OWNED_BY_B, false, true), (SHARED, true, true), (NOBODYS, false, false)]
    {
        for case in cases {
            if allowed(&g, "a", case) != a || allowed(&g, "b", case) != b {
                wrong.push(format!("{case:?}: expected a={a} b={b}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn users_that_are_not_seeds_get_no_opinion_and_no_reason() {
    let g = garden();
    let mut not_a_seed = attrs("a", "get", "shoots.core.gardener.cloud", "garden-p", "sa");
    not_a_seed.groups = vec!["system:authenticated".into()];
    assert_eq!(decide(&g, &not_a_seed), Decision::NoOpinion(String::new()));
    let mut admin = attrs("a", "get", "secrets", "creds", "sa-credentials");
    admin.user = "admin".into();
    admin.groups = vec!["system:masters".into()];
    assert_eq!(decide(&g, &admin), Decision::NoOpinion(String::new()));
}

#[test]
fn reasons_name_the_seed_and_why() {
    let g = garden();
    let Decision::NoOpinion(reason) =
        decide(&g, &attrs("b", "get", "shootstates.core.gardener.cloud", "garden-p", "sa"))
    else {
        panic!("allowed")
    };
    assert_eq!(reason, "seed b: no relation found between the seed and shootstates.core.gardener.cloud garden-p/sa");
    let Decision::NoOpinion(reason) = decide(&g, &attrs("a", "patch", "secrets", "creds", "sa-credentials")) else {
        panic!("allowed")
    };
    assert_eq!(reason, "seed a: secrets creds/sa-credentials is related to the seed for reading only, not for patch");
    let Decision::NoOpinion(reason) = decide(&g, &attrs("a", "get", "pods", "garden-p", "x")) else {
        panic!("allowed")
    };
    assert_eq!(reason, "seed a: pods is not a resource the seed authorizer allows");
}

#[test]
fn a_shoot_moved_away_is_no_longer_the_old_seeds() {
    let mut g = garden();
    g.shoots[2] = Arc::new(shoot("garden-p", "mig", Some("b"), Some("b")));
    let case = ("get", "shootstates.core.gardener.cloud", "garden-p", "mig");
    assert!(!allowed(&g, "a", &case));
    assert!(allowed(&g, "b", &case));
}

#[test]
fn subjectaccessreviews_are_answered_in_their_version_and_never_deny() {
    let g = garden();
    let review = |version: &str, groups_field: &str, user: &str, name: &str| {
        serde_json::to_vec(&serde_json::json!({
            "apiVersion": version, "kind": "SubjectAccessReview",
            "spec": {"user": user, groups_field: [seed_identity::GROUP],
                     "resourceAttributes": {"verb": "get", "group": "core.gardener.cloud", "resource": "shootstates",
                                            "namespace": "garden-p", "name": name}}}))
        .unwrap()
    };
    let answer = |body: &[u8]| serde_json::from_slice::<serde_json::Value>(body).unwrap();
    let v1 =
        super::sar::review_bytes(&g, &review("authorization.k8s.io/v1", "groups", &seed_identity::user("a"), "sa"));
    let v1 = answer(&v1.body);
    assert_eq!(v1["apiVersion"], "authorization.k8s.io/v1");
    assert_eq!(v1["status"]["allowed"], true);
    let beta =
        super::sar::review_bytes(&g, &review("authorization.k8s.io/v1beta1", "group", &seed_identity::user("b"), "sa"));
    assert!(!beta.allowed);
    assert_eq!(beta.seed.as_deref(), Some("b"));
    let beta = answer(&beta.body);
    assert_eq!(beta["apiVersion"], "authorization.k8s.io/v1beta1");
    assert_eq!(beta["status"]["allowed"], false);
    assert_eq!(beta["status"]["denied"], false);
    assert!(beta["status"]["reason"].as_str().unwrap().starts_with("seed b: no relation"));
    // v1beta1's `group` is read as the groups: seed a is allowed through it.
    let beta_a =
        super::sar::review_bytes(&g, &review("authorization.k8s.io/v1beta1", "group", &seed_identity::user("a"), "sa"));
    assert!(beta_a.allowed);
    let garbage = super::sar::review_bytes(&g, b"{not json");
    assert!(!garbage.allowed);
    assert_eq!(answer(&garbage.body)["status"]["denied"], false);
}
