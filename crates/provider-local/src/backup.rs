//! BackupBucket and BackupEntry: directories on the seed host.
//!
//! A bucket is `<backup-root>/<bucket name>/`; its generated Secret `generated-bucket-<name>`
//! (in the configured namespace, default `garden`) holds `bucketName` and `hostPath`. An entry
//! is `<backup-root>/<bucket>/<entry name>/`. Deleting an entry removes its directory once the
//! deletion grace period (counted from the entry's deletionTimestamp) has passed; until then
//! the delete asks to be called again.

use crate::common::{LABEL_MANAGED_BY, apply_params, delete_if_exists, describe, ensure_namespace};
use crate::error::Error;
use extension_sdk::api::common::SecretReference;
use extension_sdk::api::extensions::{BackupBucket, BackupEntry};
use extension_sdk::api::helpers::constants::LABEL_TECHNICAL_ID;
use extension_sdk::k8s_openapi::ByteString;
use extension_sdk::k8s_openapi::api::core::v1::Secret;
use extension_sdk::k8s_openapi::jiff::Timestamp;
use extension_sdk::kube::api::{ObjectMeta, Patch};
use extension_sdk::kube::{Api, Client, ResourceExt};
use extension_sdk::{Actuator, ActuatorError, ClusterContext, Outcome};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Default namespace of generated bucket Secrets.
pub const DEFAULT_SECRET_NAMESPACE: &str = "garden";
/// Label on a generated bucket Secret naming its bucket.
pub const LABEL_BUCKET: &str = "backup.provider-local.gardener.cloud/bucket";

/// Where backups live and how long a deleted entry is kept.
#[derive(Clone, Debug)]
pub struct BackupConfig {
    /// The root directory on the seed host (`--backup-root`).
    pub root: PathBuf,
    /// How long after a BackupEntry's deletion its directory is kept.
    pub deletion_grace: Duration,
    /// Namespace of the generated bucket Secrets.
    pub secret_namespace: String,
}

impl BackupConfig {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into(), deletion_grace: Duration::ZERO, secret_namespace: DEFAULT_SECRET_NAMESPACE.into() }
    }
}

/// One path segment (a bucket or entry name): no separators, not `.` or `..`, not empty.
pub fn path_segment(value: &str, object: &str, field: &str) -> Result<(), Error> {
    if value.is_empty() || value == "." || value == ".." || value.contains(['/', '\\', '\0']) {
        return Err(Error::config(object, field, format!("{value:?} is not a valid directory name")));
    }
    Ok(())
}

/// The directory of a bucket.
pub fn bucket_dir(root: &Path, bucket: &str) -> PathBuf {
    root.join(bucket)
}

/// The directory of an entry.
pub fn entry_dir(root: &Path, bucket: &str, entry: &str) -> PathBuf {
    root.join(bucket).join(entry)
}

/// The generated Secret of a bucket.
pub fn generated_secret_name(bucket: &str) -> String {
    format!("generated-bucket-{bucket}")
}

/// How much longer a deleted entry must be kept, if at all.
pub fn remaining_grace(deleted_at: Option<Timestamp>, now: Timestamp, grace: Duration) -> Option<Duration> {
    let deleted_at = deleted_at?;
    let elapsed = Duration::try_from(now.duration_since(deleted_at)).unwrap_or(Duration::ZERO);
    grace.checked_sub(elapsed).filter(|d| !d.is_zero())
}

async fn create_dir(path: &Path) -> Result<(), Error> {
    tokio::fs::create_dir_all(path).await.map_err(Error::io("creating directory", path))
}

async fn remove_dir(path: &Path) -> Result<(), Error> {
    match tokio::fs::remove_dir_all(path).await {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io("removing directory", path)(e)),
    }
}

/// The BackupBucket actuator.
#[derive(Clone)]
pub struct LocalBackupBucket {
    client: Client,
    config: BackupConfig,
}

crate::debug_without_client!(LocalBackupBucket);

impl LocalBackupBucket {
    pub fn new(client: Client, config: BackupConfig) -> Self {
        Self { client, config }
    }

    fn secrets(&self) -> Api<Secret> {
        Api::namespaced(self.client.clone(), &self.config.secret_namespace)
    }
}

impl Actuator<BackupBucket> for LocalBackupBucket {
    #[tracing::instrument(skip_all, fields(backupbucket = %bucket.name_any()))]
    async fn reconcile(
        &self,
        bucket: &BackupBucket,
        _: &ClusterContext,
    ) -> Result<Outcome<BackupBucket>, ActuatorError> {
        let name = bucket.name_any();
        path_segment(&name, &describe(bucket), "metadata.name")?;
        let dir = bucket_dir(&self.config.root, &name);
        create_dir(&dir).await?;

        let namespace = &self.config.secret_namespace;
        ensure_namespace(&self.client, namespace, BTreeMap::new(), "backupbucket").await?;
        let secret_name = generated_secret_name(&name);
        let host_path = dir.to_string_lossy().into_owned();
        let secret = Secret {
            metadata: ObjectMeta {
                name: Some(secret_name.clone()),
                namespace: Some(namespace.clone()),
                labels: Some(BTreeMap::from([
                    (LABEL_BUCKET.to_string(), name.clone()),
                    (LABEL_MANAGED_BY.to_string(), "provider-local-backupbucket".to_string()),
                ])),
                ..Default::default()
            },
            data: Some(BTreeMap::from([
                ("bucketName".to_string(), ByteString(name.clone().into_bytes())),
                ("hostPath".to_string(), ByteString(host_path.clone().into_bytes())),
            ])),
            type_: Some("Opaque".into()),
            ..Default::default()
        };
        self.secrets()
            .patch(&secret_name, &apply_params("backupbucket"), &Patch::Apply(&secret))
            .await
            .map_err(Error::kube(format!("applying Secret {namespace}/{secret_name}")))?;
        let secret_ref = SecretReference { name: secret_name, namespace: Some(namespace.clone()) };
        Ok(Outcome::done().with_provider_status(json!({"hostPath": host_path})).with_status(
            move |s: &mut extension_sdk::api::extensions::BackupBucketStatus| s.generated_secret_ref = Some(secret_ref),
        ))
    }

    #[tracing::instrument(skip_all, fields(backupbucket = %bucket.name_any()))]
    async fn delete(&self, bucket: &BackupBucket, _: &ClusterContext) -> Result<(), ActuatorError> {
        let name = bucket.name_any();
        path_segment(&name, &describe(bucket), "metadata.name")?;
        remove_dir(&bucket_dir(&self.config.root, &name)).await?;
        delete_if_exists(&self.secrets(), &generated_secret_name(&name), "Secret").await?;
        Ok(())
    }
}

/// The BackupEntry actuator.
#[derive(Clone, Debug)]
pub struct LocalBackupEntry {
    config: BackupConfig,
}

impl LocalBackupEntry {
    pub fn new(config: BackupConfig) -> Self {
        Self { config }
    }

    fn dir(&self, entry: &BackupEntry) -> Result<PathBuf, Error> {
        let object = describe(entry);
        path_segment(&entry.spec.bucket_name, &object, "spec.bucketName")?;
        let name = entry.name_any();
        path_segment(&name, &object, "metadata.name")?;
        Ok(entry_dir(&self.config.root, &entry.spec.bucket_name, &name))
    }
}

impl Actuator<BackupEntry> for LocalBackupEntry {
    #[tracing::instrument(skip_all, fields(backupentry = %entry.name_any()))]
    async fn reconcile(&self, entry: &BackupEntry, _: &ClusterContext) -> Result<Outcome<BackupEntry>, ActuatorError> {
        let dir = self.dir(entry)?;
        let bucket = bucket_dir(&self.config.root, &entry.spec.bucket_name);
        if !tokio::fs::try_exists(&bucket).await.unwrap_or(false) {
            return Err(Error::dependency(
                describe(entry),
                format!("the directory {} of bucket {} does not exist yet", bucket.display(), entry.spec.bucket_name),
            )
            .into());
        }
        create_dir(&dir).await?;
        let technical_id =
            extension_sdk::kinds::backup_entry_technical_id(&entry.name_any()).unwrap_or_default().to_string();
        Ok(Outcome::done()
            .with_provider_status(json!({"hostPath": dir.to_string_lossy(), LABEL_TECHNICAL_ID: technical_id})))
    }

    #[tracing::instrument(skip_all, fields(backupentry = %entry.name_any()))]
    async fn delete(&self, entry: &BackupEntry, _: &ClusterContext) -> Result<(), ActuatorError> {
        let dir = self.dir(entry)?;
        let deleted_at = entry.metadata.deletion_timestamp.as_ref().map(|t| t.0);
        if let Some(wait) = remaining_grace(deleted_at, Timestamp::now(), self.config.deletion_grace) {
            tracing::info!(?wait, "keeping the entry for its deletion grace period");
            return Err(ActuatorError::requeue_after(wait));
        }
        remove_dir(&dir).await?;
        Ok(())
    }

    // migrate: nothing of an entry lives in the seed's control plane; restore = reconcile.
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_segments_reject_traversal() {
        for bad in ["", ".", "..", "a/b", "..\\x", "a\0"] {
            assert!(path_segment(bad, "o", "f").is_err(), "{bad:?}");
        }
        assert!(path_segment("shoot--dev--a--1234", "o", "f").is_ok());
        assert_eq!(entry_dir(Path::new("/b"), "bk", "e"), PathBuf::from("/b/bk/e"));
    }

    #[test]
    fn grace_counts_from_the_deletion() {
        let t0: Timestamp = "2024-01-01T00:00:00Z".parse().unwrap_or_default();
        let later =
            |s: i64| t0.checked_add(extension_sdk::k8s_openapi::jiff::SignedDuration::from_secs(s)).unwrap_or(t0);
        let grace = Duration::from_secs(60);
        assert_eq!(remaining_grace(None, t0, grace), None);
        assert_eq!(remaining_grace(Some(t0), later(10), grace), Some(Duration::from_secs(50)));
        assert_eq!(remaining_grace(Some(t0), later(60), grace), None);
        assert_eq!(remaining_grace(Some(t0), later(120), grace), None);
        assert_eq!(remaining_grace(Some(t0), t0, Duration::ZERO), None);
    }
}
