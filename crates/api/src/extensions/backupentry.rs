//! `BackupEntry` (cluster-scoped): one shoot's etcd backups, a directory in a backup bucket.

use super::common::{DefaultSpec, DefaultStatus};
use crate::common::SecretReference;
use crate::opaque::Opaque;
use k8s_openapi::ClusterResourceScope;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Desired state of a backup entry.
#[serde_with::skip_serializing_none]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "extensions.gardener.cloud",
    version = "v1alpha1",
    kind = "BackupEntry",
    plural = "backupentries",
    status = "BackupEntryStatus",
    shortname = "be",
    category = "extensions",
    derive = "PartialEq",
    printcolumn(name = "Type", type_ = "string", json_path = ".spec.type", description = "The provider type"),
    printcolumn(name = "Region", type_ = "string", json_path = ".spec.region"),
    printcolumn(name = "Bucket", type_ = "string", json_path = ".spec.bucketName"),
    printcolumn(name = "Status", type_ = "string", json_path = ".status.lastOperation.state"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct BackupEntrySpec {
    #[serde(flatten)]
    pub default: DefaultSpec,
    /// The `providerStatus` of the BackupBucket the entry lives in.
    pub backup_bucket_provider_status: Option<Opaque>,
    pub region: String,
    /// Credentials for the object store.
    pub secret_ref: SecretReference,
    /// The name of the bucket the entry lives in.
    pub bucket_name: String,
}

/// Observed state of a BackupEntry.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackupEntryStatus {
    #[serde(flatten)]
    pub default: DefaultStatus,
}

crate::impl_extension_kind!(BackupEntry, BackupEntryStatus, ClusterResourceScope);
