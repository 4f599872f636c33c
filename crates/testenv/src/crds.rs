//! Installing CRDs and waiting until the API server serves them.

use crate::Error;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::api::{Patch, PatchParams};
use std::time::{Duration, Instant};

const ESTABLISH_TIMEOUT: Duration = Duration::from_secs(60);

/// Applies the CRDs (server-side apply) and waits until every one is `Established`.
pub async fn install_crds(client: &kube::Client, crds: &[CustomResourceDefinition]) -> Result<(), Error> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let params = PatchParams::apply("testenv").force();
    let started = Instant::now();
    for crd in crds {
        let name = crd.metadata.name.clone().unwrap_or_default();
        let apply = Patch::Apply(crd);
        again_on_5xx(started, || api.patch(&name, &params, &apply))
            .await
            .map_err(|source| Error::Kube { what: format!("applying CRD {name}"), source })?;
    }
    let names: Vec<String> = crds.iter().map(|c| c.metadata.name.clone().unwrap_or_default()).collect();
    wait_established(client, &names).await
}

/// Waits until every CRD in `names` exists and is `Established` (e.g. after a Helm install).
pub async fn wait_established(client: &kube::Client, names: &[String]) -> Result<(), Error> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let started = Instant::now();
    for name in names {
        loop {
            let current = again_on_5xx(started, || api.get_opt(name))
                .await
                .map_err(|source| Error::Kube { what: format!("reading CRD {name}"), source })?;
            if current.as_ref().is_some_and(is_established) {
                break;
            }
            if started.elapsed() > ESTABLISH_TIMEOUT {
                let conditions = current
                    .and_then(|c| c.status)
                    .and_then(|s| s.conditions)
                    .map_or_else(|| "the CRD does not exist".into(), |c| format!("{c:?}"));
                return Err(Error::NotReady {
                    what: format!("CRD {name} Established"),
                    timeout: ESTABLISH_TIMEOUT,
                    log_tail: conditions,
                });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    Ok(())
}

/// Runs `request`, asking again every 250 ms while it is answered with a 5xx and
/// [`ESTABLISH_TIMEOUT`] since `started` has not passed: a fresh API server briefly answers 5xx
/// while its storage settles (seen under load in CI: `500 rpc error: code = Internal desc =
/// unexpected EOF` right after `/readyz` said ok). Other errors are returned at once.
async fn again_on_5xx<T, Fut>(started: Instant, request: impl Fn() -> Fut) -> Result<T, kube::Error>
where
    Fut: std::future::Future<Output = Result<T, kube::Error>>,
{
    loop {
        match request().await {
            Err(kube::Error::Api(status)) if status.code >= 500 && started.elapsed() < ESTABLISH_TIMEOUT => {
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            answer => return answer,
        }
    }
}

/// True when the CRD has the condition `Established=True`.
pub fn is_established(crd: &CustomResourceDefinition) -> bool {
    crd.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Established" && c.status == "True"))
}
