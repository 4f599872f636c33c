//! SeedRestriction (Gardener's admission plugin of that name): a seed identity may create only
//! objects that belong to its seed. The seed authorizer ([`crate::seedauth`]) allows `create`
//! without looking (the object does not exist when the API server authorizes), so this rule
//! judges the object at admission: ShootStates and a shoot's InternalSecret, CA bundle
//! ConfigMap and SSH key pair Secrets only for shoots on the seed; Bastions only for them;
//! Leases only the seed's; the Seed only itself; CertificateSigningRequests only for the seed's
//! user; BackupBuckets and BackupEntries only of the seed; ServiceAccounts and RBAC objects only
//! for ManagedSeeds the seed hosts; Namespaces only the heartbeat Leases'. Requests of other
//! users are not judged. Pure: a function of the object and a [`SeedGraph`].

use crate::field::{ErrorList, FieldError, Path};
use crate::seedauth::SeedGraph;
use crate::seedauth::relations::{self as rel};
use api::helpers::seed_identity;
use serde_json::Value;

/// The resources (plural names) whose creation by a seed is judged, with their API group.
pub const RESOURCES: &[(&str, &str)] = &[
    ("core.gardener.cloud", "shootstates"),
    ("core.gardener.cloud", "internalsecrets"),
    ("core.gardener.cloud", "seeds"),
    ("core.gardener.cloud", "backupbuckets"),
    ("core.gardener.cloud", "backupentries"),
    ("operations.gardener.cloud", "bastions"),
    ("", "configmaps"),
    ("", "secrets"),
    ("", "namespaces"),
    ("", "serviceaccounts"),
    ("coordination.k8s.io", "leases"),
    ("certificates.k8s.io", "certificatesigningrequests"),
    ("rbac.authorization.k8s.io", "clusterroles"),
    ("rbac.authorization.k8s.io", "clusterrolebindings"),
    ("rbac.authorization.k8s.io", "roles"),
    ("rbac.authorization.k8s.io", "rolebindings"),
];

/// Why seed `seed` may not create `object` of `resource` (empty: it may).
pub fn admit(g: &dyn SeedGraph, seed: &str, resource: &str, object: &Value) -> ErrorList {
    let text = |pointer: &str| object.pointer(pointer).and_then(Value::as_str).unwrap_or_default();
    let (ns, name) = (text("/metadata/namespace"), text("/metadata/name"));
    let name_path = || Path::new("metadata").child("name");
    let refuse = |path: Path, detail: String| ErrorList(vec![FieldError::forbidden(path, detail)]);
    let shoot_on_seed = |shoot: &str| rel::shoot(g, seed, ns, shoot);
    let belongs = |shoot: Option<&str>, what: &str| match shoot {
        Some(s) if shoot_on_seed(s) => ErrorList::default(),
        Some(s) => refuse(name_path(), format!("{what} of shoot {ns}/{s}, which is not on seed {seed}")),
        None => refuse(name_path(), format!("not the name of {what} of a shoot on seed {seed}")),
    };
    match resource {
        "shootstates" => belongs(Some(name).filter(|n| !n.is_empty()), "the ShootState"),
        "internalsecrets" => belongs(rel::shoot_named(name, &[rel::CA_CLIENT_SUFFIX]), "the client CA InternalSecret"),
        "configmaps" => belongs(rel::shoot_named(name, &[rel::CA_CLUSTER_SUFFIX]), "the CA bundle ConfigMap"),
        "secrets" => belongs(rel::shoot_named(name, &rel::SSH_KEYPAIR_SUFFIXES), "an SSH key pair Secret"),
        "bastions" => {
            let shoot = text("/spec/shootRef/name");
            if shoot_on_seed(shoot) {
                ErrorList::default()
            } else {
                let path = Path::new("spec").child("shootRef").child("name");
                refuse(path, format!("shoot {ns}/{shoot} is not on seed {seed}"))
            }
        }
        "leases" if rel::lease(seed, ns, name) => ErrorList::default(),
        "leases" => refuse(
            name_path(),
            format!(
                "seed {seed} may create only the Leases {}/{seed} and {}/gardenlet-{seed}-leader-election",
                rel::LEASE_NAMESPACE,
                rel::GARDEN_NAMESPACE
            ),
        ),
        "seeds" if name == seed => ErrorList::default(),
        "seeds" => refuse(name_path(), format!("seed {seed} may create only the Seed {seed}")),
        "namespaces" if name == rel::LEASE_NAMESPACE => ErrorList::default(),
        "namespaces" => {
            refuse(name_path(), format!("seed {seed} may create only the Namespace {}", rel::LEASE_NAMESPACE))
        }
        "backupbuckets" | "backupentries" => {
            let owner = object.pointer("/spec/seedName").or_else(|| object.pointer("/spec/seed"));
            match owner.and_then(Value::as_str) {
                Some(s) if s == seed => ErrorList::default(),
                other => refuse(
                    Path::new("spec").child("seedName"),
                    format!("{other:?} is not seed {seed}: a seed creates only its own backups"),
                ),
            }
        }
        "serviceaccounts" if rel::service_account(g, seed, ns, name) => ErrorList::default(),
        "clusterroles" | "clusterrolebindings" | "roles" | "rolebindings" if rel::rbac(g, seed, Some(ns), name) => {
            ErrorList::default()
        }
        "serviceaccounts" | "clusterroles" | "clusterrolebindings" | "roles" | "rolebindings" => {
            refuse(name_path(), format!("not the gardenlet identity of a ManagedSeed whose shoot is on seed {seed}"))
        }
        "certificatesigningrequests" => csr(seed, text("/spec/request")),
        _ => ErrorList::default(),
    }
}

/// A CSR of a seed must ask for that seed's identity: subject CN `gardener.cloud:system:seed:<seed>`.
fn csr(seed: &str, request: &str) -> ErrorList {
    let path = || Path::new("spec").child("request");
    let want = seed_identity::user(seed);
    match requested_common_names(request) {
        Ok(names) if names.len() == 1 && names[0] == want => ErrorList::default(),
        Ok(names) => ErrorList(vec![FieldError::forbidden(
            path(),
            format!("the requested common name must be {want:?} (seed {seed}), not {names:?}"),
        )]),
        Err(why) => ErrorList(vec![FieldError::forbidden(path(), format!("not a certificate request: {why}"))]),
    }
}

/// The subject common names of the PEM (base64 in the object) certificate request.
fn requested_common_names(request: &str) -> Result<Vec<String>, String> {
    use base64::Engine;
    use x509_parser::prelude::FromDer;
    let pem = base64::engine::general_purpose::STANDARD.decode(request).map_err(|e| e.to_string())?;
    let (_, pem) = x509_parser::pem::parse_x509_pem(&pem).map_err(|e| e.to_string())?;
    let (_, csr) = x509_parser::certification_request::X509CertificationRequest::from_der(&pem.contents)
        .map_err(|e| e.to_string())?;
    let subject = &csr.certification_request_info.subject;
    Ok(subject.iter_common_name().map(|cn| cn.as_str().unwrap_or_default().to_string()).collect())
}

/// What a seed's refused create says before the field errors: which seed, and which object.
pub fn summary(seed: &str, resource: &str, object: &Value) -> String {
    let text = |pointer: &str| object.pointer(pointer).and_then(Value::as_str).unwrap_or_default();
    let (ns, name) = (text("/metadata/namespace"), text("/metadata/name"));
    let object = if ns.is_empty() { name.to_string() } else { format!("{ns}/{name}") };
    format!("seed {seed} may not create {resource} {object}")
}

/// The seed a request's user is, when it is a seed identity.
pub fn seed_of(user: &crate::identity::UserInfo) -> Option<&str> {
    seed_identity::seed_of(&user.username, &user.groups)
}

#[cfg(test)]
mod tests;
