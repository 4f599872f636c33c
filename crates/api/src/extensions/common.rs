//! The spec and status every extension kind shares (the extension contract), and the
//! [`ExtensionKind`] trait that lets generic code (the extension SDK, gardenlet) treat all
//! kinds alike.

use crate::common::{Condition, LastError, LastOperation, NamedResourceReference};
use crate::opaque::Opaque;
use kube::Resource;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// Which landscape an extension object belongs to; extension controllers are started for one
/// class and ignore the others. Absent means `shoot`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ExtensionClass {
    #[default]
    Shoot,
    Seed,
    Garden,
}

/// The fields every extension spec starts with. Flattened into each kind's spec.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DefaultSpec {
    /// Which extension controller handles this object (for example `local`).
    #[serde(rename = "type")]
    pub type_: String,
    pub class: Option<ExtensionClass>,
    pub provider_config: Option<Opaque>,
}

/// The fields every extension status carries. Flattened into each kind's status.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DefaultStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    pub last_error: Option<LastError>,
    pub last_operation: Option<LastOperation>,
    pub observed_generation: Option<i64>,
    pub provider_status: Option<Opaque>,
    /// Whatever the controller needs to rebuild itself on another seed.
    pub state: Option<Opaque>,
    /// Named references to resources that `state` points at.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<NamedResourceReference>,
}

/// Implemented by every extension kind, so that generic code can read the common spec and
/// status and build the kind's finalizer name.
pub trait ExtensionKind:
    Resource<DynamicType = (), Scope = Self::KindScope>
    + Clone
    + std::fmt::Debug
    + Serialize
    + DeserializeOwned
    + Send
    + Sync
    + 'static
{
    /// `NamespaceResourceScope` or `ClusterResourceScope`.
    type KindScope;
    /// The kind-specific status type.
    type Status: Clone + Default + std::fmt::Debug + Serialize + DeserializeOwned + Send + Sync;

    fn default_spec(&self) -> &DefaultSpec;
    fn ext_status(&self) -> Option<&Self::Status>;
    fn ext_status_mut(&mut self) -> &mut Option<Self::Status>;
    fn default_status_of(status: &Self::Status) -> &DefaultStatus;
    fn default_status_of_mut(status: &mut Self::Status) -> &mut DefaultStatus;

    /// The common part of the status, when the object has one.
    fn default_status(&self) -> Option<&DefaultStatus> {
        self.ext_status().map(Self::default_status_of)
    }

    /// The per-kind finalizer, `extensions.gardener.cloud/<kind-lowercase>`.
    fn finalizer() -> String {
        format!("extensions.gardener.cloud/{}", Self::kind(&()).to_lowercase())
    }
}

/// Implements [`ExtensionKind`] for a kind whose spec flattens `default: DefaultSpec` and whose
/// status flattens `default: DefaultStatus`.
#[macro_export]
macro_rules! impl_extension_kind {
    ($kind:ty, $status:ty, $scope:ty) => {
        impl $crate::extensions::common::ExtensionKind for $kind {
            type KindScope = $scope;
            type Status = $status;
            fn default_spec(&self) -> &$crate::extensions::common::DefaultSpec {
                &self.spec.default
            }
            fn ext_status(&self) -> Option<&$status> {
                self.status.as_ref()
            }
            fn ext_status_mut(&mut self) -> &mut Option<$status> {
                &mut self.status
            }
            fn default_status_of(status: &$status) -> &$crate::extensions::common::DefaultStatus {
                &status.default
            }
            fn default_status_of_mut(status: &mut $status) -> &mut $crate::extensions::common::DefaultStatus {
                &mut status.default
            }
        }
    };
}
