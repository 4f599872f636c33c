//! The seed-side ground of a shoot: its namespace, the extension `Cluster` resource (with the Shoot, Seed and CloudProfile embedded) and the provider credentials as the `cloudprovider` Secret.

use crate::flow::TaskError;
use crate::shoot::objects::extensions as ext;
use crate::shoot::operation::apply::{apply, task_err};
use crate::shoot::operation::context::OperationContext;
use crate::shoot::operation::references;
use api::Opaque;
use api::core::SecretBinding;
use api::extensions::Cluster;
use api::security::CredentialsBinding;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::{Api, Resource};
use std::collections::BTreeMap;
use std::sync::Arc;

pub(super) async fn deploy_namespace(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    let namespaces: Api<Namespace> = Api::all(ctx.seed.clone());
    let ns = seed_namespace(ctx.values.namespace(), &ctx.values.name, &ctx.values.project);
    // Written only when it is not yet as wanted: a resync of an unchanged shoot writes nothing;
    // a namespace applied before a label was added gets it on the next reconcile.
    crate::shoot::operation::apply::apply_in(namespaces, &ns).await?;
    Ok(())
}

/// The pod security level of the shoot's seed namespace (label
/// `pod-security.kubernetes.io/enforce`, which the garden's admission server enforces, as
/// Gardener labels it): `privileged`, since the control plane's pods, provider-local's bastion
/// (its firewall container adds `NET_ADMIN`) and the backup mounts need more than `baseline`.
pub const POD_SECURITY_ENFORCE: (&str, &str) = ("pod-security.kubernetes.io/enforce", "privileged");

/// The shoot's namespace in the seed, `name`, labelled with its role, shoot, project and pod
/// security level.
pub fn seed_namespace(name: &str, shoot: &str, project: &str) -> Namespace {
    Namespace {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: Some(BTreeMap::from([
                ("gardener.cloud/role".to_string(), "shoot".to_string()),
                ("shoot.gardener.cloud/name".to_string(), shoot.to_string()),
                ("project.gardener.cloud/name".to_string(), project.to_string()),
                (POD_SECURITY_ENFORCE.0.to_string(), POD_SECURITY_ENFORCE.1.to_string()),
            ])),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// The Shoot as embedded in the Cluster: without server bookkeeping and with only the status
/// an extension needs (a failed last operation), so that status updates do not rewrite the
/// Cluster on every step.
pub fn embedded_shoot(shoot: &api::core::Shoot) -> serde_json::Value {
    let mut v = serde_json::to_value(shoot).unwrap_or_default();
    if let Some(meta) = v.get_mut("metadata").and_then(|m| m.as_object_mut()) {
        for k in ["managedFields", "resourceVersion", "generation", "annotations", "finalizers"] {
            meta.remove(k);
        }
    }
    let failed = crate::shoot::status::last_operation::is_failed(shoot);
    if let Some(obj) = v.as_object_mut() {
        let last = obj.get("status").and_then(|s| s.get("lastOperation")).cloned();
        match (failed, last) {
            (true, Some(last)) => {
                obj.insert("status".into(), serde_json::json!({ "lastOperation": last }));
            }
            _ => {
                obj.remove("status");
            }
        }
    }
    v
}

pub(crate) async fn deploy_cluster(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    let seed = ctx.seed_object.as_ref().map(|s| {
        let mut v = serde_json::to_value(s).unwrap_or_default();
        if let Some(o) = v.as_object_mut() {
            o.remove("status");
            if let Some(m) = o.get_mut("metadata").and_then(|m| m.as_object_mut()) {
                m.remove("managedFields");
                m.remove("resourceVersion");
            }
        }
        v
    });
    // A NamespacedCloudProfile goes in as a CloudProfile with its merged spec.
    let profile = match &ctx.cloud_profile {
        Some(cached) => references::cluster_cloud_profile(&ctx.shoot, cached.as_deref(), None).map_err(task_err)?,
        None => references::read_cloud_profile(&ctx.garden, &ctx.shoot).await.map_err(task_err)?,
    };
    let cluster = ext::cluster(
        &ctx.values,
        Opaque(embedded_shoot(&ctx.shoot)),
        Opaque(seed.unwrap_or_else(|| serde_json::json!({}))),
        Opaque(profile),
    );
    let applied = crate::shoot::operation::apply::apply_in(Api::<Cluster>::all(ctx.seed.clone()), &cluster).await?;
    ctx.found().cluster_owner = applied.controller_owner_ref(&()).map(|mut o| {
        o.controller = Some(false);
        o.block_owner_deletion = Some(false);
        o
    });
    Ok(())
}

/// The provider credentials of the shoot, as the `cloudprovider` Secret in its seed namespace:
/// the Secret its SecretBinding or CredentialsBinding names (a shoot names at most one;
/// admission sees to that). A CredentialsBinding to a WorkloadIdentity yields a Secret that
/// names the identity and holds no token (see docs/api.md: provider-local needs none, and
/// issuing tokens for cloud providers is not implemented).
pub(super) async fn deploy_cloudprovider_secret(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    let garden_ns = ctx.values.garden_namespace.clone();
    let mut secret = Secret {
        metadata: ObjectMeta { name: Some(ext::CLOUDPROVIDER_SECRET.into()), ..Default::default() },
        type_: Some("Opaque".into()),
        ..Default::default()
    };
    if let Some(binding) = &ctx.shoot.spec.secret_binding_name {
        let bindings: Api<SecretBinding> = Api::namespaced(ctx.garden.clone(), &garden_ns);
        let b = bindings.get(binding).await.map_err(|e| {
            TaskError::context(format!("reading SecretBinding {garden_ns}/{binding} (spec.secretBindingName)"), &e)
        })?;
        let ns = b.spec.secret_ref.namespace.clone().unwrap_or_else(|| garden_ns.clone());
        let what = format!("Secret {ns}/{} of SecretBinding {binding}", b.spec.secret_ref.name);
        secret.data = credentials_secret_data(&ctx, &ns, &b.spec.secret_ref.name, &what).await?;
    } else if let Some(binding) = &ctx.shoot.spec.credentials_binding_name {
        let bindings: Api<CredentialsBinding> = Api::namespaced(ctx.garden.clone(), &garden_ns);
        let b = bindings.get(binding).await.map_err(|e| {
            TaskError::msg(format!(
                "reading CredentialsBinding {garden_ns}/{binding} (spec.credentialsBindingName): {e}"
            ))
        })?;
        let r = &b.spec.credentials_ref;
        let ns = r.namespace.clone().unwrap_or_else(|| garden_ns.clone());
        match r.kind.as_deref() {
            Some("Secret") => {
                let what = format!("Secret {ns}/{} of CredentialsBinding {binding}", r.name);
                secret.data = credentials_secret_data(&ctx, &ns, &r.name, &what).await?;
            }
            Some("WorkloadIdentity") => {
                secret.metadata.labels = Some(BTreeMap::from([(
                    "security.gardener.cloud/purpose".to_string(),
                    "workload-identity-token-requestor".to_string(),
                )]));
                secret.metadata.annotations = Some(BTreeMap::from([
                    ("workloadidentity.security.gardener.cloud/name".to_string(), r.name.clone()),
                    ("workloadidentity.security.gardener.cloud/namespace".to_string(), ns),
                ]));
            }
            other => {
                return Err(TaskError::msg(format!(
                    "CredentialsBinding {garden_ns}/{binding}: credentialsRef.kind {other:?} is neither Secret nor WorkloadIdentity"
                )));
            }
        }
    }
    apply(&ctx, &secret).await.map(|_| ())
}

pub(super) async fn credentials_secret_data(
    ctx: &OperationContext,
    namespace: &str,
    name: &str,
    what: &str,
) -> Result<Option<BTreeMap<String, ByteString>>, TaskError> {
    let secret = Api::<Secret>::namespaced(ctx.garden.clone(), namespace)
        .get(name)
        .await
        .map_err(|e| TaskError::context(format!("reading {what}"), &e))?;
    // Provider credentials must not come back in an extension's error.
    ctx.add_secrets(secret.data.iter().flatten().filter_map(|(_, v)| std::str::from_utf8(&v.0).ok()));
    Ok(secret.data.filter(|d| !d.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seed_namespace_is_labelled_for_the_shoot_and_privileged() {
        let ns = seed_namespace("shoot--dev--demo", "demo", "dev");
        assert_eq!(ns.metadata.name.as_deref(), Some("shoot--dev--demo"));
        let labels = ns.metadata.labels.unwrap_or_default();
        let get = |k: &str| labels.get(k).map(String::as_str);
        assert_eq!(get("gardener.cloud/role"), Some("shoot"));
        assert_eq!(get("shoot.gardener.cloud/name"), Some("demo"));
        assert_eq!(get("project.gardener.cloud/name"), Some("dev"));
        assert_eq!(get("pod-security.kubernetes.io/enforce"), Some("privileged"));
    }
}
