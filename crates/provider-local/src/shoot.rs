//! Reaching a shoot's own API server from the seed: with the admin kubeconfig gardenlet keeps
//! as the Secret `kubeconfig-admin` in the shoot's seed namespace. The Worker uses it for the
//! shoot's Nodes, the ControlPlane for what it deploys into the shoot.

use crate::common::{describe, technical_id};
use crate::error::Error;
use extension_sdk::k8s_openapi::api::core::v1::Secret;
use extension_sdk::kube::config::{KubeConfigOptions, Kubeconfig};
use extension_sdk::kube::{Api, Client, Config, Resource};
use std::time::Duration;

/// The Secret with the shoot's admin kubeconfig, in the shoot's seed namespace.
pub const KUBECONFIG_SECRET: &str = "kubeconfig-admin";
/// Its data key.
pub const KUBECONFIG_KEY: &str = "kubeconfig";

/// Bounds on each call to a shoot's API server, so that an API server that is not there yet
/// makes a reconcile fail (and retry) quickly instead of holding it.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const READ_TIMEOUT: Duration = Duration::from_secs(30);

/// A client for the shoot's API; `Ok(None)` when the kubeconfig Secret does not exist (a shoot
/// not managed by gardenlet, or not that far yet). Building the client does not contact the
/// shoot.
pub async fn shoot_client(seed: &Client, technical_id: &str) -> Result<Option<Client>, Error> {
    let object = format!("Secret {technical_id}/{KUBECONFIG_SECRET}");
    let secrets: Api<Secret> = Api::namespaced(seed.clone(), technical_id);
    let Some(secret) = secrets.get_opt(KUBECONFIG_SECRET).await.map_err(Error::kube(format!("reading {object}")))?
    else {
        return Ok(None);
    };
    let bytes = secret
        .data
        .and_then(|d| d.get(KUBECONFIG_KEY).map(|b| b.0.clone()))
        .ok_or_else(|| Error::dependency(&object, format!("no data key {KUBECONFIG_KEY}")))?;
    let yaml = String::from_utf8(bytes).map_err(|_| Error::dependency(&object, "the kubeconfig is not UTF-8"))?;
    let kubeconfig = Kubeconfig::from_yaml(&yaml)
        .map_err(|e| Error::dependency(&object, format!("the kubeconfig does not parse: {e}")))?;
    let mut config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(|e| Error::dependency(&object, format!("the kubeconfig is not usable: {e}")))?;
    config.connect_timeout = Some(CONNECT_TIMEOUT);
    config.read_timeout = Some(READ_TIMEOUT);
    // No retries inside the client: a refused eviction (429, a PodDisruptionBudget) is an answer
    // the Worker's drain reports and asks again at its next reconcile; kube's default would
    // retry it with backoff for many minutes and hold the reconcile meanwhile.
    config.default_retry = false;
    Client::try_from(config)
        .map(Some)
        .map_err(|e| Error::dependency(&object, format!("no client from the kubeconfig: {e}")))
}

/// The client for the shoot of the extension object `obj` (in the shoot's seed namespace); an
/// error naming the Secret while gardenlet has not written it yet (a retry mends that).
pub async fn required_client<K: Resource<DynamicType = ()>>(seed: &Client, obj: &K) -> Result<Client, Error> {
    let id = technical_id(obj)?;
    shoot_client(seed, &id).await?.ok_or_else(|| {
        Error::dependency(
            describe(obj),
            format!("the shoot's admin kubeconfig (Secret {id}/{KUBECONFIG_SECRET}) is not there yet"),
        )
    })
}
