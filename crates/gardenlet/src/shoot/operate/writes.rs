//! The writers of a Shoot's status and metadata; the owner-guarded one for writes a migration or a
//! takeover could race.

use crate::shoot::controller::{ShootController, ShootError};
use api::core::Shoot;
use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::json;

impl ShootController {
    pub(crate) fn shoots(&self, namespace: &str) -> Api<Shoot> {
        Api::namespaced(self.garden.clone(), namespace)
    }

    pub(crate) async fn patch_status(&self, shoot: &Shoot, status: serde_json::Value) -> Result<(), ShootError> {
        let ns = shoot.namespace().unwrap_or_default();
        self.shoots(&ns)
            .patch_status(&shoot.name_any(), &PatchParams::default(), &Patch::Merge(&json!({ "status": status })))
            .await
            .map_err(|source| ShootError::Kube { what: "writing the status", shoot: shoot.name_any(), source })?;
        Ok(())
    }

    /// Writes the status only while this seed owns the shoot (`status.seedName`), guarded by
    /// the resourceVersion it checked: a source seed that lost the shoot to a forced takeover
    /// must not overwrite the new owner's status. `status` builds the write from the latest
    /// Shoot (`None`: write nothing). `Ok(false)` when nothing was written.
    pub(crate) async fn patch_status_as_owner(
        &self,
        shoot: &Shoot,
        status: impl Fn(&Shoot) -> Option<serde_json::Value>,
    ) -> Result<bool, ShootError> {
        let ns = shoot.namespace().unwrap_or_default();
        let err = |what| move |source| ShootError::Kube { what, shoot: shoot.name_any(), source };
        for attempt in 1..=3 {
            // First from the watch cache: a write is conditional on the resourceVersion it was
            // decided on, so a stale copy costs a conflict and a fresh read. Deciding *not* to
            // write is only ever done on a fresh read.
            let cached = (attempt == 1)
                .then(|| self.caches.shoots().get(&kube::runtime::reflector::ObjectRef::from_obj(shoot)))
                .flatten();
            let from_cache = cached.as_deref().and_then(|latest| self.owner_status(latest, &status));
            let (latest_version, status) = match from_cache {
                Some(decided) => decided,
                None => {
                    let Some(latest) =
                        self.shoots(&ns).get_opt(&shoot.name_any()).await.map_err(err("reading the shoot"))?
                    else {
                        return Ok(false);
                    };
                    if latest.status.as_ref().and_then(|s| s.seed_name.as_deref())
                        != Some(self.config.seed.name.as_str())
                    {
                        tracing::warn!("another seed owns the shoot now; this seed writes nothing");
                        return Ok(false);
                    }
                    let Some(status) = status(&latest) else { return Ok(false) };
                    (latest.resource_version(), status)
                }
            };
            let patch = json!({ "metadata": { "resourceVersion": latest_version }, "status": status });
            match self.shoots(&ns).patch_status(&shoot.name_any(), &PatchParams::default(), &Patch::Merge(&patch)).await
            {
                Ok(_) => return Ok(true),
                Err(kube::Error::Api(s)) if s.code == 409 && attempt < 3 => continue,
                Err(e) => return Err(err("writing the status")(e)),
            }
        }
        Ok(false)
    }

    /// The write `status` asks for on `latest`, with its resourceVersion, when this seed owns
    /// the shoot according to `latest`; `None` otherwise (then a fresh read decides).
    pub(crate) fn owner_status(
        &self,
        latest: &Shoot,
        status: &impl Fn(&Shoot) -> Option<serde_json::Value>,
    ) -> Option<(Option<String>, serde_json::Value)> {
        let owner = latest.status.as_ref().and_then(|s| s.seed_name.as_deref());
        if owner != Some(self.config.seed.name.as_str()) {
            return None;
        }
        status(latest).map(|s| (latest.resource_version(), s))
    }

    pub(crate) async fn patch_meta(
        &self,
        shoot: &Shoot,
        patch: serde_json::Value,
        what: &'static str,
    ) -> Result<(), ShootError> {
        let ns = shoot.namespace().unwrap_or_default();
        self.shoots(&ns)
            .patch(&shoot.name_any(), &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|source| ShootError::Kube { what, shoot: shoot.name_any(), source })?;
        Ok(())
    }
}
