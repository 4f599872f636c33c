//! Copies every extension object's `status.state` and `status.resources` into the ShootState
//! of its shoot in the garden, next to gardenlet's own secrets, as they change (only on
//! change), so that a shoot's control plane can be restored on another seed. Size-aware: a
//! state that would push the ShootState past a safe size is refused with an error naming the
//! offending object, and nothing is written.

use api::core::ShootState;
use api::core::shootstate::ExtensionResourceState;
use api::extensions::ExtensionKind;
use api::helpers::names::TechnicalId;
use futures::StreamExt;
use kube::api::{Patch, PatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Resource, ResourceExt};

/// etcd refuses requests above 1.5 MiB by default; stay well below so the gardenlet section
/// and the request envelope always fit.
pub const SAFE_SIZE_BYTES: usize = 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error(
        "{kind} {namespace}/{name}: its state would make ShootState {shootstate} {size} bytes, above the safe limit of {limit} bytes; the state was not copied"
    )]
    TooLarge { kind: String, namespace: String, name: String, shootstate: String, size: usize, limit: usize },
    #[error("{what} for {kind} {namespace}/{name}")]
    Kube {
        what: &'static str,
        kind: String,
        namespace: String,
        name: String,
        #[source]
        source: kube::Error,
    },
}

/// The ShootState entry of an extension object, or `None` when it has neither state nor
/// resources.
pub fn entry_of<K: ExtensionKind>(obj: &K) -> Option<ExtensionResourceState> {
    let status = obj.default_status()?;
    if status.state.is_none() && status.resources.is_empty() {
        return None;
    }
    let purpose = serde_json::to_value(obj).ok().and_then(|v| v["spec"]["purpose"].as_str().map(str::to_string));
    Some(ExtensionResourceState {
        kind: K::kind(&()).to_string(),
        name: Some(obj.name_any()),
        purpose,
        state: status.state.clone(),
        resources: status.resources.clone(),
    })
}

/// The `extensions` section with the entry for (kind, name) replaced, added or removed;
/// `None` when nothing changes.
pub fn merged(
    current: &[ExtensionResourceState],
    kind: &str,
    name: &str,
    entry: Option<ExtensionResourceState>,
) -> Option<Vec<ExtensionResourceState>> {
    let same = |e: &ExtensionResourceState| e.kind == kind && e.name.as_deref() == Some(name);
    let existing = current.iter().find(|e| same(e));
    if existing == entry.as_ref() {
        return None;
    }
    let mut out: Vec<ExtensionResourceState> = current.iter().filter(|e| !same(e)).cloned().collect();
    out.extend(entry);
    out.sort_by(|a, b| (&a.kind, &a.name).cmp(&(&b.kind, &b.name)));
    Some(out)
}

/// The size of the ShootState once `extensions` is set.
pub fn size_with(state: &ShootState, extensions: &[ExtensionResourceState]) -> usize {
    let mut candidate = state.clone();
    candidate.spec.extensions = extensions.to_vec();
    candidate.metadata.managed_fields = None;
    serde_json::to_vec(&candidate).map(|v| v.len()).unwrap_or(usize::MAX)
}

/// Syncs one extension object into its shoot's ShootState. Objects outside shoot namespaces,
/// or of shoots without a ShootState yet, are skipped. Returns whether it wrote.
pub async fn sync_object<K: ExtensionKind>(
    garden: &kube::Client,
    obj: &K,
    limit: usize,
    seed_name: &str,
) -> Result<bool, SyncError> {
    // Cluster-scoped kinds (BackupEntry) name their shoot by the technical-ID label.
    let namespace = obj
        .namespace()
        .unwrap_or_else(|| obj.labels().get(api::helpers::constants::LABEL_TECHNICAL_ID).cloned().unwrap_or_default());
    let Ok((_, project, shoot)) = TechnicalId::parse(&namespace) else { return Ok(false) };
    let kind = K::kind(&()).to_string();
    let name = obj.name_any();
    let err = |what: &'static str| {
        let (kind, namespace, name) = (kind.clone(), namespace.clone(), name.clone());
        move |source| SyncError::Kube { what, kind, namespace, name, source }
    };
    let garden_namespace = api::helpers::project_namespace(&project);
    let deleted = obj.meta().deletion_timestamp.is_some() && !migrated(obj);
    let entry = if deleted { None } else { entry_of(obj) };
    // An object without state that is not being deleted (one a restore just created and has
    // not given its state yet) must not erase the saved state.
    if entry.is_none() && !deleted {
        return Ok(false);
    }
    // Only the owner's objects speak for the shoot: after a takeover, what is left in the
    // old seed must not overwrite the new owner's states. The Shoot is read only when there is
    // something to write (most events are status updates that change no state).
    let shoots: Api<api::core::Shoot> = Api::namespaced(garden.clone(), &garden_namespace);
    let owning = || async {
        let shoot = shoots.get_opt(&shoot).await.map_err(err("reading the Shoot"))?;
        Ok::<_, SyncError>(shoot.filter(|s| {
            !s.status.as_ref().and_then(|st| st.seed_name.as_deref()).is_some_and(|o| !o.is_empty() && o != seed_name)
        }))
    };
    let states: Api<ShootState> = Api::namespaced(garden.clone(), &garden_namespace);
    let mut owner_checked = false;
    let state = match states.get_opt(&shoot).await.map_err(err("reading the ShootState"))? {
        Some(state) => state,
        // An extension can report state before gardenlet wrote the shoot's secrets (and so
        // created the ShootState): create it, or that state would wait for its next change.
        None if entry.is_some() => {
            let Some(owning) = owning().await? else { return Ok(false) };
            owner_checked = true;
            let mut fresh = ShootState::new(&shoot, Default::default());
            fresh.metadata.namespace = Some(garden_namespace.clone());
            fresh.metadata.owner_references = owning.controller_owner_ref(&()).map(|mut o| {
                o.controller = Some(false);
                o.block_owner_deletion = Some(false);
                vec![o]
            });
            match states.create(&Default::default(), &fresh).await {
                Ok(created) => created,
                // Created meanwhile by someone else: use theirs.
                Err(kube::Error::Api(s)) if s.code == 409 => {
                    states.get(&shoot).await.map_err(err("reading the ShootState"))?
                }
                Err(e) => return Err(err("creating the ShootState")(e)),
            }
        }
        None => return Ok(false),
    };
    let Some(extensions) = merged(&state.spec.extensions, &kind, &name, entry) else { return Ok(false) };
    if !owner_checked && owning().await?.is_none() {
        return Ok(false);
    }
    let size = size_with(&state, &extensions);
    if size > limit {
        return Err(SyncError::TooLarge { kind, namespace, name, shootstate: shoot, size, limit });
    }
    let patch = serde_json::json!({
        "metadata": { "resourceVersion": state.resource_version() },
        "spec": { "extensions": extensions },
    });
    states
        .patch(&shoot, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(err("writing the ShootState"))?;
    Ok(true)
}

fn migrated<K: ExtensionKind>(obj: &K) -> bool {
    api::helpers::extension_operation::is_migrated(obj.default_status().and_then(|s| s.last_operation.as_ref()))
}

/// Watches every object of kind `K` in the seed and syncs it, until the task is dropped.
/// Conflicts and errors are logged and retried on the next event of the object.
pub async fn run<K: ExtensionKind>(seed: kube::Client, garden: kube::Client, limit: usize, seed_name: String) {
    let api: Api<K> = Api::all(seed);
    let mut stream =
        std::pin::pin!(watcher::watcher(api, watcher::Config::default()).default_backoff().touched_objects());
    while let Some(event) = stream.next().await {
        let Ok(obj) = event else { continue };
        // A conflict means another writer (the secrets, another kind's sync) got there
        // first: read again and retry a few times rather than wait for the object's next change.
        for attempt in 1..=5 {
            match sync_object(&garden, &obj, limit, &seed_name).await {
                Ok(_) => break,
                Err(SyncError::Kube { source: kube::Error::Api(s), .. }) if s.code == 409 && attempt < 5 => {
                    tokio::time::sleep(std::time::Duration::from_millis(50 * attempt)).await;
                }
                Err(e @ SyncError::TooLarge { .. }) => {
                    tracing::error!(error = %runtime::events::error_chain(&e), "state not copied to the ShootState");
                    break;
                }
                Err(e) => {
                    tracing::warn!(error = %runtime::events::error_chain(&e), "ShootState sync failed; retried on the next change");
                    break;
                }
            }
        }
    }
}

/// Runs the sync for every extension kind that carries shoot state.
pub async fn run_all(seed: kube::Client, garden: kube::Client, limit: usize, seed_name: String) {
    use api::extensions::*;
    tokio::join!(
        run::<Infrastructure>(seed.clone(), garden.clone(), limit, seed_name.clone()),
        run::<ControlPlane>(seed.clone(), garden.clone(), limit, seed_name.clone()),
        run::<Worker>(seed.clone(), garden.clone(), limit, seed_name.clone()),
        run::<Network>(seed.clone(), garden.clone(), limit, seed_name.clone()),
        run::<OperatingSystemConfig>(seed.clone(), garden.clone(), limit, seed_name.clone()),
        run::<DNSRecord>(seed.clone(), garden.clone(), limit, seed_name.clone()),
        run::<ContainerRuntime>(seed.clone(), garden.clone(), limit, seed_name.clone()),
        run::<Extension>(seed.clone(), garden.clone(), limit, seed_name.clone()),
        run::<Bastion>(seed.clone(), garden.clone(), limit, seed_name.clone()),
        run::<BackupEntry>(seed, garden, limit, seed_name.clone()),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(kind: &str, name: &str, state: serde_json::Value) -> ExtensionResourceState {
        ExtensionResourceState {
            kind: kind.into(),
            name: Some(name.into()),
            purpose: None,
            state: Some(api::Opaque(state)),
            resources: vec![],
        }
    }

    #[test]
    fn merge_adds_replaces_removes_and_detects_no_change() {
        let a = entry("Infrastructure", "demo", serde_json::json!({"v": 1}));
        let b = entry("Worker", "demo", serde_json::json!({"machines": []}));
        let added = merged(std::slice::from_ref(&b), "Infrastructure", "demo", Some(a.clone())).unwrap();
        assert_eq!(added, vec![a.clone(), b.clone()], "sorted by kind and name");
        assert_eq!(merged(&added, "Infrastructure", "demo", Some(a.clone())), None, "unchanged");
        let a2 = entry("Infrastructure", "demo", serde_json::json!({"v": 2}));
        assert_eq!(merged(&added, "Infrastructure", "demo", Some(a2.clone())).unwrap(), vec![a2, b.clone()]);
        assert_eq!(merged(&added, "Infrastructure", "demo", None).unwrap(), vec![b]);
        assert_eq!(merged(&[], "Worker", "x", None), None);
    }

    #[test]
    fn size_counts_the_new_section() {
        let state = ShootState::new("demo", Default::default());
        let small = size_with(&state, &[]);
        let big = size_with(&state, &[entry("Worker", "demo", serde_json::json!({"blob": "x".repeat(10_000)}))]);
        assert!(big > small + 10_000);
    }
}
