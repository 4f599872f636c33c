//! Names derived from a project and a shoot: the technical ID `shoot--<project>--<name>`
//! (the shoot's namespace in its seed) and the project namespace `garden-<project>`.

use super::constants::{PROJECT_NAMESPACE_PREFIX, SHOOT_NAMESPACE_PREFIX};
use std::fmt;

/// Why a project or shoot name cannot form a technical ID.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error("{field} must not be empty")]
    Empty { field: &'static str },
    #[error(
        "{field} {value:?} is not a DNS label (lowercase letters, digits and '-', starting with a letter and not ending with '-')"
    )]
    NotDnsLabel { field: &'static str, value: String },
    #[error("{field} {value:?} must not contain \"--\", which separates the parts of a technical ID")]
    DoubleDash { field: &'static str, value: String },
    #[error("technical ID {value:?} is longer than 63 characters, the limit of a namespace name")]
    TooLong { value: String },
    #[error("{value:?} is not a technical ID of the form shoot--<project>--<name>")]
    NotTechnicalId { value: String },
}

/// A validated technical ID, `shoot--<project>--<name>`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TechnicalId(String);

impl TechnicalId {
    /// Builds the technical ID of shoot `name` in project `project`.
    pub fn new(project: &str, name: &str) -> Result<Self, NameError> {
        validate_part("project name", project)?;
        validate_part("shoot name", name)?;
        let id = format!("{SHOOT_NAMESPACE_PREFIX}--{project}--{name}");
        if id.len() > 63 {
            return Err(NameError::TooLong { value: id });
        }
        Ok(Self(id))
    }

    /// Parses a technical ID back into `(project, name)`.
    pub fn parse(value: &str) -> Result<(Self, String, String), NameError> {
        let not = || NameError::NotTechnicalId { value: value.to_string() };
        let rest = value.strip_prefix("shoot--").ok_or_else(not)?;
        let (project, name) = rest.split_once("--").ok_or_else(not)?;
        let id = Self::new(project, name).map_err(|_| not())?;
        Ok((id, project.to_string(), name.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TechnicalId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for TechnicalId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// The garden namespace of project `project`: `garden-<project>`, or `garden` for Gardener's
/// project `garden` (the inverse of [`project_of_namespace`]).
pub fn project_namespace(project: &str) -> String {
    if project == crate::helpers::constants::GARDEN_NAMESPACE {
        return project.to_string();
    }
    format!("{PROJECT_NAMESPACE_PREFIX}{project}")
}

/// The project a garden namespace belongs to, when it follows the `garden-<project>` convention,
/// or `garden` for the garden namespace itself (Gardener's project `garden`, which holds the
/// shoots of ManagedSeeds: their technical IDs are `shoot--garden--<name>`).
pub fn project_of_namespace(namespace: &str) -> Option<&str> {
    if namespace == crate::helpers::constants::GARDEN_NAMESPACE {
        return Some(namespace);
    }
    namespace.strip_prefix(PROJECT_NAMESPACE_PREFIX).filter(|p| !p.is_empty())
}

/// ConfigMap `<shoot>.ca-cluster` in the project namespace: `ca.crt`, the CA bundle clients of
/// the shoot's API server trust (public; project members read it).
pub fn shoot_ca_cluster(shoot: &str) -> String {
    format!("{shoot}.ca-cluster")
}

/// InternalSecret `<shoot>.ca-client` in the project namespace: `ca.crt` and `ca.key` of the CA
/// that signs the shoot's client certificates (only the controller-manager reads it).
pub fn shoot_ca_client(shoot: &str) -> String {
    format!("{shoot}.ca-client")
}

/// Secret `<shoot>.ssh-keypair` in the project namespace: `id_rsa` and `id_rsa.pub`, the key
/// pair the shoot's nodes accept for the user `gardener` (project members read it).
pub fn shoot_ssh_keypair(shoot: &str) -> String {
    format!("{shoot}.ssh-keypair")
}

/// Secret `<shoot>.ssh-keypair.old`: the previous key pair, still accepted until the next
/// key-pair rotation.
pub fn shoot_ssh_keypair_old(shoot: &str) -> String {
    format!("{shoot}.ssh-keypair.old")
}

fn validate_part(field: &'static str, value: &str) -> Result<(), NameError> {
    if value.is_empty() {
        return Err(NameError::Empty { field });
    }
    let ok = value.starts_with(|c: char| c.is_ascii_lowercase())
        && !value.ends_with('-')
        && value.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !ok {
        return Err(NameError::NotDnsLabel { field, value: value.to_string() });
    }
    if value.contains("--") {
        return Err(NameError::DoubleDash { field, value: value.to_string() });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn technical_id_and_project_namespace() {
        let id = TechnicalId::new("core", "crazy-botany").unwrap();
        assert_eq!(id.as_str(), "shoot--core--crazy-botany");
        assert_eq!(project_namespace("core"), "garden-core");
        // The project `garden` holds the shoots of ManagedSeeds in the namespace `garden`: their
        // ShootStates are there, not in `garden-garden`.
        assert_eq!(project_namespace("garden"), "garden");
        assert_eq!(project_of_namespace(&project_namespace("garden")), Some("garden"));
        assert_eq!(project_of_namespace("garden-core"), Some("core"));
        assert_eq!(project_of_namespace("garden"), Some("garden"), "the garden project (ManagedSeed shoots)");
        assert_eq!(project_of_namespace("garden-"), None);
    }

    #[test]
    fn parse_round_trips() {
        let (id, project, name) = TechnicalId::parse("shoot--dev--my-shoot").unwrap();
        assert_eq!((id.as_str(), project.as_str(), name.as_str()), ("shoot--dev--my-shoot", "dev", "my-shoot"));
        assert!(TechnicalId::parse("garden-dev").is_err());
        assert!(TechnicalId::parse("shoot--dev").is_err());
    }

    #[test]
    fn invalid_parts_are_named() {
        let cases = [
            ("", "s", "project name must not be empty"),
            ("Dev", "s", "project name \"Dev\" is not a DNS label"),
            ("dev", "a--b", "shoot name \"a--b\" must not contain"),
            ("dev", "s-", "shoot name \"s-\" is not a DNS label"),
            ("dev", "1s", "shoot name \"1s\" is not a DNS label"),
        ];
        for (project, name, want) in cases {
            let err = TechnicalId::new(project, name).unwrap_err().to_string();
            assert!(err.starts_with(want), "{project}/{name}: {err}");
        }
        let long = "a".repeat(60);
        assert!(matches!(TechnicalId::new("dev", &long), Err(NameError::TooLong { .. })));
    }
}
