//! One AdminKubeconfigRequest: read its Shoot and the CAs gardenlet publishes for it (the
//! client CA in InternalSecret `<shoot>.ca-client`, the bundle in ConfigMap `<shoot>.ca-cluster`), decide with
//! [`super::decide`], then issue (sign with `pki::admin_kubeconfig`, record certificate,
//! kubeconfig and expiration in the status by server-side apply, field manager
//! `gardener-controller-manager/adminkubeconfig`), record Pending/Failed, or delete it.
//! The CA keys are held only for the signature; nothing of them reaches status, events or logs.

use super::Context;
use super::decide::{self, CLIENT_CA, CLUSTER_CA, Decision, Facts, ShootFacts};
use crate::runtime::{self, field_manager};
use api::authentication::{AdminKubeconfigRequest, AdminKubeconfigRequestPhase as Phase};
use api::core::{InternalSecret, Shoot};
use api::helpers::constants::ANNOTATION_CREATED_BY;
use api::helpers::names::{shoot_ca_client, shoot_ca_cluster};
use base64::Engine;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{DeleteParams, Patch, PatchParams, Preconditions};
use kube::core::DeserializeGuard;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::{Api, ResourceExt};
use pki::data_keys;
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

pub const NAME: &str = "adminkubeconfig";

pub use crate::runtime::KubeError as Error;
use crate::runtime::kube_err;

pub async fn reconcile(request: Arc<AdminKubeconfigRequest>, ctx: Arc<Context>) -> Result<Action, Error> {
    runtime::instrumented(&ctx.common, request.as_ref(), reconcile_request(&request, &ctx)).await
}

pub fn error_policy(request: Arc<AdminKubeconfigRequest>, _error: &Error, ctx: Arc<Context>) -> Action {
    ctx.common.retry_after_failure(request.as_ref())
}

/// The secrets the issuance needs, from the shoot's published CAs: the client CA (certificate
/// and key) from InternalSecret `<shoot>.ca-client`, the bundle to trust from ConfigMap
/// `<shoot>.ca-cluster`. `None` until both exist and are complete.
pub fn needed_secrets(client_ca: Option<&InternalSecret>, cluster_ca: Option<&ConfigMap>) -> Option<pki::SecretSet> {
    let data = &client_ca?.spec.data;
    let decode = |key: &str| -> Option<String> {
        let bytes = base64::engine::general_purpose::STANDARD.decode(data.get(key)?).ok()?;
        String::from_utf8(bytes).ok()
    };
    let bundle = cluster_ca?.data.as_ref()?.get(data_keys::CA_CERT)?.clone();
    let mut set = pki::SecretSet::new();
    set.insert(
        pki::Secret::new(CLIENT_CA, pki::secret_types::OPAQUE)
            .with_data(data_keys::CA_CERT, decode(data_keys::CA_CERT)?)
            .with_data(data_keys::CA_KEY, decode(data_keys::CA_KEY)?),
    );
    set.insert(
        pki::Secret::new(pki::config::bundle_name(CLUSTER_CA), pki::secret_types::OPAQUE)
            .with_data(data_keys::BUNDLE, bundle),
    );
    Some(set)
}

/// Reads the shoot's published CAs (see [`needed_secrets`]).
async fn published_cas(
    ctx: &Context,
    namespace: &str,
    shoot: &str,
    request: &str,
) -> Result<Option<pki::SecretSet>, Error> {
    let (secret_name, map_name) = (shoot_ca_client(shoot), shoot_ca_cluster(shoot));
    let client_ca = Api::<InternalSecret>::namespaced(ctx.common.client.clone(), namespace)
        .get_opt(&secret_name)
        .await
        .map_err(kube_err(
            "ReadClientCAFailed",
            format!("reading InternalSecret {namespace}/{secret_name} of AdminKubeconfigRequest {request}"),
        ))?;
    if client_ca.is_none() {
        return Ok(None);
    }
    let cluster_ca = Api::<ConfigMap>::namespaced(ctx.common.client.clone(), namespace)
        .get_opt(&map_name)
        .await
        .map_err(kube_err(
            "ReadClusterCAFailed",
            format!("reading ConfigMap {namespace}/{map_name} of AdminKubeconfigRequest {request}"),
        ))?;
    Ok(needed_secrets(client_ca.as_ref(), cluster_ca.as_ref()))
}

#[tracing::instrument(skip_all, fields(request = %format!("{}/{}", request.namespace().unwrap_or_default(), request.name_any())))]
async fn reconcile_request(request: &AdminKubeconfigRequest, ctx: &Context) -> Result<Action, Error> {
    if request.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let (namespace, name) = (request.namespace().unwrap_or_default(), request.name_any());
    let status = request.status.as_ref();
    let phase = status.and_then(|s| s.phase);
    let now = ctx.common.clock.now();
    let mut secrets = None;
    // The Shoot and its CAs are read only while the request still needs them.
    let shoot = if matches!(phase, None | Some(Phase::Pending)) {
        let shoot_name = &request.spec.shoot_ref.name;
        let shoots: Api<DeserializeGuard<Shoot>> = Api::namespaced(ctx.common.client.clone(), &namespace);
        let shoot = shoots.get_opt(shoot_name).await.map_err(kube_err(
            "ReadShootFailed",
            format!("reading Shoot {namespace}/{shoot_name} of AdminKubeconfigRequest {name}"),
        ))?;
        match shoot {
            None => ShootFacts::Missing,
            Some(DeserializeGuard(Err(_))) => {
                ShootFacts::Present { server: None, cluster_name: String::new(), ca_available: false }
            }
            Some(DeserializeGuard(Ok(s))) if s.metadata.deletion_timestamp.is_some() => ShootFacts::Deleting,
            Some(DeserializeGuard(Ok(s))) => {
                secrets = published_cas(ctx, &namespace, shoot_name, &name).await?;
                let st = s.status.as_ref();
                ShootFacts::Present {
                    server: st.and_then(|st| decide::server_of(&st.advertised_addresses)),
                    cluster_name: st
                        .map(|st| st.technical_id.clone())
                        .filter(|id| !id.is_empty())
                        .unwrap_or_else(|| format!("{namespace}--{shoot_name}")),
                    ca_available: secrets.is_some(),
                }
            }
        }
    } else {
        ShootFacts::Missing
    };
    let facts = Facts {
        created: request.metadata.creation_timestamp.as_ref().map_or(now, |t| t.0),
        phase,
        expiration: status.and_then(|s| s.expiration_timestamp.as_ref()).map(|t| t.0),
        requested_seconds: request.spec.expiration_seconds(),
        creator: request.annotations().get(ANNOTATION_CREATED_BY).map(String::as_str),
        shoot,
        now,
    };
    let api: Api<AdminKubeconfigRequest> = Api::namespaced(ctx.common.client.clone(), &namespace);
    match decide::decide(&facts, ctx.config.max_expiration()) {
        Decision::Delete { reason, message } => {
            let message = format!("AdminKubeconfigRequest {name} is deleted: {message}");
            tracing::info!(%reason, %message, "deleting the request");
            ctx.common.event(request, EventType::Normal, reason, "Delete", message).await;
            let params = DeleteParams {
                preconditions: Some(Preconditions { uid: request.uid(), resource_version: None }),
                ..Default::default()
            };
            match api.delete(&name, &params).await {
                Ok(_) => Ok(Action::await_change()),
                Err(kube::Error::Api(s)) if s.code == 404 => Ok(Action::await_change()),
                Err(e) => {
                    Err(kube_err("DeleteFailed", format!("deleting AdminKubeconfigRequest {namespace}/{name}"))(e))
                }
            }
        }
        Decision::Wait { requeue_after } => Ok(Action::requeue(requeue_after.max(Duration::from_secs(1)))),
        Decision::Record { phase, message, requeue_after } => {
            if status.and_then(|s| s.phase) != Some(phase)
                || status.map(|s| s.message.as_str()) != Some(message.as_str())
            {
                write_status(&api, &name, json!({"phase": phase, "message": message})).await?;
            }
            Ok(Action::requeue(requeue_after.max(Duration::from_secs(1))))
        }
        Decision::Issue { user, validity, server, cluster_name } => {
            let Some(secrets) = secrets else {
                // decide() issues only when the CA is available; nothing to do otherwise.
                return Ok(Action::requeue(Duration::from_secs(1)));
            };
            let mut settings = pki::admin_kubeconfig::AdminKubeconfigSettings::new(cluster_name, server);
            settings.max_expiration = ctx.config.max_expiration();
            let ask = pki::admin_kubeconfig::AdminKubeconfigRequest {
                user: user.clone(),
                expiration: validity,
                public_key_pem: request.spec.public_key.clone(),
            };
            let issued = match pki::admin_kubeconfig::issue(&secrets, &settings, &ask, SystemTime::from(now)) {
                Ok(issued) => issued,
                Err(e) => {
                    // pki's errors name the rule, never key material (see pki::Error).
                    let message = format!("cannot be issued: {e}");
                    ctx.common.event(request, EventType::Warning, "IssueFailed", "Issue", message.clone()).await;
                    write_status(&api, &name, json!({"phase": Phase::Failed, "message": message})).await?;
                    return Ok(Action::await_change());
                }
            };
            let expiration = k8s_openapi::jiff::Timestamp::try_from(issued.expiration).unwrap_or(now);
            write_status(
                &api,
                &name,
                json!({
                    "phase": Phase::Issued,
                    "certificate": issued.certificate_pem,
                    "kubeconfig": issued.kubeconfig,
                    "expirationTimestamp": Time(expiration),
                }),
            )
            .await?;
            let note =
                format!("Issued a client certificate for user {user:?} (system:masters), valid until {expiration}");
            tracing::info!(%user, %expiration, "issued an admin client certificate");
            ctx.common.event(request, EventType::Normal, "Issued", "Issue", note).await;
            Ok(Action::requeue(
                Duration::try_from(expiration.duration_since(now)).unwrap_or_default().max(Duration::from_secs(1)),
            ))
        }
    }
}

/// Applies `status` (server-side apply: a field this manager wrote before and leaves out now is
/// removed, which is how a message is cleared; kube-apiserver 1.20 refuses `""` there).
async fn write_status(
    api: &Api<AdminKubeconfigRequest>,
    name: &str,
    mut status: serde_json::Value,
) -> Result<(), Error> {
    if status.get("message").and_then(serde_json::Value::as_str) == Some("")
        && let Some(fields) = status.as_object_mut()
    {
        fields.remove("message");
    }
    let body = json!({
        "apiVersion": "authentication.gardener.cloud/v1alpha1",
        "kind": "AdminKubeconfigRequest",
        "status": status,
    });
    api.patch_status(name, &PatchParams::apply(&field_manager(NAME)).force(), &Patch::Apply(&body))
        .await
        .map_err(kube_err("WriteStatusFailed", format!("writing the status of AdminKubeconfigRequest {name}")))?;
    Ok(())
}
