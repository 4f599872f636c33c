//! One protected object: find its users in the caches, decide with [`super::decide`], add or
//! remove the finalizer (a merge patch of the metadata carrying the resourceVersion that was
//! read, so a concurrent change of the finalizer list is not lost), or report a blocked
//! deletion as a Warning event `DeletionBlocked` naming the users.

use super::Context;
use super::decide::{self, Step};
use crate::runtime::{self, Reason};
use api::core::{
    CloudProfile, ControllerDeployment, ControllerRegistration, ExposureClass, NamespacedCloudProfile, Quota,
    SecretBinding, Seed,
};
use api::security::{CredentialsBinding, WorkloadIdentity};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Patch, PatchParams};
use kube::core::PartialObjectMeta;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::{Api, Resource, ResourceExt};
use serde_json::json;
use std::sync::Arc;

/// Finalizer of CloudProfiles, NamespacedCloudProfiles, ExposureClasses, SecretBindings,
/// CredentialsBindings, Quotas, Seeds and the controller kinds.
pub const FINALIZER: &str = api::helpers::constants::FINALIZER_GARDENER;
/// Finalizer of credentials: Secrets and WorkloadIdentities.
pub const SECRET_FINALIZER: &str = "gardener.cloud/gardener";

#[derive(Debug, thiserror::Error)]
#[error("{what}")]
pub struct Error {
    what: String,
    #[source]
    source: kube::Error,
}

impl Reason for Error {
    fn reason(&self) -> &'static str {
        "WriteFinalizerFailed"
    }
}

/// A kind the controller protects.
pub trait Protected: Resource<DynamicType = ()> + Clone + std::fmt::Debug + Send + Sync + 'static {
    /// The controller's name (metric label, event reporter).
    const CONTROLLER: &'static str;
    const FINALIZER: &'static str;
    /// The kind whose metadata API is patched.
    type Full: Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug;
    fn users(&self, ctx: &Context) -> Vec<String>;
    /// Where the object's metadata is patched.
    fn api(client: kube::Client, namespace: &str) -> Api<Self::Full>;
}

fn namespace_and_name<K: Resource>(obj: &K) -> (String, String) {
    (obj.namespace().unwrap_or_default(), obj.name_any())
}

impl Protected for CloudProfile {
    const CONTROLLER: &'static str = "cloudprofile-protection";
    const FINALIZER: &'static str = FINALIZER;
    type Full = CloudProfile;
    fn api(client: kube::Client, _namespace: &str) -> Api<CloudProfile> {
        Api::all(client)
    }
    fn users(&self, ctx: &Context) -> Vec<String> {
        let children = ctx.namespaced_cloud_profiles();
        decide::cloud_profile_users(&self.name_any(), ctx.shoots().iter(), children.iter().map(Arc::as_ref))
    }
}

impl Protected for NamespacedCloudProfile {
    const CONTROLLER: &'static str = "namespacedcloudprofile-protection";
    const FINALIZER: &'static str = FINALIZER;
    type Full = NamespacedCloudProfile;
    fn api(client: kube::Client, namespace: &str) -> Api<NamespacedCloudProfile> {
        Api::namespaced(client, namespace)
    }
    fn users(&self, ctx: &Context) -> Vec<String> {
        let (ns, name) = namespace_and_name(self);
        decide::namespaced_cloud_profile_users(&ns, &name, ctx.shoots().iter())
    }
}

impl Protected for ExposureClass {
    const CONTROLLER: &'static str = "exposureclass-protection";
    const FINALIZER: &'static str = FINALIZER;
    type Full = ExposureClass;
    fn api(client: kube::Client, _namespace: &str) -> Api<ExposureClass> {
        Api::all(client)
    }
    fn users(&self, ctx: &Context) -> Vec<String> {
        decide::exposure_class_users(&self.name_any(), ctx.shoots().iter())
    }
}

impl Protected for SecretBinding {
    const CONTROLLER: &'static str = "secretbinding-protection";
    const FINALIZER: &'static str = FINALIZER;
    type Full = SecretBinding;
    fn api(client: kube::Client, namespace: &str) -> Api<SecretBinding> {
        Api::namespaced(client, namespace)
    }
    fn users(&self, ctx: &Context) -> Vec<String> {
        let (ns, name) = namespace_and_name(self);
        decide::secret_binding_users(&ns, &name, ctx.shoots().iter())
    }
}

impl Protected for CredentialsBinding {
    const CONTROLLER: &'static str = "credentialsbinding-protection";
    const FINALIZER: &'static str = FINALIZER;
    type Full = CredentialsBinding;
    fn api(client: kube::Client, namespace: &str) -> Api<CredentialsBinding> {
        Api::namespaced(client, namespace)
    }
    fn users(&self, ctx: &Context) -> Vec<String> {
        let (ns, name) = namespace_and_name(self);
        decide::credentials_binding_users(&ns, &name, ctx.shoots().iter())
    }
}

impl Protected for Quota {
    const CONTROLLER: &'static str = "quota-protection";
    const FINALIZER: &'static str = FINALIZER;
    type Full = Quota;
    fn api(client: kube::Client, namespace: &str) -> Api<Quota> {
        Api::namespaced(client, namespace)
    }
    fn users(&self, ctx: &Context) -> Vec<String> {
        let (ns, name) = namespace_and_name(self);
        decide::quota_users(&ns, &name, ctx.binding_refs().iter())
    }
}

impl Protected for Seed {
    const CONTROLLER: &'static str = "seed-protection";
    const FINALIZER: &'static str = FINALIZER;
    type Full = Seed;
    fn api(client: kube::Client, _namespace: &str) -> Api<Seed> {
        Api::all(client)
    }
    fn users(&self, ctx: &Context) -> Vec<String> {
        decide::seed_users(&self.name_any(), ctx.shoots().iter())
    }
}

impl Protected for ControllerRegistration {
    const CONTROLLER: &'static str = "controllerregistration-protection";
    const FINALIZER: &'static str = FINALIZER;
    type Full = ControllerRegistration;
    fn api(client: kube::Client, _namespace: &str) -> Api<ControllerRegistration> {
        Api::all(client)
    }
    fn users(&self, ctx: &Context) -> Vec<String> {
        decide::registration_users(&self.name_any(), ctx.installations().iter().map(Arc::as_ref))
    }
}

impl Protected for ControllerDeployment {
    const CONTROLLER: &'static str = "controllerdeployment-protection";
    const FINALIZER: &'static str = FINALIZER;
    type Full = ControllerDeployment;
    fn api(client: kube::Client, _namespace: &str) -> Api<ControllerDeployment> {
        Api::all(client)
    }
    fn users(&self, ctx: &Context) -> Vec<String> {
        let (registrations, installations) = (ctx.registrations(), ctx.installations());
        decide::deployment_users(
            &self.name_any(),
            registrations.iter().map(Arc::as_ref),
            installations.iter().map(Arc::as_ref),
        )
    }
}

impl Protected for PartialObjectMeta<Secret> {
    const CONTROLLER: &'static str = "secret-protection";
    const FINALIZER: &'static str = SECRET_FINALIZER;
    type Full = Secret;
    fn api(client: kube::Client, namespace: &str) -> Api<Secret> {
        Api::namespaced(client, namespace)
    }
    fn users(&self, ctx: &Context) -> Vec<String> {
        let (ns, name) = namespace_and_name(self);
        decide::credentials_users(decide::CredentialsKind::Secret, &ns, &name, ctx.binding_refs().iter())
    }
}

impl Protected for WorkloadIdentity {
    const CONTROLLER: &'static str = "workloadidentity-protection";
    const FINALIZER: &'static str = SECRET_FINALIZER;
    type Full = WorkloadIdentity;
    fn api(client: kube::Client, namespace: &str) -> Api<WorkloadIdentity> {
        Api::namespaced(client, namespace)
    }
    fn users(&self, ctx: &Context) -> Vec<String> {
        let (ns, name) = namespace_and_name(self);
        decide::credentials_users(decide::CredentialsKind::WorkloadIdentity, &ns, &name, ctx.binding_refs().iter())
    }
}

pub async fn reconcile<K: Protected>(obj: Arc<K>, ctx: Arc<Context>) -> Result<Action, Error> {
    let common = ctx.common(K::CONTROLLER);
    runtime::instrumented(common, obj.as_ref(), protect(obj.as_ref(), &ctx)).await
}

pub fn error_policy<K: Protected>(obj: Arc<K>, _error: &Error, ctx: Arc<Context>) -> Action {
    ctx.common(K::CONTROLLER).retry_after_failure(obj.as_ref())
}

#[tracing::instrument(skip_all, fields(controller = K::CONTROLLER, object = %obj.name_any()))]
async fn protect<K: Protected>(obj: &K, ctx: &Context) -> Result<Action, Error> {
    let users = obj.users(ctx);
    let has = obj.finalizers().iter().any(|f| f == K::FINALIZER);
    let deleting = obj.meta().deletion_timestamp.is_some();
    let (namespace, name) = namespace_and_name(obj);
    let what = if namespace.is_empty() {
        format!("{} {name}", K::kind(&()))
    } else {
        format!("{} {namespace}/{name}", K::kind(&()))
    };
    let finalizers = match decide::step(&what, has, deleting, &users) {
        Step::Nothing => return Ok(Action::await_change()),
        Step::Blocked(message) => {
            tracing::info!(%message, "deletion waits for the users");
            ctx.common(K::CONTROLLER).event(obj, EventType::Warning, "DeletionBlocked", "Delete", message).await;
            return Ok(Action::await_change());
        }
        Step::AddFinalizer => {
            let mut f = obj.finalizers().to_vec();
            f.push(K::FINALIZER.into());
            f
        }
        Step::RemoveFinalizer => obj.finalizers().iter().filter(|f| *f != K::FINALIZER).cloned().collect(),
    };
    tracing::info!(%what, ?users, "updating the protection finalizer");
    let api = K::api(ctx.client().clone(), &namespace);
    let patch = json!({"metadata": {"finalizers": finalizers, "resourceVersion": obj.resource_version()}});
    match api.patch_metadata(&name, &PatchParams::default(), &Patch::Merge(&patch)).await {
        // Gone already (an earlier removal was the last finalizer): nothing left to protect.
        Err(kube::Error::Api(s)) if s.code == 404 => {}
        result => {
            result.map_err(|source| Error { what: format!("updating the finalizers of {what}"), source })?;
        }
    }
    Ok(Action::await_change())
}
