//! Which objects are related to a seed, followed from the references that tie them to it
//! (Gardener's graph, walked on demand): a Shoot by its seed names; what belongs to a Shoot by
//! the Shoot's name and namespace; what a Shoot refers to by the Shoot's references; what
//! belongs to a ManagedSeed by the ManagedSeed's name. Pure functions of a [`SeedGraph`].

use super::graph::SeedGraph;
use api::core::Shoot;

/// The namespace of the seeds' heartbeat Leases.
pub const LEASE_NAMESPACE: &str = "gardener-system-seed-lease";
/// The namespace of ManagedSeeds, of their shoots, and of managed gardenlets' identities.
pub const GARDEN_NAMESPACE: &str = "garden";
/// Suffix of a shoot's client-CA InternalSecret in its project namespace.
pub const CA_CLIENT_SUFFIX: &str = ".ca-client";
/// Suffix of a shoot's CA bundle ConfigMap in its project namespace.
pub const CA_CLUSTER_SUFFIX: &str = ".ca-cluster";
/// Suffixes of a shoot's SSH key pair Secrets (current, previous) in its project namespace.
pub const SSH_KEYPAIR_SUFFIXES: [&str; 2] = [".ssh-keypair", ".ssh-keypair.old"];
/// Prefix of a managed gardenlet's ServiceAccount in the garden namespace.
pub const GARDENLET_SA_PREFIX: &str = "gardenlet-";
/// Prefix of a gardenlet's ClusterRole(Binding); a managed gardenlet's Role(Binding) in the
/// garden namespace adds [`LEADER_ELECTION_SUFFIX`].
pub const GARDENLET_ROLE_PREFIX: &str = "gardener.cloud:system:gardenlet:";
/// Suffix of the token Secret of a managed gardenlet's ServiceAccount in earlier versions.
pub const OLD_TOKEN_SUFFIX: &str = "-token";
/// Suffix of a managed gardenlet's bootstrap ClusterRole(Binding).
pub const BOOTSTRAP_SUFFIX: &str = ":bootstrap";
/// Suffix of a managed gardenlet's leader-election Role(Binding) of earlier versions.
pub const LEADER_ELECTION_SUFFIX: &str = ":leader-election";

/// How far a seed may go with an object: not at all, read it, or read and write it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Access {
    None,
    Read,
    Write,
}

/// Whether `shoot` runs on `seed`: its `spec.seedName` or its `status.seedName` (both while its
/// control plane migrates, so the source seed can finish and the destination restore).
pub fn shoot_on(shoot: &Shoot, seed: &str) -> bool {
    shoot.spec.seed_name.as_deref() == Some(seed) || shoot.status.as_ref().and_then(|s| s.seed_name()) == Some(seed)
}

fn in_namespace(shoot: &Shoot, namespace: &str) -> bool {
    shoot.metadata.namespace.as_deref() == Some(namespace)
}

/// Whether Shoot `namespace/name` exists and runs on `seed`.
pub fn shoot(g: &dyn SeedGraph, seed: &str, namespace: &str, name: &str) -> bool {
    g.shoot(namespace, name).is_some_and(|s| shoot_on(&s, seed))
}

/// The shoot an object named `<shoot><suffix>` belongs to.
pub fn shoot_named<'a>(name: &'a str, suffixes: &[&str]) -> Option<&'a str> {
    suffixes.iter().find_map(|suffix| name.strip_suffix(suffix)).filter(|s| !s.is_empty())
}

/// Whether ManagedSeed `namespace/name` exists in the garden namespace and its shoot runs on
/// `seed` (the seed's gardenlet hosts the managed gardenlet).
pub fn managed_seed(g: &dyn SeedGraph, seed: &str, namespace: &str, name: &str) -> bool {
    namespace == GARDEN_NAMESPACE
        && g.managed_seed(namespace, name)
            .and_then(|m| m.spec.shoot.as_ref().map(|s| s.name.clone()))
            .is_some_and(|s| shoot(g, seed, namespace, &s))
}

/// Seed `name`: the seed itself, or a Seed registered by a ManagedSeed it hosts.
pub fn seed_object(g: &dyn SeedGraph, seed: &str, name: &str) -> bool {
    name == seed || managed_seed(g, seed, GARDEN_NAMESPACE, name)
}

/// Secret `namespace/name`: a shoot's SSH key pair (write), or the provider credentials a
/// shoot's SecretBinding or CredentialsBinding refers to (read), possibly in another
/// namespace. Resolved from the bindings' references; Secrets themselves are never read.
pub fn secret(g: &dyn SeedGraph, seed: &str, namespace: &str, name: &str) -> Access {
    if shoot_named(name, &SSH_KEYPAIR_SUFFIXES).is_some_and(|s| shoot(g, seed, namespace, s)) {
        return Access::Write;
    }
    // The never-expiring token Secret `garden/gardenlet-<managed seed>-token` of earlier
    // versions, which the hosting gardenlet deletes.
    let old_token = name.strip_prefix(GARDENLET_SA_PREFIX).and_then(|rest| rest.strip_suffix(OLD_TOKEN_SUFFIX));
    if old_token.is_some_and(|ms| managed_seed(g, seed, namespace, ms)) {
        return Access::Write;
    }
    let credentials = |s: &Shoot| shoot_on(s, seed) && uses_credentials(g, s, namespace, name);
    if g.any_shoot(&credentials) { Access::Read } else { Access::None }
}

/// Whether `shoot`'s binding refers to Secret `namespace/name`.
fn uses_credentials(g: &dyn SeedGraph, shoot: &Shoot, namespace: &str, name: &str) -> bool {
    let own = shoot.metadata.namespace.as_deref().unwrap_or_default();
    let refers = |ref_ns: Option<&str>, ref_name: &str| ref_name == name && ref_ns.unwrap_or(own) == namespace;
    let by_secret_binding = shoot.spec.secret_binding_name.as_deref().and_then(|b| g.secret_binding(own, b));
    if by_secret_binding.is_some_and(|b| refers(b.spec.secret_ref.namespace.as_deref(), &b.spec.secret_ref.name)) {
        return true;
    }
    let by_credentials_binding =
        shoot.spec.credentials_binding_name.as_deref().and_then(|b| g.credentials_binding(own, b));
    by_credentials_binding.is_some_and(|b| {
        let r = &b.spec.credentials_ref;
        r.kind.as_deref().is_none_or(|k| k == "Secret") && refers(r.namespace.as_deref(), &r.name)
    })
}

/// ConfigMap `namespace/name`: a shoot's CA bundle (write), or the audit policy a shoot's
/// kube-apiserver configuration refers to (read).
pub fn config_map(g: &dyn SeedGraph, seed: &str, namespace: &str, name: &str) -> Access {
    if shoot_named(name, &[CA_CLUSTER_SUFFIX]).is_some_and(|s| shoot(g, seed, namespace, s)) {
        return Access::Write;
    }
    let audit = |s: &Shoot| shoot_on(s, seed) && in_namespace(s, namespace) && audit_policy_of(s) == Some(name);
    if g.any_shoot(&audit) { Access::Read } else { Access::None }
}

/// The audit policy ConfigMap a shoot's kube-apiserver configuration names.
fn audit_policy_of(shoot: &Shoot) -> Option<&str> {
    let api_server = shoot.spec.kubernetes.kube_api_server.as_ref()?;
    let policy = api_server.audit_config.as_ref()?.audit_policy.as_ref()?;
    policy.config_map_ref.as_ref().map(|r| r.name.as_str())
}

/// SecretBinding `namespace/name`: named by a shoot on the seed in its namespace.
pub fn secret_binding(g: &dyn SeedGraph, seed: &str, namespace: &str, name: &str) -> bool {
    g.any_shoot(&|s| {
        shoot_on(s, seed) && in_namespace(s, namespace) && s.spec.secret_binding_name.as_deref() == Some(name)
    })
}

/// CredentialsBinding `namespace/name`: named by a shoot on the seed in its namespace.
pub fn credentials_binding(g: &dyn SeedGraph, seed: &str, namespace: &str, name: &str) -> bool {
    g.any_shoot(&|s| {
        shoot_on(s, seed) && in_namespace(s, namespace) && s.spec.credentials_binding_name.as_deref() == Some(name)
    })
}

/// NamespacedCloudProfile `namespace/name`: the profile of a shoot on the seed.
pub fn namespaced_cloud_profile(g: &dyn SeedGraph, seed: &str, namespace: &str, name: &str) -> bool {
    g.any_shoot(&|s| {
        shoot_on(s, seed)
            && in_namespace(s, namespace)
            && s.spec
                .cloud_profile
                .as_ref()
                .is_some_and(|r| r.kind.as_deref() == Some("NamespacedCloudProfile") && r.name == name)
    })
}

/// Namespace `name`: the garden namespace, the heartbeat Leases' namespace, or the project
/// namespace of a shoot on the seed.
pub fn namespace(g: &dyn SeedGraph, seed: &str, name: &str) -> bool {
    name == GARDEN_NAMESPACE || name == LEASE_NAMESPACE || g.any_shoot(&|s| shoot_on(s, seed) && in_namespace(s, name))
}

/// Project `name`: its namespace holds a shoot on the seed.
pub fn project(g: &dyn SeedGraph, seed: &str, name: &str) -> bool {
    g.project(name)
        .and_then(|p| p.spec.namespace.clone())
        .is_some_and(|ns| g.any_shoot(&|s| shoot_on(s, seed) && in_namespace(s, &ns)))
}

/// ControllerInstallation `name`: installs onto the seed (`spec.seedRef.name`).
pub fn controller_installation(g: &dyn SeedGraph, seed: &str, name: &str) -> bool {
    g.controller_installation(name).is_some_and(|c| c.spec.seed_ref.as_ref().is_some_and(|r| r.name == seed))
}

/// Bastion `namespace/name`: for a shoot on the seed (`spec.shootRef.name`, same namespace).
pub fn bastion(g: &dyn SeedGraph, seed: &str, namespace: &str, name: &str) -> bool {
    g.bastion(namespace, name).is_some_and(|b| shoot(g, seed, namespace, &b.spec.shoot_ref.name))
}

/// Lease `namespace/name`: the seed's heartbeat, or its gardenlet's leader election in the
/// garden namespace (a managed gardenlet elects its leader there).
pub fn lease(seed: &str, namespace: &str, name: &str) -> bool {
    (namespace == LEASE_NAMESPACE && name == seed)
        || (namespace == GARDEN_NAMESPACE && name == format!("gardenlet-{seed}-leader-election"))
}

/// ServiceAccount `namespace/name`: `garden/gardenlet-<managed seed>` of a ManagedSeed the
/// seed hosts (the identity of the managed gardenlet, whose tokens the host requests).
pub fn service_account(g: &dyn SeedGraph, seed: &str, namespace: &str, name: &str) -> bool {
    name.strip_prefix(GARDENLET_SA_PREFIX).is_some_and(|ms| managed_seed(g, seed, namespace, ms))
}

/// An RBAC object of a managed gardenlet: ClusterRole(Binding)
/// `gardener.cloud:system:gardenlet:<managed seed>:bootstrap` (its bootstrap identity's right to
/// ask for the seed's certificate), `gardener.cloud:system:gardenlet:<managed seed>` (of earlier
/// versions, deleted), or Role(Binding)
/// `garden/gardener.cloud:system:gardenlet:<managed seed>:leader-election` (earlier, deleted).
pub fn rbac(g: &dyn SeedGraph, seed: &str, namespace: Option<&str>, name: &str) -> bool {
    let Some(rest) = name.strip_prefix(GARDENLET_ROLE_PREFIX) else { return false };
    let managed = match namespace {
        None | Some("") => Some(rest.strip_suffix(BOOTSTRAP_SUFFIX).unwrap_or(rest)),
        Some(GARDEN_NAMESPACE) => rest.strip_suffix(LEADER_ELECTION_SUFFIX),
        Some(_) => None,
    };
    managed.is_some_and(|ms| !ms.contains(':') && managed_seed(g, seed, GARDEN_NAMESPACE, ms))
}

/// BackupBucket `name`: the seed's own (`spec.seedName`).
pub fn backup_bucket(g: &dyn SeedGraph, seed: &str, name: &str) -> bool {
    g.backup_bucket(name).is_some_and(|b| b.spec.seed_name() == Some(seed))
}

/// BackupEntry `namespace/name`: kept by the seed (`spec.seedName`, or `status.seedName` while
/// it moves to another seed), or the entry of a shoot on the seed (`spec.shootRef`, in the
/// entry's namespace: the destination of a migration takes the entry over).
pub fn backup_entry(g: &dyn SeedGraph, seed: &str, namespace: &str, name: &str) -> bool {
    g.backup_entry(namespace, name).is_some_and(|e| {
        e.spec.seed_name() == Some(seed)
            || e.status.as_ref().and_then(|s| s.seed_name.as_deref()) == Some(seed)
            || e.spec.shoot_ref.as_ref().is_some_and(|r| shoot(g, seed, namespace, &r.name))
    })
}
