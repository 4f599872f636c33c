//! The garden's BackupBucket of this seed (GEP-2): named after the Seed's UID like the
//! extension bucket it describes, `spec.seedName` this seed, owned by the Seed (the garden's
//! garbage collector removes it with the Seed); its status mirrors the extension bucket's.

use api::core::backup::BackupBucketProvider;
use api::core::{BackupBucket, BackupBucketSpec, BackupBucketStatus, Seed};
use api::extensions::BackupBucket as ExtensionBackupBucket;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Resource, ResourceExt};

/// The garden BackupBucket of `seed`, when the Seed has a backup configuration and a UID.
pub fn desired(seed: &Seed) -> Option<BackupBucket> {
    let backup = seed.spec.backup.as_ref()?;
    let type_ = backup.provider_type()?.to_string();
    let name = seed.metadata.uid.clone()?;
    let mut bucket = BackupBucket::new(
        &name,
        BackupBucketSpec {
            provider: BackupBucketProvider {
                type_,
                region: backup.region.clone().unwrap_or_else(|| seed.spec.provider.region.clone()),
            },
            provider_config: backup.provider_config.clone(),
            secret_ref: backup.secret_ref.clone().unwrap_or_default(),
            credentials_ref: backup.credentials_ref.clone(),
            seed_name: seed.metadata.name.clone(),
            seed: None,
        },
    );
    bucket.metadata.owner_references =
        seed.controller_owner_ref(&()).map(|owner| vec![OwnerReference { block_owner_deletion: None, ..owner }]);
    Some(bucket)
}

/// The garden bucket's status from the extension bucket `ext`.
pub fn status_from(bucket: &BackupBucket, ext: &ExtensionBackupBucket) -> BackupBucketStatus {
    let ext_status = ext.status.as_ref().map(|s| &s.default);
    BackupBucketStatus {
        provider_status: ext_status.and_then(|s| s.provider_status.clone()),
        last_operation: ext_status.and_then(|s| s.last_operation.clone()),
        last_error: ext_status.and_then(|s| s.last_error.clone()),
        observed_generation: bucket.metadata.generation,
        generated_secret_ref: bucket.status.as_ref().and_then(|s| s.generated_secret_ref.clone()),
    }
}

/// Creates or updates the garden bucket of `seed` and mirrors `ext`'s status into it; writes
/// only what changed.
///
/// Read first (one request per heartbeat once it exists). Through the seed authorizer, a bucket
/// that does not exist yet is refused (403) rather than not found, since only an existing bucket
/// names its seed: either answer leads to the creation. The status of a bucket created in this
/// round is written in the next (the authorizer's cache learns of the bucket from its watch).
pub async fn sync(garden: &kube::Client, seed: &Seed, ext: &ExtensionBackupBucket) -> Result<(), kube::Error> {
    let Some(desired) = desired(seed) else { return Ok(()) };
    let api: Api<BackupBucket> = Api::all(garden.clone());
    let name = desired.name_any();
    let mut current = match api.get(&name).await {
        Ok(current) => current,
        Err(kube::Error::Api(s)) if s.code == 404 || s.code == 403 => {
            tracing::info!(bucket = %name, "creating the garden BackupBucket");
            api.create(&PostParams::default(), &desired).await?;
            return Ok(());
        }
        Err(e) => return Err(e),
    };
    if current.spec != desired.spec {
        tracing::info!(bucket = %name, "updating the garden BackupBucket");
        let patch =
            serde_json::json!({ "spec": desired.spec, "metadata": {"resourceVersion": current.resource_version()} });
        current = api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await?;
    }
    let status = status_from(&current, ext);
    if current.status.as_ref() != Some(&status) {
        let patch = serde_json::json!({ "status": status });
        api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch)).await?;
    }
    Ok(())
}

/// Deletes the garden bucket named `uid` (the Seed goes). A refusal counts as gone: the seed
/// authorizer refuses what it relates to no seed, and a bucket that does not exist relates to
/// none (the garden's garbage collector removes the bucket with the Seed in any case).
pub async fn delete(garden: &kube::Client, uid: &str) -> Result<(), kube::Error> {
    match Api::<BackupBucket>::all(garden.clone()).delete(uid, &Default::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 || s.code == 403 => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

    use super::*;

    #[test]
    fn the_garden_bucket_describes_the_seeds_backup_and_belongs_to_the_seed() {
        let seed: Seed = serde_json::from_value(serde_json::json!({
            "apiVersion": "core.gardener.cloud/v1beta1", "kind": "Seed",
            "metadata": {"name": "local", "uid": "uid-1"},
            "spec": {
                "provider": {"type": "local", "region": "r1"},
                "networks": {"pods": "10.1.0.0/16", "services": "10.2.0.0/16"},
                "backup": {"provider": "local", "secretRef": {"name": "backup-local", "namespace": "garden"}},
            },
        }))
        .unwrap();
        let b = desired(&seed).unwrap();
        assert_eq!(b.name_any(), "uid-1");
        assert_eq!((b.spec.provider.type_.as_str(), b.spec.provider.region.as_str()), ("local", "r1"));
        assert_eq!(b.spec.seed_name(), Some("local"));
        assert_eq!(b.spec.secret_ref.name, "backup-local");
        assert_eq!(b.metadata.owner_references.as_ref().unwrap()[0].kind, "Seed");
        let mut without = seed.clone();
        without.spec.backup = None;
        assert!(desired(&without).is_none(), "no backup, no bucket");
    }
}
