//! Where a shoot's etcd backups live and what the garden knows about them.
//!
//! * The **location** is the shoot's extension BackupEntry: a provider with a directory store
//!   (provider-local) publishes the entry's directory as `status.providerStatus.hostPath`.
//! * The **record** of a migration's final snapshot is an entry of the ShootState's `gardener`
//!   section (`etcd-final-snapshot`): bucket, entry, file, size, SHA-256 and revision. The
//!   destination seed keeps using that bucket (so the entry's data stays in one place), checks
//!   the file against the record before etcd restores from it, and marks it restored after.

use api::AnyJson;
use api::core::ShootState;
use api::core::shootstate::GardenerResourceData;
use api::extensions::BackupEntry;
use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};
use std::collections::BTreeMap;

/// Name and type of the ShootState entry recording the final snapshot.
pub const RECORD_NAME: &str = "etcd-final-snapshot";
pub const RECORD_TYPE: &str = "etcd-snapshot";

/// The final snapshot of a migration, as recorded in the ShootState.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotRecord {
    pub bucket_name: String,
    pub entry_name: String,
    pub file: String,
    pub size: String,
    pub sha256: String,
    pub revision: String,
    /// "true" once a destination restored etcd from it (the file was renamed then).
    #[serde(default)]
    pub restored: String,
}

impl SnapshotRecord {
    pub fn is_restored(&self) -> bool {
        self.restored == "true"
    }
}

/// The record in a ShootState, if any (a malformed entry counts as none).
pub fn record(state: Option<&ShootState>) -> Option<SnapshotRecord> {
    let entry = state?.spec.gardener.iter().find(|g| g.name == RECORD_NAME && g.type_ == RECORD_TYPE)?;
    serde_json::from_value(entry.data.0.clone()).ok()
}

/// The `gardener` section with the record set (replacing an older one).
pub fn with_record(current: &[GardenerResourceData], record: &SnapshotRecord) -> Vec<GardenerResourceData> {
    let mut out: Vec<GardenerResourceData> = current.iter().filter(|g| g.name != RECORD_NAME).cloned().collect();
    out.push(GardenerResourceData {
        name: RECORD_NAME.to_string(),
        type_: RECORD_TYPE.to_string(),
        data: AnyJson(serde_json::to_value(record).unwrap_or_default()),
        labels: BTreeMap::new(),
    });
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    #[error("{what} of shoot {shoot}")]
    Kube {
        what: &'static str,
        shoot: String,
        #[source]
        source: kube::Error,
    },
    #[error("the ShootState {namespace}/{name} does not exist; nothing to record the final snapshot in")]
    NoShootState { namespace: String, name: String },
}

/// Writes the record into the ShootState (optimistically locked on its resourceVersion).
pub async fn write_record(
    garden: &kube::Client,
    namespace: &str,
    name: &str,
    record: &SnapshotRecord,
) -> Result<(), BackupError> {
    let api: Api<ShootState> = Api::namespaced(garden.clone(), namespace);
    let err = |what| move |source| BackupError::Kube { what, shoot: name.to_string(), source };
    // Other writers (the secrets, the extension-state sync) change the ShootState too: on a
    // conflict, read again and retry.
    for attempt in 1..=5u64 {
        let state = api
            .get_opt(name)
            .await
            .map_err(err("reading the ShootState"))?
            .ok_or_else(|| BackupError::NoShootState { namespace: namespace.into(), name: name.into() })?;
        let gardener = with_record(&state.spec.gardener, record);
        if gardener == state.spec.gardener {
            return Ok(());
        }
        let patch = serde_json::json!({
            "metadata": { "resourceVersion": state.resource_version() },
            "spec": { "gardener": gardener },
        });
        match api.patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(s)) if s.code == 409 && attempt < 5 => {
                tokio::time::sleep(std::time::Duration::from_millis(50 * attempt)).await;
            }
            Err(e) => return Err(err("recording the final etcd snapshot in the ShootState")(e)),
        }
    }
    Ok(())
}

/// The directory of a BackupEntry's data on the seed host, if its provider publishes one.
pub fn host_path(entry: &BackupEntry) -> Option<String> {
    let status = entry.status.as_ref()?.default.provider_status.as_ref()?;
    status.0.get("hostPath")?.as_str().filter(|p| !p.is_empty()).map(str::to_string)
}

/// Reads the shoot's extension BackupEntry from the seed (`None` when it does not exist).
pub async fn entry(seed: &kube::Client, name: &str, shoot: &str) -> Result<Option<BackupEntry>, BackupError> {
    Api::<BackupEntry>::all(seed.clone()).get_opt(name).await.map_err(|source| BackupError::Kube {
        what: "reading the BackupEntry",
        shoot: shoot.to_string(),
        source,
    })
}

/// A short name for logs and errors.
pub fn describe(entry: &BackupEntry) -> String {
    format!("BackupEntry {} (bucket {})", entry.name_any(), entry.spec.bucket_name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> SnapshotRecord {
        SnapshotRecord {
            bucket_name: "b".into(),
            entry_name: "e".into(),
            file: "final-snapshot.db".into(),
            size: "20512".into(),
            sha256: "ab".into(),
            revision: "7".into(),
            restored: String::new(),
        }
    }

    #[test]
    fn the_record_round_trips_and_replaces_an_older_one_keeping_other_entries() {
        let other = GardenerResourceData {
            name: "ca".into(),
            type_: "secret".into(),
            data: AnyJson(serde_json::json!({"ca.crt": "x"})),
            labels: BTreeMap::new(),
        };
        let first = with_record(std::slice::from_ref(&other), &record());
        let mut newer = record();
        newer.revision = "9".into();
        let second = with_record(&first, &newer);
        assert_eq!(second.len(), 2);
        assert!(second.contains(&other));
        let state = ShootState::new("s", api::core::ShootStateSpec { gardener: second, ..Default::default() });
        assert_eq!(super::record(Some(&state)), Some(newer));
        assert!(!record().is_restored());
    }
}
