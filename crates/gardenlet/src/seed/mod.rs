//! The seed controller: registers this gardenlet's Seed in the garden, keeps its status
//! (capacity, allocatable, `GardenletReady`, `BackupBucketsReady`) current, and renews a
//! heartbeat Lease so the garden can tell a dead gardenlet from a quiet one. For a seed with a
//! backup configuration it keeps the seed's extension BackupBucket (named after the Seed's UID,
//! the bucket of every shoot's BackupEntry) in the seed cluster, and the garden's BackupBucket
//! of the same name that reports it ([`garden_bucket`]).

pub mod decide;
pub mod garden_bucket;

use crate::config::SeedConfig;
use api::common::Gardener;
use api::core::Seed;
use api::extensions::BackupBucket;
use api::helpers::extension_operation::check_ready;
use decide::{SeedFacts, desired_status};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Resource, ResourceExt};
use std::time::Duration;

/// Namespace in the garden holding one heartbeat Lease per seed, named like the seed.
pub const LEASE_NAMESPACE: &str = "gardener-system-seed-lease";
/// The label naming the seed on its BackupBucket.
const LABEL_SEED_NAME: &str = "seed.gardener.cloud/name";
const FIELD_MANAGER: &str = "gardenlet";

#[derive(Debug, thiserror::Error)]
pub enum SeedError {
    #[error("{what} (seed {seed})")]
    Kube {
        what: &'static str,
        seed: String,
        #[source]
        source: kube::Error,
    },
}

/// Registers and heartbeats one Seed.
#[derive(Clone)]
pub struct SeedController {
    garden: kube::Client,
    /// The seed cluster, for the backup bucket (absent: no bucket is written).
    seed: Option<kube::Client>,
    config: SeedConfig,
    heartbeat: Duration,
    gardener: Gardener,
}

impl std::fmt::Debug for SeedController {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SeedController").field("seed", &self.config.name).finish()
    }
}

impl SeedController {
    pub fn new(garden: kube::Client, config: SeedConfig, heartbeat: Duration, gardener: Gardener) -> Self {
        Self { garden, seed: None, config, heartbeat, gardener }
    }

    /// Keeps the seed's BackupBucket in `seed` when the Seed has a backup configuration.
    pub fn with_seed_cluster(mut self, seed: kube::Client) -> Self {
        self.seed = Some(seed);
        self
    }

    fn err(&self, what: &'static str) -> impl FnOnce(kube::Error) -> SeedError + '_ {
        move |source| SeedError::Kube { what, seed: self.config.name.clone(), source }
    }

    /// Applies the Seed object (labels and spec) with server-side apply.
    #[tracing::instrument(skip(self), fields(seed = %self.config.name))]
    pub async fn register(&self) -> Result<Seed, SeedError> {
        let seeds: Api<Seed> = Api::all(self.garden.clone());
        let mut seed = Seed::new(&self.config.name, self.config.spec.clone());
        seed.metadata.labels = (!self.config.labels.is_empty()).then(|| self.config.labels.clone());
        let params = PatchParams::apply(FIELD_MANAGER).force();
        seeds.patch(&self.config.name, &params, &Patch::Apply(&seed)).await.map_err(self.err("applying the Seed"))
    }

    /// Writes the status when it differs from what it should be. Returns whether it wrote.
    pub async fn sync_status(&self) -> Result<bool, SeedError> {
        self.sync().await.map(|(wrote, _)| wrote)
    }

    /// [`Self::sync_status`], and whether the seed's backup still needs a closer look (its
    /// bucket is not ready yet, or is being deleted with the Seed).
    async fn sync(&self) -> Result<(bool, bool), SeedError> {
        let seeds: Api<Seed> = Api::all(self.garden.clone());
        let seed = seeds.get(&self.config.name).await.map_err(self.err("reading the Seed"))?;
        let backup = self.backup_bucket(&seed).await?;
        let deleting_bucket =
            self.seed.is_some() && seed.spec.backup.is_some() && seed.metadata.deletion_timestamp.is_some();
        let backup_pending = deleting_bucket || backup.as_ref().is_some_and(|b| b.is_err());
        let facts = SeedFacts {
            generation: seed.metadata.generation,
            capacity_shoots: self.config.capacity_shoots,
            reserved_shoots: self.config.reserved_shoots,
            gardener: &self.gardener,
            backup,
        };
        let Some(status) = desired_status(seed.status.as_ref(), &facts, &Time(Timestamp::now())) else {
            return Ok((false, backup_pending));
        };
        let patch = serde_json::json!({ "status": status });
        seeds
            .patch_status(&self.config.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(self.err("writing the Seed status"))?;
        Ok((true, backup_pending))
    }

    /// Applies the seed's BackupBucket when it differs from what the Seed's backup section says
    /// and reports whether it is ready; `None` for a seed without backup (or without a seed
    /// cluster to write it to).
    async fn backup_bucket(&self, seed: &Seed) -> Result<Option<Result<(), String>>, SeedError> {
        if let (Some(client), Some(_), Some(uid)) = (&self.seed, &seed.metadata.deletion_timestamp, &seed.metadata.uid)
        {
            // The Seed goes (its shoots are gone first): so does its bucket, through its
            // extension, which stays installed while the bucket exists.
            let buckets: Api<BackupBucket> = Api::all(client.clone());
            match buckets.delete(uid, &Default::default()).await {
                Ok(_) => tracing::info!(bucket = %uid, "deleting the seed's BackupBucket with the Seed"),
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => return Err(self.err("deleting the seed's BackupBucket")(e)),
            }
            garden_bucket::delete(&self.garden, uid).await.map_err(self.err("deleting the garden BackupBucket"))?;
            return Ok(None);
        }
        let (Some(client), Some(desired)) = (&self.seed, crate::shoot::objects::extensions::backup_bucket(seed)) else {
            return Ok(None);
        };
        if desired.spec.secret_ref.name.is_empty() {
            return Ok(Some(Err(format!("Seed {}: spec.backup.secretRef is required", self.config.name))));
        }
        let buckets: Api<BackupBucket> = Api::all(client.clone());
        let name = desired.name_any();
        let current = buckets.get_opt(&name).await.map_err(self.err("reading the seed's BackupBucket"))?;
        let same = current.as_ref().is_some_and(|c| {
            serde_json::to_value(&c.spec).ok() == serde_json::to_value(&desired.spec).ok()
                && c.labels().get(LABEL_SEED_NAME) == desired.labels().get(LABEL_SEED_NAME)
        });
        let current = match current {
            Some(c) if same => c,
            _ => {
                tracing::info!(bucket = %name, "applying the seed's BackupBucket");
                buckets
                    .patch(&name, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(&desired))
                    .await
                    .map_err(self.err("applying the seed's BackupBucket"))?
            }
        };
        garden_bucket::sync(&self.garden, seed, &current).await.map_err(self.err("writing the garden BackupBucket"))?;
        let ready = check_ready(&current.metadata, current.status.as_ref().map(|s| &s.default))
            .map_err(|why| format!("BackupBucket {name} {why}"));
        Ok(Some(ready))
    }

    /// Renews (or creates) the heartbeat Lease, owned by `seed` (the registered Seed) so that
    /// the garden's garbage collector removes it with the Seed, as Gardener's does.
    pub async fn renew_lease(&self, seed: &Seed) -> Result<(), SeedError> {
        let leases: Api<Lease> = Api::namespaced(self.garden.clone(), LEASE_NAMESPACE);
        let duration = lease_duration_seconds(self.heartbeat);
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(self.config.name.clone()),
                owner_references: seed.controller_owner_ref(&()).map(|mut owner| {
                    // Deleting the Seed waits for nothing of the Lease (and gardenlet needs no
                    // permission on seeds/finalizers, which blocking would take).
                    owner.block_owner_deletion = None;
                    vec![owner]
                }),
                ..Default::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some(self.config.name.clone()),
                lease_duration_seconds: Some(duration),
                renew_time: Some(MicroTime(Timestamp::now())),
                ..Default::default()
            }),
        };
        let params = PatchParams::apply(FIELD_MANAGER).force();
        match leases.patch(&self.config.name, &params, &Patch::Apply(&lease)).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => {
                ensure_namespace(&self.garden, LEASE_NAMESPACE)
                    .await
                    .map_err(self.err("creating the lease namespace"))?;
                leases
                    .patch(&self.config.name, &params, &Patch::Apply(&lease))
                    .await
                    .map_err(self.err("renewing the Lease"))?;
                Ok(())
            }
            Err(e) => Err(self.err("renewing the Lease")(e)),
        }
    }

    /// Registers the Seed, then keeps status and Lease current until `shutdown` resolves.
    /// Errors of one round are logged and retried on the next.
    pub async fn run(self, shutdown: impl std::future::Future<Output = ()>) {
        tokio::pin!(shutdown);
        let mut registered: Option<Seed> = None;
        loop {
            let mut backup_pending = false;
            if registered.is_none() {
                match self.register().await {
                    Ok(seed) => registered = Some(seed),
                    Err(e) => {
                        tracing::warn!(error = %runtime::events::error_chain(&e), "seed registration failed; retrying")
                    }
                }
            }
            // The Lease first, and `GardenletReady=True` only after a renewal that worked: the
            // controller-manager judges liveness by the Lease, and a gardenlet that reports
            // Ready without renewing would flip the condition back and forth with it.
            if let Some(seed) = &registered {
                match self.renew_lease(seed).await {
                    Ok(()) => match self.sync().await {
                        Ok((_, pending)) => backup_pending = pending,
                        Err(e) => {
                            tracing::warn!(error = %runtime::events::error_chain(&e), "seed status update failed")
                        }
                    },
                    Err(e) => {
                        tracing::warn!(error = %runtime::events::error_chain(&e), "seed heartbeat failed; GardenletReady is not renewed either")
                    }
                }
            }
            // Until the backup bucket is ready (or gone with the Seed), look again soon: the
            // scheduler places no shoot on the seed before, and a deleted seed's extensions stay
            // installed while the bucket exists (a bounded wait either way).
            let pause = if backup_pending { Duration::from_secs(2).min(self.heartbeat) } else { self.heartbeat };
            tokio::select! {
                _ = &mut shutdown => return,
                _ = tokio::time::sleep(pause) => {}
            }
        }
    }
}

/// Three heartbeats, rounded up to whole seconds (the API requires at least 1).
fn lease_duration_seconds(heartbeat: Duration) -> i32 {
    let millis = heartbeat.as_millis().saturating_mul(3);
    i32::try_from(millis.div_ceil(1000).max(1)).unwrap_or(i32::MAX)
}

async fn ensure_namespace(client: &kube::Client, name: &str) -> Result<(), kube::Error> {
    let api: Api<Namespace> = Api::all(client.clone());
    let ns =
        Namespace { metadata: ObjectMeta { name: Some(name.to_string()), ..Default::default() }, ..Default::default() };
    match api.create(&PostParams::default(), &ns).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_duration_is_three_heartbeats_rounded_up() {
        assert_eq!(lease_duration_seconds(Duration::from_secs(30)), 90);
        assert_eq!(lease_duration_seconds(Duration::from_millis(300)), 1);
        assert_eq!(lease_duration_seconds(Duration::from_millis(1100)), 4);
        assert_eq!(lease_duration_seconds(Duration::ZERO), 1);
    }
}
