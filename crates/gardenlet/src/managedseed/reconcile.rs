//! One ManagedSeed: the I/O around [`super::decide`] and [`super::manifests`].
//!
//! Reconcile (the shoot runs on this seed): finalizer; `ShootReconciled`; the managed
//! gardenlet's configuration; its bootstrap identity in the garden (ServiceAccount, RBAC for
//! its seed's CSR only; what earlier versions granted is deleted) and a short-lived token
//! ([`super::token`], renewed by a reconcile queued for the renewal time); the
//! objects in the shoot (server-side apply, written only when they differ from what is there);
//! `SeedRegistered` once the Seed is `GardenletReady`.
//!
//! Delete: wait while shoots use the seed; put a finalizer on the Seed and delete it (the
//! controller-manager then deletes the seed's ControllerInstallations and the managed gardenlet
//! uninstalls them); wait until none is left; remove gardenlet from the shoot and its identity
//! from the garden; release the Seed and the ManagedSeed.
//!
//! Watches bring shoot and Seed changes; what no watch reports (objects inside the shoot going
//! away, shoots elsewhere that still use the seed) is
//! looked at again after `ctx.poll` (5 s in the binary; six times that for shoots that use the seed).

use super::Context;
use super::decide::{self, Observed};
use super::manifests::{self, ShootInputs};
use super::token;
use api::core::{ControllerInstallation, Seed, Shoot};
use api::helpers::constants::FINALIZER_GARDENER;
use api::seedmanagement::{ManagedSeed, ManagedSeedStatus};
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams, PostParams,
};
use kube::runtime::controller::Action;
use kube::{Api, ResourceExt};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

const FIELD_MANAGER: &str = "gardenlet-managedseed";
/// The finalizer the ManagedSeed controller keeps on the Seed it deletes, until the seed's
/// extensions are uninstalled and gardenlet is gone.
pub const SEED_FINALIZER: &str = "seedmanagement.gardener.cloud/managedseed";

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("ManagedSeed {managed_seed}: {what}")]
    Kube {
        managed_seed: String,
        what: String,
        #[source]
        source: kube::Error,
    },
    #[error("ManagedSeed {managed_seed}: {what}")]
    Other { managed_seed: String, what: String },
}

fn kube_err(ms: &ManagedSeed, what: impl Into<String>) -> impl FnOnce(kube::Error) -> Error {
    let (managed_seed, what) = (ms.name_any(), what.into());
    move |source| Error::Kube { managed_seed, what, source }
}

pub async fn reconcile(ms: Arc<ManagedSeed>, ctx: Arc<Context>) -> Result<Action, Error> {
    reconcile_managed_seed(&ms, &ctx).await
}

pub fn error_policy(ms: Arc<ManagedSeed>, error: &Error, _ctx: Arc<Context>) -> Action {
    tracing::warn!(managed_seed = %ms.name_any(), error = %runtime::events::error_chain(error), "managed seed reconcile failed");
    Action::requeue(Duration::from_secs(10))
}

fn now() -> Time {
    Time(k8s_openapi::jiff::Timestamp::now())
}

#[tracing::instrument(skip_all, fields(managed_seed = %ms.name_any()))]
async fn reconcile_managed_seed(ms: &ManagedSeed, ctx: &Context) -> Result<Action, Error> {
    let namespace = ms.namespace().unwrap_or_default();
    let Some(shoot_name) = ms.spec.shoot.as_ref().map(|s| s.name.clone()) else { return Ok(Action::await_change()) };
    let shoot = Api::<Shoot>::namespaced(ctx.garden.clone(), &namespace)
        .get_opt(&shoot_name)
        .await
        .map_err(kube_err(ms, format!("reading Shoot {shoot_name}")))?;
    let ours = shoot.as_ref().and_then(decide::hosting_seed) == Some(ctx.seed_name.as_str());
    let has_finalizer = ms.finalizers().iter().any(|f| f == FINALIZER_GARDENER);
    if ms.metadata.deletion_timestamp.is_some() {
        // A ManagedSeed whose shoot is gone is released by any gardenlet (nothing is left in a
        // shoot that does not exist; the garden's part is removed idempotently).
        if has_finalizer && (ours || shoot.is_none()) {
            return delete(ms, shoot.as_ref(), ctx).await;
        }
        return Ok(Action::await_change());
    }
    let Some(shoot) = shoot.filter(|_| ours) else { return Ok(Action::await_change()) };
    set_finalizer(&managed_seeds(ctx, ms), ms, FINALIZER_GARDENER, true)
        .await
        .map_err(kube_err(ms, "adding the finalizer"))?;
    if let Err(why) = decide::shoot_reconciled(&shoot) {
        write_status(ms, ctx, &Observed { shoot: Err(why), seed: None }).await?;
        return Ok(Action::await_change());
    }
    let config = match decide::gardenlet_config(&ctx.parent, ms) {
        Ok(c) => c,
        Err(invalid) => {
            let observed = Observed { shoot: Ok(()), seed: Some(Err(("InvalidConfiguration", invalid.to_string()))) };
            write_status(ms, ctx, &observed).await?;
            return Ok(Action::await_change());
        }
    };
    let seed_name = ms.name_any();
    // The bootstrap identity in the garden; its short-lived token (kept while it is fresh).
    for object in manifests::garden_objects(&seed_name) {
        apply(&ctx.garden, &object)
            .await
            .map_err(kube_err(ms, format!("applying {} in the garden", describe(&object))))?;
    }
    // The broad garden rights of earlier versions go, so an upgrade does not keep them (their
    // token Secret below, once the shoot holds the new token).
    for object in manifests::legacy_garden_objects(&seed_name).iter().filter(|o| o["kind"] != "Secret") {
        remove(&ctx.garden, object)
            .await
            .map_err(kube_err(ms, format!("deleting {} in the garden", describe(object))))?;
    }
    let shoot_client =
        shoot_client(ctx, &shoot).await.map_err(|what| Error::Other { managed_seed: seed_name.clone(), what })?;
    let garden_token = garden_token(ctx, ms, &shoot_client).await?;
    let kubeconfig = manifests::kubeconfig(&ctx.endpoint.server, &ctx.endpoint.ca_pem);
    let config_yaml = serde_yaml::to_string(&config).map_err(|e| Error::Other {
        managed_seed: seed_name.clone(),
        what: format!("writing gardenlet's configuration: {e}"),
    })?;
    let deployment = ms.spec.gardenlet.as_ref().and_then(|g| g.deployment.as_ref());
    let image = image(deployment.and_then(|d| d.image.as_ref()), &ctx.image);
    let inputs = ShootInputs {
        managed_seed: &seed_name,
        config: &config_yaml,
        garden_kubeconfig: &kubeconfig,
        garden_token: &garden_token.token,
        token_expiration: &garden_token.expiration,
        image: &image,
        replicas: deployment.and_then(|d| d.replica_count).unwrap_or(1),
        resources: deployment.and_then(|d| d.resources.as_ref()).and_then(|r| serde_json::to_value(r).ok()),
        env: deployment
            .map(|d| d.env.iter().filter_map(|e| serde_json::to_value(e).ok()).collect())
            .unwrap_or_default(),
        volumes: parent_then_own(
            &ctx.parent.managed_seeds.additional_volumes,
            deployment.iter().flat_map(|d| d.additional_volumes.iter()),
        ),
        volume_mounts: parent_then_own(
            &ctx.parent.managed_seeds.additional_volume_mounts,
            deployment.iter().flat_map(|d| d.additional_volume_mounts.iter()),
        ),
    };
    for object in manifests::shoot_objects(&inputs) {
        apply(&shoot_client, &object)
            .await
            .map_err(kube_err(ms, format!("applying {} in the shoot", describe(&object))))?;
    }
    // Earlier versions' token that never expires, once the shoot holds the new one.
    let legacy = manifests::legacy_token_secret(&seed_name);
    remove(&ctx.garden, &legacy).await.map_err(kube_err(ms, "deleting the never-expiring token Secret"))?;
    let seed =
        Api::<Seed>::all(ctx.garden.clone()).get_opt(&seed_name).await.map_err(kube_err(ms, "reading the Seed"))?;
    let registered = decide::seed_registered(&seed_name, seed.as_ref()).map_err(|why| ("SeedNotReady", why));
    write_status(ms, ctx, &Observed { shoot: Ok(()), seed: Some(registered) }).await?;
    Ok(Action::requeue(garden_token.renew_in))
}

async fn delete(ms: &ManagedSeed, shoot: Option<&Shoot>, ctx: &Context) -> Result<Action, Error> {
    let seed_name = ms.name_any();
    let shoots = Api::<Shoot>::all(ctx.garden.clone())
        .list(&ListParams::default())
        .await
        .map_err(kube_err(ms, "listing shoots"))?;
    let users = decide::seed_users(&seed_name, &shoots.items);
    if !users.is_empty() {
        let why =
            format!("Seed {seed_name} still hosts shoots ({}); it is deleted once they are gone", users.join(", "));
        tracing::info!(%why, "deletion waits");
        let observed = Observed { shoot: Ok(()), seed: Some(Err(("SeedInUse", why))) };
        write_status(ms, ctx, &observed).await?;
        // Shoots elsewhere are not watched: look again (every 30 s with the binary's poll).
        return Ok(Action::requeue(ctx.poll * 6));
    }
    let seeds = Api::<Seed>::all(ctx.garden.clone());
    if let Some(seed) = seeds.get_opt(&seed_name).await.map_err(kube_err(ms, "reading the Seed"))? {
        if seed.metadata.deletion_timestamp.is_none() {
            // Only the seed's own gardenlet uninstalls its extensions: it must be running.
            if let Err(why) = decide::seed_registered(&seed_name, Some(&seed)) {
                let why =
                    format!("{why}; the seed's gardenlet must run to uninstall its extensions (is the shoot awake?)");
                write_status(ms, ctx, &Observed { shoot: Ok(()), seed: Some(Err(("GardenletNotReady", why))) }).await?;
                return Ok(Action::requeue(ctx.poll * 6));
            }
            set_finalizer(&seeds, &seed, SEED_FINALIZER, true)
                .await
                .map_err(kube_err(ms, "adding the finalizer to the Seed"))?;
            tracing::info!("deleting the Seed");
            seeds.delete(&seed_name, &DeleteParams::default()).await.map_err(kube_err(ms, "deleting the Seed"))?;
        }
        let installations = Api::<ControllerInstallation>::all(ctx.garden.clone())
            .list(&ListParams::default())
            .await
            .map_err(kube_err(ms, "listing ControllerInstallations"))?;
        let left: Vec<String> = installations
            .items
            .iter()
            .filter(|i| i.spec.seed_ref.as_ref().is_some_and(|s| s.name == seed_name))
            .map(|i| i.name_any())
            .collect();
        if !left.is_empty() {
            let why = format!("waiting until the seed's extensions are uninstalled ({})", left.join(", "));
            write_status(ms, ctx, &Observed { shoot: Ok(()), seed: Some(Err(("Deleting", why))) }).await?;
            return Ok(Action::requeue(ctx.poll));
        }
    }
    // gardenlet leaves the shoot (the Deployment first, so it stops writing), then the garden.
    if let Some(shoot) = shoot.filter(|s| !s.status.as_ref().is_some_and(|st| st.technical_id.is_empty())) {
        match shoot_client(ctx, shoot).await {
            Ok(client) => {
                let objects = manifests::shoot_objects(&ShootInputs {
                    managed_seed: &seed_name,
                    config: "",
                    garden_kubeconfig: "",
                    garden_token: "",
                    token_expiration: "",
                    image: "",
                    replicas: 0,
                    resources: None,
                    env: vec![],
                    volumes: vec![],
                    volume_mounts: vec![],
                });
                for object in objects.iter().rev() {
                    remove(&client, object)
                        .await
                        .map_err(kube_err(ms, format!("deleting {} in the shoot", describe(object))))?;
                }
            }
            // A shoot whose API is gone (hibernated, deleted meanwhile) has nothing to run gardenlet.
            Err(why) => tracing::info!(%why, "gardenlet is not removed from the shoot"),
        }
    }
    let garden_objects = manifests::garden_objects(&seed_name);
    for object in manifests::legacy_garden_objects(&seed_name).iter().chain(garden_objects.iter().rev()) {
        remove(&ctx.garden, object)
            .await
            .map_err(kube_err(ms, format!("deleting {} in the garden", describe(object))))?;
    }
    if let Some(seed) = seeds.get_opt(&seed_name).await.map_err(kube_err(ms, "reading the Seed"))? {
        set_finalizer(&seeds, &seed, SEED_FINALIZER, false).await.map_err(kube_err(ms, "releasing the Seed"))?;
    }
    tracing::info!("gardenlet and its seed are removed; releasing the ManagedSeed");
    set_finalizer(&managed_seeds(ctx, ms), ms, FINALIZER_GARDENER, false)
        .await
        .map_err(kube_err(ms, "removing the finalizer"))?;
    Ok(Action::await_change())
}

/// Adds (`present`) or removes `finalizer`, writing only when that changes something.
async fn set_finalizer<K>(api: &Api<K>, object: &K, finalizer: &str, present: bool) -> Result<(), kube::Error>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let current = object.finalizers();
    if current.iter().any(|f| f == finalizer) == present {
        return Ok(());
    }
    let mut finalizers: Vec<String> = current.iter().filter(|f| *f != finalizer).cloned().collect();
    if present {
        finalizers.push(finalizer.to_string());
    }
    let patch = json!({"metadata": {"finalizers": finalizers, "resourceVersion": object.resource_version()}});
    api.patch(&object.name_any(), &PatchParams::default(), &Patch::Merge(patch)).await?;
    Ok(())
}

/// The managed gardenlet's image: `spec.gardenlet.deployment.image` where given, each part
/// defaulting to the one of `default` (repository and tag).
fn image(given: Option<&api::seedmanagement::Image>, default: &str) -> String {
    let (repository, tag) = default.rsplit_once(':').unwrap_or((default, "latest"));
    let repository = given.and_then(|i| i.repository.as_deref()).unwrap_or(repository);
    let tag = given.and_then(|i| i.tag.as_deref()).unwrap_or(tag);
    format!("{repository}:{tag}")
}

fn managed_seeds(ctx: &Context, ms: &ManagedSeed) -> Api<ManagedSeed> {
    Api::namespaced(ctx.garden.clone(), &ms.namespace().unwrap_or_default())
}

/// The managed gardenlet's garden token, its expiry, and when to look at it again.
struct GardenToken {
    token: String,
    expiration: String,
    renew_in: Duration,
}

/// The token the shoot's Secret holds while it is fresh ([`token::decide`]), else a new one
/// from the TokenRequest API for the managed gardenlet's ServiceAccount.
async fn garden_token(ctx: &Context, ms: &ManagedSeed, shoot: &kube::Client) -> Result<GardenToken, Error> {
    let held = Api::<Secret>::namespaced(shoot.clone(), manifests::NAMESPACE)
        .get_opt(manifests::GARDEN_KUBECONFIG_SECRET)
        .await
        .map_err(kube_err(ms, "reading the garden kubeconfig Secret in the shoot"))?
        .and_then(|secret| {
            let expiration = secret.annotations().get(token::EXPIRATION_ANNOTATION)?.clone();
            let token = String::from_utf8(secret.data?.get(token::TOKEN_KEY)?.0.clone()).ok()?;
            Some((token, expiration)).filter(|(t, _)| !t.is_empty())
        });
    let now = k8s_openapi::jiff::Timestamp::now();
    if let Some((token, expiration)) = held
        && let token::Decision::Keep { renew_in } = token::decide(Some(&expiration), now)
    {
        return Ok(GardenToken { token, expiration, renew_in });
    }
    let request = TokenRequest {
        spec: TokenRequestSpec { expiration_seconds: Some(token::LIFETIME.as_secs() as i64), ..Default::default() },
        ..Default::default()
    };
    let account = manifests::garden_service_account(&ms.name_any());
    let issued = Api::<ServiceAccount>::namespaced(ctx.garden.clone(), manifests::NAMESPACE)
        .create_token_request(&account, &PostParams::default(), &request)
        .await
        .map_err(kube_err(ms, format!("requesting a token of ServiceAccount garden/{account}")))?;
    let Some(status) = issued.status else {
        let what = format!("the TokenRequest for ServiceAccount garden/{account} returned no token");
        return Err(Error::Other { managed_seed: ms.name_any(), what });
    };
    let expiration = status.expiration_timestamp.0.to_string();
    tracing::info!(%expiration, "requested a garden token for the managed gardenlet");
    // Half the time the token is valid for (a garden may shorten the lifetime), at least a minute.
    let valid = now.duration_until(status.expiration_timestamp.0).unsigned_abs();
    Ok(GardenToken { token: status.token, expiration, renew_in: (valid / 2).max(Duration::from_secs(60)) })
}

/// A client for the shoot's API server from the admin kubeconfig in its seed namespace.
async fn shoot_client(ctx: &Context, shoot: &Shoot) -> Result<kube::Client, String> {
    let namespace = shoot.status.as_ref().map(|s| s.technical_id.clone()).unwrap_or_default();
    crate::shoot::operation::clients::from_admin_secret(
        &ctx.seed,
        &namespace,
        crate::shoot::operation::clients::SHOOT_REQUEST_TIMEOUT,
    )
    .await
}

fn describe(object: &Value) -> String {
    let kind = object["kind"].as_str().unwrap_or_default();
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    match object["metadata"]["namespace"].as_str() {
        Some(ns) => format!("{kind} {ns}/{name}"),
        None => format!("{kind} {name}"),
    }
}

/// The API of an object this controller writes (only the kinds of [`manifests`]).
fn dynamic_api(client: &kube::Client, object: &Value) -> Api<DynamicObject> {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let kind = object["kind"].as_str().unwrap_or_default();
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let plural = match kind {
        "Namespace" => "namespaces",
        "CustomResourceDefinition" => "customresourcedefinitions",
        "PriorityClass" => "priorityclasses",
        "ServiceAccount" => "serviceaccounts",
        "ClusterRole" => "clusterroles",
        "ClusterRoleBinding" => "clusterrolebindings",
        "Role" => "roles",
        "RoleBinding" => "rolebindings",
        "Secret" => "secrets",
        "ConfigMap" => "configmaps",
        "Deployment" => "deployments",
        other => {
            return Api::all_with(
                client.clone(),
                &ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, other)),
            );
        }
    };
    let resource = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural);
    match object["metadata"]["namespace"].as_str() {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    }
}

/// Server-side apply of `object`, unless the live object already is what it says: it carries
/// the hash of this exact intent (so a field no longer set is still removed by a new apply) and
/// every field of it (so drift is repaired). The shoot flow's mechanism
/// ([`crate::shoot::operation::apply::apply_in`]), for untyped objects.
async fn apply(client: &kube::Client, object: &Value) -> Result<(), kube::Error> {
    use crate::shoot::operation::apply::{INTENT_HASH_ANNOTATION, contains, intent_hash};
    let api = dynamic_api(client, object);
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    let hash = intent_hash(object);
    if let Some(live) = api.get_opt(name).await? {
        let same_intent = live.annotations().get(INTENT_HASH_ANNOTATION) == Some(&hash);
        if same_intent && contains(&serde_json::to_value(&live).unwrap_or(Value::Null), object) {
            return Ok(());
        }
    }
    let mut desired = object.clone();
    desired["metadata"]["annotations"][INTENT_HASH_ANNOTATION] = json!(hash);
    api.patch(name, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(&desired)).await?;
    Ok(())
}

/// The parent gardenlet's configured entries (every managed gardenlet gets them), then the
/// ManagedSeed's own.
fn parent_then_own<'a, T: serde::Serialize + 'a>(parent: &[Value], own: impl Iterator<Item = &'a T>) -> Vec<Value> {
    parent.iter().cloned().chain(own.filter_map(|v| serde_json::to_value(v).ok())).collect()
}

async fn remove(client: &kube::Client, object: &Value) -> Result<(), kube::Error> {
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    match dynamic_api(client, object).delete(name, &DeleteParams::background()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}

async fn write_status(ms: &ManagedSeed, ctx: &Context, observed: &Observed) -> Result<(), Error> {
    let Some(next): Option<ManagedSeedStatus> =
        decide::status(ms.status.as_ref(), ms.metadata.generation, observed, &now())
    else {
        return Ok(());
    };
    let body = json!({"status": next});
    managed_seeds(ctx, ms)
        .patch_status(&ms.name_any(), &PatchParams::default(), &Patch::Merge(body))
        .await
        .map_err(kube_err(ms, "writing its status"))?;
    Ok(())
}

#[cfg(test)]
mod tests {

    #[test]
    fn volumes_are_the_parents_then_the_managed_seeds_own() {
        use k8s_openapi::api::core::v1::VolumeMount;
        let parent = vec![serde_json::json!({"name": "backup", "mountPath": "/backup"})];
        let own = [VolumeMount { name: "extra".into(), mount_path: "/extra".into(), ..Default::default() }];
        let merged = super::parent_then_own(&parent, own.iter());
        assert_eq!(
            merged,
            vec![
                serde_json::json!({"name": "backup", "mountPath": "/backup"}),
                serde_json::json!({"name": "extra", "mountPath": "/extra"}),
            ]
        );
        assert_eq!(super::parent_then_own::<VolumeMount>(&[], std::iter::empty()), Vec::<serde_json::Value>::new());
    }

    #[test]
    fn image_parts_default_to_the_parents() {
        use api::seedmanagement::Image;
        let default = "gardener-rs.local/gardenlet:v1";
        assert_eq!(super::image(None, default), default);
        let tag = Image { tag: Some("v2".into()), ..Default::default() };
        assert_eq!(super::image(Some(&tag), default), "gardener-rs.local/gardenlet:v2");
        let repo = Image { repository: Some("example.org/g".into()), ..Default::default() };
        assert_eq!(super::image(Some(&repo), default), "example.org/g:v1");
    }
}
