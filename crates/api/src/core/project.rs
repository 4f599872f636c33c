//! `Project`: a team's workspace in the garden. Each project owns one namespace (`garden-<name>`)
//! that holds its shoots, secret bindings and quotas; members get roles in it.

use super::shared::Toleration;
use crate::common::{Condition, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[serde_with::skip_serializing_none]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "core.gardener.cloud",
    version = "v1beta1",
    kind = "Project",
    plural = "projects",
    doc = "A team's workspace: one namespace in the garden holding its shoots, plus its members and their roles.",
    status = "ProjectStatus",
    category = "gardener",
    derive = "PartialEq",
    derive = "Default",
    printcolumn(name = "Namespace", type_ = "string", json_path = ".spec.namespace"),
    printcolumn(name = "Status", type_ = "string", json_path = ".status.phase"),
    printcolumn(name = "Owner", type_ = "string", json_path = ".spec.owner.name"),
    printcolumn(name = "Creator", type_ = "string", json_path = ".spec.createdBy.name"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct ProjectSpec {
    /// Who created the project. Immutable.
    pub created_by: Option<Subject>,
    /// What the project is used for, for humans.
    pub description: Option<String>,
    /// Who owns the project.
    pub owner: Option<Subject>,
    /// The project's purpose, for humans.
    pub purpose: Option<String>,
    /// The users, groups and service accounts that have roles in the project.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<ProjectMember>,
    /// The project namespace; absent lets the system choose `garden-<name>`. Immutable.
    pub namespace: Option<String>,
    /// Tolerations for seed taints that the project's shoots get or may use.
    pub tolerations: Option<ProjectTolerations>,
    /// Resources whose deletion needs a second person's approval.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dual_approval_for_deletion: Vec<DualApprovalForDeletion>,
}

/// A member of a project: an RBAC subject with roles.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProjectMember {
    #[serde(flatten)]
    pub subject: Subject,
    /// The member's main role (`admin`, `viewer`, `uam`, `serviceaccountmanager`, `owner`, or
    /// `extension:<name>`).
    pub role: String,
    /// Further roles of the member.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roles: Vec<String>,
}

impl ProjectMember {
    /// Every role of the member, the main one first.
    pub fn all_roles(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.role.as_str()).chain(self.roles.iter().map(String::as_str))
    }
}

/// Tolerations for seed taints in a project.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProjectTolerations {
    /// Tolerations added to every shoot of the project.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub defaults: Vec<Toleration>,
    /// Tolerations shoots of the project are allowed to use.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub whitelist: Vec<Toleration>,
}

/// Dual-approval configuration for deleting some resources of the project.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DualApprovalForDeletion {
    /// The resource this applies to (for example `shoots`).
    pub resource: String,
    /// Which objects of the resource it applies to.
    pub selector: LabelSelector,
    /// Whether deletions by service accounts need approval too (default true).
    pub include_service_accounts: Option<bool>,
}

/// The lifecycle phase of a project.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum ProjectPhase {
    Pending,
    Ready,
    Terminating,
    Failed,
}

/// The observed state of a project.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProjectStatus {
    /// The generation of the spec last acted on.
    pub observed_generation: Option<i64>,
    /// The lifecycle phase.
    pub phase: Option<ProjectPhase>,
    /// Since when the project has been found unused.
    pub stale_since_timestamp: Option<Time>,
    /// When the stale project will be deleted automatically.
    pub stale_auto_delete_timestamp: Option<Time>,
    /// The last activity in the project.
    pub last_activity_timestamp: Option<Time>,
    /// Observations of the project's state.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}
