//! Pod security in the garden: the Kubernetes Pod Security Standards (levels `privileged`,
//! `baseline`, `restricted`, as the upstream PodSecurity admission of 1.22+ checks them at
//! version `latest`), as pure functions. The garden's kube-apiserver is 1.20, which has no
//! PodSecurity admission of its own; the webhook server applies these to Pods instead
//! ([`crate::review`] looks the namespace's level up, [`crate::server::register`] routes Pods
//! here, except in namespaces labelled `privileged`).
//!
//! [`level_of`] decides a namespace's level from its label `pod-security.kubernetes.io/enforce`;
//! [`check`] lists what a pod spec violates at a level, each [`Violation`] naming the field.
//! The checks are split by level: [`baseline`] (no host namespaces, privileged containers,
//! capabilities beyond the default set, hostPath volumes, host ports, AppArmor, SELinux,
//! procMount, seccomp `Unconfined`, unsafe sysctls) and [`restricted`] (on top: volume types,
//! privilege escalation, non-root, seccomp profile, dropped capabilities).

mod baseline;
mod restricted;

use crate::field::{ErrorList, FieldError, Path};
use k8s_openapi::api::core::v1::{ContainerPort, PodSpec, SecurityContext};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// The namespace label that sets the level, as upstream PodSecurity admission reads it.
pub const ENFORCE_LABEL: &str = "pod-security.kubernetes.io/enforce";

/// The level of a namespace without [`ENFORCE_LABEL`] unless the server's configuration says
/// otherwise (`rules.defaultPodSecurityLevel`).
pub const DEFAULT_LEVEL: Level = Level::Baseline;

/// A Pod Security Standards level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Unrestricted.
    Privileged,
    /// Prevents known privilege escalations: what a default pod may do.
    Baseline,
    /// Hardened: baseline plus non-root, no privilege escalation, seccomp, dropped capabilities.
    Restricted,
}

impl Level {
    pub const ALL: [Level; 3] = [Level::Privileged, Level::Baseline, Level::Restricted];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Privileged => "privileged",
            Self::Baseline => "baseline",
            Self::Restricted => "restricted",
        }
    }

    /// The level named `value` exactly as the label spells it.
    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|l| l.as_str() == value)
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a namespace has the level it has (said in a refusal, so that its reader knows what to
/// change).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The namespace's label names it.
    Label,
    /// The namespace has no label: the configured default.
    Default,
    /// The label's value is not a level: enforced as `restricted` (fail safe).
    UnknownValue(String),
    /// The namespace is not in the server's cache yet (it was created a moment ago): enforced
    /// as `restricted` until it is.
    NotCached,
}

/// The level enforced in a namespace and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Enforcement {
    pub level: Level,
    pub origin: Origin,
}

/// The level of a namespace with `labels` (`None`: the namespace is not known yet).
pub fn level_of(labels: Option<&BTreeMap<String, String>>, default: Level) -> Enforcement {
    let Some(labels) = labels else { return Enforcement { level: Level::Restricted, origin: Origin::NotCached } };
    match labels.get(ENFORCE_LABEL) {
        None => Enforcement { level: default, origin: Origin::Default },
        Some(value) => match Level::parse(value) {
            Some(level) => Enforcement { level, origin: Origin::Label },
            None => Enforcement { level: Level::Restricted, origin: Origin::UnknownValue(value.clone()) },
        },
    }
}

/// One violated rule: the check as upstream names it (`privileged`, `hostPath volumes`), the
/// field that violates it, and what is wrong in upstream's words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub check: &'static str,
    pub path: Path,
    pub detail: String,
}

impl Violation {
    fn new(check: &'static str, path: Path, detail: impl Into<String>) -> Self {
        Self { check, path, detail: detail.into() }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} ({})", self.path, self.check, self.detail)
    }
}

/// What `spec` (with the pod's `meta`, whose annotations carry the AppArmor and legacy seccomp
/// profiles) violates at `level`; empty when the pod is allowed.
pub fn check(level: Level, spec: &PodSpec, meta: &ObjectMeta) -> Vec<Violation> {
    let mut out = Vec::new();
    if level >= Level::Baseline {
        baseline::check(spec, meta, level, &mut out);
    }
    if level >= Level::Restricted {
        restricted::check(spec, &mut out);
    }
    out
}

/// The violations as field errors (`<path>: Forbidden: <check> (<detail>)`).
pub fn to_errors(violations: &[Violation]) -> ErrorList {
    ErrorList(
        violations
            .iter()
            .map(|v| FieldError::forbidden(v.path.clone(), format!("{} ({})", v.check, v.detail)))
            .collect(),
    )
}

/// The sentence before the field errors of a refusal: the pod, the namespace, the level as
/// upstream writes it (`"baseline:latest"`) and, unless the label set it, where the level came
/// from.
pub fn summary(pod: &str, namespace: &str, enforcement: &Enforcement) -> String {
    let level = enforcement.level;
    let why = match &enforcement.origin {
        Origin::Label => String::new(),
        Origin::Default => format!(" (namespace has no label {ENFORCE_LABEL}: default level {level})"),
        Origin::UnknownValue(v) => format!(
            " (namespace label {ENFORCE_LABEL}={:?} is not a level (privileged, baseline, restricted): enforced as restricted)",
            v.chars().take(64).collect::<String>()
        ),
        Origin::NotCached => {
            " (namespace not yet in the admission server's cache: enforced as restricted until it is; retry)"
                .to_string()
        }
    };
    format!("pod {pod:?} in namespace {namespace:?} violates PodSecurity \"{level}:latest\"{why}")
}

/// A container of any of the three lists, as the checks see it.
pub(crate) struct ContainerView<'a> {
    /// `spec.containers[0]`, `spec.initContainers[1]`, `spec.ephemeralContainers[2]`.
    pub path: Path,
    pub name: &'a str,
    pub security_context: Option<&'a SecurityContext>,
    pub ports: &'a [ContainerPort],
}

impl ContainerView<'_> {
    /// `spec.containers[0].securityContext.<field>`.
    pub fn field(&self, field: &str) -> Path {
        field.split('.').fold(self.path.child("securityContext"), |p, f| p.child(f))
    }
}

/// Every container, init container and ephemeral container of `spec`, in that order.
pub(crate) fn containers(spec: &PodSpec) -> Vec<ContainerView<'_>> {
    let root = Path::new("spec");
    let mut out = Vec::new();
    for (i, c) in spec.containers.iter().enumerate() {
        out.push(ContainerView {
            path: root.child("containers").index(i),
            name: &c.name,
            security_context: c.security_context.as_ref(),
            ports: c.ports.as_deref().unwrap_or_default(),
        });
    }
    for (i, c) in spec.init_containers.iter().flatten().enumerate() {
        out.push(ContainerView {
            path: root.child("initContainers").index(i),
            name: &c.name,
            security_context: c.security_context.as_ref(),
            ports: c.ports.as_deref().unwrap_or_default(),
        });
    }
    for (i, c) in spec.ephemeral_containers.iter().flatten().enumerate() {
        out.push(ContainerView {
            path: root.child("ephemeralContainers").index(i),
            name: &c.name,
            security_context: c.security_context.as_ref(),
            ports: c.ports.as_deref().unwrap_or_default(),
        });
    }
    out
}

/// `spec.securityContext.<field>`.
pub(crate) fn pod_field(field: &str) -> Path {
    field.split('.').fold(Path::new("spec").child("securityContext"), |p, f| p.child(f))
}

/// Whether the pod declares itself a Windows pod (`spec.os.name: windows`); upstream exempts
/// those from the Linux-only restricted checks.
pub(crate) fn is_windows(spec: &PodSpec) -> bool {
    spec.os.as_ref().is_some_and(|os| os.name == "windows")
}

#[cfg(test)]
mod tests;
