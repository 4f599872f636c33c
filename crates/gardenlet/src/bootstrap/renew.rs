//! The renewal of the garden certificate, in the background of a running gardenlet: it waits
//! until [`super::decide::renew_at`] or until the Seed carries
//! `gardener.cloud/operation: renew-kubeconfig` (the annotation is removed, as Gardener's
//! gardenlet does), obtains a new certificate, writes the Secret, and returns: the caller stops
//! the process so that it starts again with the new certificate (Gardener's gardenlet restarts
//! itself the same way). A failed attempt is logged and tried again after [`RETRY`].

use super::{Bootstrap, decide};
use api::core::Seed;
use api::helpers::constants::ANNOTATION_OPERATION;
use futures::{Stream, StreamExt};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams};
use kube::core::PartialObjectMeta;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, ResourceExt};
use std::time::Duration;

/// The Seed annotation value that asks for a renewal now.
pub const RENEW_KUBECONFIG: &str = "renew-kubeconfig";
/// How long after a failed renewal it is tried again.
pub const RETRY: Duration = Duration::from_secs(30);

/// Why the renewal wants the process restarted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Restart {
    /// A new certificate is in the Secret.
    Renewed { not_after: Timestamp },
    /// Another replica already wrote a newer certificate.
    Replaced,
}

/// What started a renewal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Trigger {
    Due,
    Asked,
}

/// Runs until the certificate `current` (the identity `garden` uses) has been replaced in the
/// Secret; never returns otherwise.
#[tracing::instrument(skip_all, fields(seed = %bootstrap.seed_name))]
pub async fn run(bootstrap: Bootstrap, current: decide::Certificate, garden: Client) -> Restart {
    let asked = asked_to_renew(garden.clone(), bootstrap.seed_name.clone());
    let mut asked = std::pin::pin!(asked);
    let mut trigger = None;
    loop {
        if trigger.is_none() {
            let wait = decide::until(Timestamp::now(), decide::renew_at(&current));
            tracing::info!(renew_at = %decide::renew_at(&current), "the garden certificate is renewed then");
            trigger = tokio::select! {
                _ = tokio::time::sleep(wait) => Some(Trigger::Due),
                Some(()) = asked.next() => Some(Trigger::Asked),
            };
        }
        if trigger == Some(Trigger::Asked) {
            tracing::info!("the Seed asks for a new garden kubeconfig ({ANNOTATION_OPERATION}: {RENEW_KUBECONFIG})");
            if let Err(e) = remove_annotation(&garden, &bootstrap.seed_name).await {
                tracing::warn!(error = %runtime::events::error_chain(&e), "removing the renew-kubeconfig annotation failed");
            }
        }
        match renew_once(&bootstrap, &current, &garden).await {
            Ok(restart) => return restart,
            Err(e) => {
                tracing::warn!(error = %runtime::events::error_chain(&e), retry_in = ?RETRY, "renewing the garden certificate failed");
                tokio::time::sleep(RETRY).await;
            }
        }
    }
}

/// One renewal: unless another replica already replaced `current` in the Secret, a new
/// certificate.
async fn renew_once(
    bootstrap: &Bootstrap,
    current: &decide::Certificate,
    garden: &Client,
) -> Result<Restart, super::Error> {
    let now = Timestamp::now();
    if let Some(kubeconfig) = super::secret::read(&bootstrap.seed, &bootstrap.connection.kubeconfig_secret).await? {
        let held = super::secret::certificate_of(&kubeconfig).and_then(|pem| decide::parse_certificate(pem.as_bytes()));
        if let Ok(held) = held
            && held != *current
            && decide::usable(&held, &bootstrap.seed_name, now).is_ok()
            && decide::renew_at(&held) > now
        {
            tracing::info!(not_after = %held.not_after, "the Secret already holds a newer garden certificate");
            return Ok(Restart::Replaced);
        }
    }
    let renewed = bootstrap.renew(garden).await?;
    Ok(Restart::Renewed { not_after: renewed.certificate.not_after })
}

/// Yields each time the Seed is seen with the renew-kubeconfig annotation (errors of the watch
/// are retried with backoff; a Seed this identity may not watch never yields).
fn asked_to_renew(garden: Client, seed: String) -> impl Stream<Item = ()> + Send {
    let api = Api::<PartialObjectMeta<Seed>>::all(garden);
    let config = watcher::Config::default().fields(&format!("metadata.name={seed}"));
    watcher(api, config).default_backoff().applied_objects().filter_map(
        |seed: Result<PartialObjectMeta<Seed>, _>| async move {
            match seed {
                Ok(s) => (s.annotations().get(ANNOTATION_OPERATION).map(String::as_str) == Some(RENEW_KUBECONFIG))
                    .then_some(()),
                Err(e) => {
                    tracing::debug!(error = %runtime::events::error_chain(&e), "watching the Seed for renew-kubeconfig");
                    None
                }
            }
        },
    )
}

async fn remove_annotation(garden: &Client, seed: &str) -> Result<(), kube::Error> {
    let patch = serde_json::json!({"metadata": {"annotations": {(ANNOTATION_OPERATION): null}}});
    Api::<Seed>::all(garden.clone()).patch_metadata(seed, &PatchParams::default(), &Patch::Merge(patch)).await?;
    Ok(())
}
