//! `BackupBucket` (cluster-scoped, one per seed's backup configuration) and `BackupEntry`
//! (one per shoot, a directory in a bucket): the garden-side objects gardenlet mirrors into the
//! seed as the extension kinds of the same names.
//!
//! The GEP-15 example spells the seed of both as `spec.seed`; the reference API as
//! `spec.seedName`. Both are accepted; [`BackupBucketSpec::seed_name`] and
//! [`BackupEntrySpec::seed_name`] read either.

use crate::common::{LastError, LastOperation, ObjectReference, SecretReference};
use crate::opaque::Opaque;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[serde_with::skip_serializing_none]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "core.gardener.cloud",
    version = "v1beta1",
    kind = "BackupBucket",
    plural = "backupbuckets",
    doc = "An object store bucket for the backups of the shoots of a seed.",
    status = "BackupBucketStatus",
    shortname = "bbc",
    derive = "PartialEq",
    derive = "Default",
    printcolumn(name = "Provider", type_ = "string", json_path = ".spec.provider.type"),
    printcolumn(name = "Region", type_ = "string", json_path = ".spec.provider.region"),
    printcolumn(name = "Seed", type_ = "string", json_path = ".spec.seedName"),
    printcolumn(name = "Status", type_ = "string", json_path = ".status.lastOperation.state"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct BackupBucketSpec {
    /// Provider type and region of the object store. Immutable.
    pub provider: BackupBucketProvider,
    /// Provider-specific configuration of the bucket.
    pub provider_config: Option<Opaque>,
    /// The Secret with the object store credentials.
    pub secret_ref: SecretReference,
    /// The resource (Secret or WorkloadIdentity) with the object store credentials.
    pub credentials_ref: Option<ObjectReference>,
    /// The seed whose gardenlet manages the bucket. Immutable.
    pub seed_name: Option<String>,
    /// Legacy (GEP-15 example) spelling of `seedName`.
    pub seed: Option<String>,
}

impl BackupBucketSpec {
    /// The seed managing the bucket, whichever spelling was used.
    pub fn seed_name(&self) -> Option<&str> {
        self.seed_name.as_deref().or(self.seed.as_deref())
    }
}

/// Provider type and region of an object store.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackupBucketProvider {
    /// The provider type.
    #[serde(rename = "type")]
    pub type_: String,
    /// The region of the bucket.
    pub region: String,
}

/// The observed state of a BackupBucket.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackupBucketStatus {
    /// Provider-specific status of the bucket.
    pub provider_status: Option<Opaque>,
    /// The last operation on the bucket.
    pub last_operation: Option<LastOperation>,
    /// The last error of an operation on the bucket.
    pub last_error: Option<LastError>,
    /// The generation of the spec last acted on.
    pub observed_generation: Option<i64>,
    /// A Secret generated for the bucket, with bucket-specific credentials.
    pub generated_secret_ref: Option<SecretReference>,
}

#[serde_with::skip_serializing_none]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "core.gardener.cloud",
    version = "v1beta1",
    kind = "BackupEntry",
    plural = "backupentries",
    doc = "The backups of one shoot: a directory in a BackupBucket.",
    namespaced,
    status = "BackupEntryStatus",
    shortname = "bec",
    derive = "PartialEq",
    derive = "Default",
    printcolumn(name = "Bucket", type_ = "string", json_path = ".spec.bucketName"),
    printcolumn(name = "Seed", type_ = "string", json_path = ".spec.seedName"),
    printcolumn(name = "Status", type_ = "string", json_path = ".status.lastOperation.state"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct BackupEntrySpec {
    /// The BackupBucket holding the entry.
    pub bucket_name: String,
    /// The seed whose gardenlet manages the entry.
    pub seed_name: Option<String>,
    /// Legacy (GEP-15 example) spelling of `seedName`.
    pub seed: Option<String>,
    /// The Shoot the entry belongs to. Immutable.
    pub shoot_ref: Option<ObjectReference>,
}

impl BackupEntrySpec {
    /// The seed managing the entry, whichever spelling was used.
    pub fn seed_name(&self) -> Option<&str> {
        self.seed_name.as_deref().or(self.seed.as_deref())
    }
}

/// The observed state of a BackupEntry.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackupEntryStatus {
    /// The last operation on the entry.
    pub last_operation: Option<LastOperation>,
    /// The last error of an operation on the entry.
    pub last_error: Option<LastError>,
    /// The generation of the spec last acted on.
    pub observed_generation: Option<i64>,
    /// The seed the entry was last reconciled on; used when it moves between seeds.
    pub seed_name: Option<String>,
    /// When the migration to another seed started.
    pub migration_start_time: Option<Time>,
}
