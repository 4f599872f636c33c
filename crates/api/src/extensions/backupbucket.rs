//! `BackupBucket` (cluster-scoped): a bucket in an object store that a seed's etcd backups are
//! written to.

use super::common::{DefaultSpec, DefaultStatus};
use crate::common::SecretReference;
use k8s_openapi::ClusterResourceScope;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Desired state of a backup bucket.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "extensions.gardener.cloud",
    version = "v1alpha1",
    kind = "BackupBucket",
    plural = "backupbuckets",
    status = "BackupBucketStatus",
    shortname = "bb",
    category = "extensions",
    derive = "PartialEq",
    printcolumn(name = "Type", type_ = "string", json_path = ".spec.type", description = "The provider type"),
    printcolumn(name = "Region", type_ = "string", json_path = ".spec.region"),
    printcolumn(name = "Status", type_ = "string", json_path = ".status.lastOperation.state"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct BackupBucketSpec {
    #[serde(flatten)]
    pub default: DefaultSpec,
    pub region: String,
    /// Credentials for the object store.
    pub secret_ref: SecretReference,
}

/// Observed state of a BackupBucket.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackupBucketStatus {
    #[serde(flatten)]
    pub default: DefaultStatus,
    /// A Secret the extension generated with credentials for the bucket, when it made one.
    pub generated_secret_ref: Option<SecretReference>,
}

crate::impl_extension_kind!(BackupBucket, BackupBucketStatus, ClusterResourceScope);
