//! The seed authorizer's decision (Gardener's SeedAuthorizer): for a request of a seed
//! identity, allow what that seed's gardenlet needs on the objects related to the seed, and
//! have no opinion on everything else. It never denies: with the API server's authorizers
//! `Node,RBAC,Webhook`, no opinion leaves the request to the others, and the seeds' group holds
//! (almost) no RBAC, so it is refused. Pure: a function of the request and a [`SeedGraph`].

use super::graph::SeedGraph;
use super::relations::{self as rel, Access};
use api::helpers::seed_identity;

/// What a SubjectAccessReview asks, as the authorizer sees it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Attributes {
    pub user: String,
    pub groups: Vec<String>,
    pub verb: String,
    /// API group (`""` for core).
    pub group: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
    /// A request for a path (`/healthz`), not for a resource.
    pub non_resource: bool,
}

/// The authorizer's answer: allow, or no opinion with the reason (never a denial).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    Allow,
    NoOpinion(String),
}

/// Which relation decides for a resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Seed,
    Shoot,
    ShootState,
    InternalSecret,
    ConfigMap,
    Secret,
    SecretBinding,
    CredentialsBinding,
    ControllerInstallation,
    NamespacedCloudProfile,
    Project,
    Namespace,
    ManagedSeed,
    Bastion,
    BackupBucket,
    BackupEntry,
    Lease,
    ServiceAccount,
    Rbac,
    /// Readable by every seed (no relation), writable by none.
    Public,
    /// Events and CertificateSigningRequests: only the always-allowed verbs.
    Unrelated,
}

/// The verbs a seed may use on a resource: `always` without looking at the object (the
/// informers' list/watch, and create, which SeedRestriction judges as the object does not exist
/// yet), `read` and `write` on an object with that [`Access`], and on the subresources listed
/// the verbs given with them (always needing [`Access::Write`], or for `seedclient` the seed's
/// own name).
#[derive(Clone, Copy, Debug)]
struct Rule {
    kind: Kind,
    always: &'static [&'static str],
    read: &'static [&'static str],
    write: &'static [&'static str],
    subresources: &'static [(&'static str, &'static [&'static str])],
}

const STATUS: (&str, &[&str]) = ("status", &["get", "patch", "update"]);
const CORE: &str = "core.gardener.cloud";
const RBAC: &str = "rbac.authorization.k8s.io";

const fn rule(
    kind: Kind,
    always: &'static [&'static str],
    read: &'static [&'static str],
    write: &'static [&'static str],
) -> Rule {
    Rule { kind, always, read, write, subresources: &[] }
}

/// The rule of `group`/`resource`, when the authorizer handles it.
fn rule_for(group: &str, resource: &str) -> Option<Rule> {
    use Kind::*;
    let r = match (group, resource) {
        // Seeds are listed and watched by every gardenlet anyway, so reading one is no secret.
        (CORE, "seeds") => Rule {
            subresources: &[STATUS],
            ..rule(Seed, &["get", "list", "watch", "create"], &[], &["patch", "update", "delete"])
        },
        // Get as list and watch, which every gardenlet's shoot cache needs: a shoot's spec is no
        // secret from a seed that can list it (Gardener allows the same). A ManagedSeed's
        // controller on every seed reads the shoot to see whether the ManagedSeed is its own.
        (CORE, "shoots") => {
            Rule { subresources: &[STATUS], ..rule(Shoot, &["get", "list", "watch"], &[], &["patch", "update"]) }
        }
        (CORE, "shootstates") => rule(ShootState, &["create"], &[], &["get", "patch", "update", "delete"]),
        (CORE, "internalsecrets") => rule(InternalSecret, &["create"], &[], &["get", "patch", "update"]),
        ("", "configmaps") => rule(ConfigMap, &["create"], &["get"], &["patch", "update"]),
        ("", "secrets") => rule(Secret, &["create"], &["get"], &["patch", "update", "delete"]),
        (CORE, "secretbindings") => rule(SecretBinding, &[], &["get"], &[]),
        ("security.gardener.cloud", "credentialsbindings") => rule(CredentialsBinding, &[], &["get"], &[]),
        (CORE, "controllerinstallations") => Rule {
            subresources: &[STATUS],
            ..rule(ControllerInstallation, &["list", "watch"], &[], &["get", "patch", "update"])
        },
        (CORE, "controllerregistrations" | "controllerdeployments" | "cloudprofiles" | "exposureclasses") => {
            rule(Public, &["get", "list", "watch"], &[], &[])
        }
        (CORE, "namespacedcloudprofiles") => rule(NamespacedCloudProfile, &[], &["get"], &[]),
        (CORE, "projects") => rule(Project, &[], &["get"], &[]),
        // Create: only the heartbeat Leases' namespace, by SeedRestriction.
        ("", "namespaces") => rule(Namespace, &["create"], &["get"], &[]),
        ("seedmanagement.gardener.cloud", "managedseeds") => {
            Rule { subresources: &[STATUS], ..rule(ManagedSeed, &["list", "watch"], &[], &["get", "patch", "update"]) }
        }
        ("operations.gardener.cloud", "bastions") => Rule {
            subresources: &[STATUS],
            ..rule(Bastion, &["list", "watch", "create"], &[], &["get", "patch", "update"])
        },
        // Create: only with the seed's own name in spec.seedName, by SeedRestriction.
        (CORE, "backupbuckets") => Rule {
            subresources: &[STATUS],
            ..rule(BackupBucket, &["list", "watch", "create"], &[], &["get", "patch", "update", "delete"])
        },
        (CORE, "backupentries") => Rule {
            subresources: &[STATUS],
            ..rule(BackupEntry, &["list", "watch", "create"], &[], &["get", "patch", "update", "delete"])
        },
        ("coordination.k8s.io", "leases") => rule(Lease, &["create"], &[], &["get", "patch", "update"]),
        ("" | "events.k8s.io", "events") => rule(Unrelated, &["create", "patch"], &[], &[]),
        // The CSR approver judges the content (the requested identity must be the seed's).
        ("certificates.k8s.io", "certificatesigningrequests") => Rule {
            subresources: &[("seedclient", &["create"])],
            ..rule(Unrelated, &["create", "get", "list", "watch"], &[], &[])
        },
        ("", "serviceaccounts") => Rule {
            subresources: &[("token", &["create"])],
            ..rule(ServiceAccount, &["create"], &[], &["get", "patch", "update", "delete"])
        },
        // escalate and bind: the API server asks for them when a role is written or bound with
        // permissions the writer does not hold through RBAC (a managed gardenlet's rules).
        (RBAC, "clusterroles" | "clusterrolebindings" | "roles" | "rolebindings") => {
            rule(Rbac, &["create"], &[], &["get", "patch", "update", "delete", "escalate", "bind"])
        }
        _ => return None,
    };
    Some(r)
}

/// The decision for `attrs`: no opinion for users that are not seed identities.
pub fn decide(g: &dyn SeedGraph, attrs: &Attributes) -> Decision {
    let Some(seed) = seed_identity::seed_of(&attrs.user, &attrs.groups) else {
        return Decision::NoOpinion(String::new());
    };
    let no = |why: String| Decision::NoOpinion(format!("seed {seed}: {why}"));
    if attrs.non_resource {
        return no("non-resource requests are left to RBAC".into());
    }
    let what =
        if attrs.group.is_empty() { attrs.resource.clone() } else { format!("{}.{}", attrs.resource, attrs.group) };
    let Some(rule) = rule_for(&attrs.group, &attrs.resource) else {
        return no(format!("{what} is not a resource the seed authorizer allows"));
    };
    let verb = attrs.verb.as_str();
    let needed = if attrs.subresource.is_empty() {
        if rule.always.contains(&verb) {
            return Decision::Allow;
        }
        if rule.write.contains(&verb) {
            Access::Write
        } else if rule.read.contains(&verb) {
            Access::Read
        } else {
            return no(format!("verb {verb} is not allowed on {what}"));
        }
    } else {
        match rule.subresources.iter().find(|(s, _)| *s == attrs.subresource) {
            Some((_, verbs)) if verbs.contains(&verb) => Access::Write,
            Some(_) => return no(format!("verb {verb} is not allowed on {what}/{}", attrs.subresource)),
            None => return no(format!("subresource {} of {what} is not allowed", attrs.subresource)),
        }
    };
    if attrs.name.is_empty() {
        return no(format!("{verb} on {what} needs an object name"));
    }
    let granted = access(g, seed, rule.kind, attrs);
    if granted >= needed {
        return Decision::Allow;
    }
    let object =
        if attrs.namespace.is_empty() { attrs.name.clone() } else { format!("{}/{}", attrs.namespace, attrs.name) };
    match granted {
        Access::Read => no(format!("{what} {object} is related to the seed for reading only, not for {verb}")),
        _ => no(format!("no relation found between the seed and {what} {object}")),
    }
}

/// What the seed may do with the object `attrs` names.
fn access(g: &dyn SeedGraph, seed: &str, kind: Kind, attrs: &Attributes) -> Access {
    let (ns, name) = (attrs.namespace.as_str(), attrs.name.as_str());
    let write = |related: bool| if related { Access::Write } else { Access::None };
    let read = |related: bool| if related { Access::Read } else { Access::None };
    match kind {
        Kind::Seed => write(rel::seed_object(g, seed, name)),
        Kind::Shoot => write(rel::shoot(g, seed, ns, name)),
        // A ShootState is named as its Shoot; one whose Shoot is gone may be deleted (nothing
        // can be restored from it), as Gardener allows deleting what is not in its graph.
        Kind::ShootState => {
            write(rel::shoot(g, seed, ns, name) || (attrs.verb == "delete" && g.shoot(ns, name).is_none()))
        }
        Kind::InternalSecret => {
            write(rel::shoot_named(name, &[rel::CA_CLIENT_SUFFIX]).is_some_and(|s| rel::shoot(g, seed, ns, s)))
        }
        Kind::ConfigMap => rel::config_map(g, seed, ns, name),
        Kind::Secret => rel::secret(g, seed, ns, name),
        Kind::SecretBinding => read(rel::secret_binding(g, seed, ns, name)),
        Kind::CredentialsBinding => read(rel::credentials_binding(g, seed, ns, name)),
        Kind::ControllerInstallation => write(rel::controller_installation(g, seed, name)),
        Kind::NamespacedCloudProfile => read(rel::namespaced_cloud_profile(g, seed, ns, name)),
        Kind::Project => read(rel::project(g, seed, name)),
        Kind::Namespace => read(rel::namespace(g, seed, name)),
        Kind::ManagedSeed => write(rel::managed_seed(g, seed, ns, name)),
        Kind::Bastion => write(rel::bastion(g, seed, ns, name)),
        Kind::BackupBucket => write(rel::backup_bucket(g, seed, name)),
        Kind::BackupEntry => write(rel::backup_entry(g, seed, ns, name)),
        Kind::Lease => write(rel::lease(seed, ns, name)),
        Kind::ServiceAccount => write(rel::service_account(g, seed, ns, name)),
        Kind::Rbac => write(rel::rbac(g, seed, Some(ns), name)),
        // A seed asks for a client certificate of its own identity only.
        Kind::Unrelated if attrs.subresource == "seedclient" => write(name == seed),
        Kind::Public | Kind::Unrelated => Access::None,
    }
}
