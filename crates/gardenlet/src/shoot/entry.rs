//! A shoot's routes at the seed's entry point (GEP-8, `crates/shoot-entry`): its host names go
//! to its kube-apiserver Service. Each shoot owns one data key (its technical ID) of the routes
//! ConfigMap; a write changes only that key, guarded by the ConfigMap's resourceVersion, so
//! shoots reconciled at the same time never clobber each other, and a name another shoot already
//! has is refused rather than taken over.

use crate::config::ShootEntryConfig;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::json;
use shoot_entry::routes::{self, ROUTES_CONFIGMAP};
use std::collections::BTreeMap;
use std::net::IpAddr;

/// Attempts of a read-modify-write before giving up on concurrent writers.
const ATTEMPTS: usize = 8;
const FIELD_MANAGER: &str = "gardenlet";

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("the entry point's Service {namespace}/{name}: {source}")]
    Service {
        namespace: String,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("the entry point's Service {namespace}/{name} has no address yet")]
    NoAddress { namespace: String, name: String },
    #[error("the entry point's routes ({namespace}/{ROUTES_CONFIGMAP}) for {shoot}: {source}")]
    Routes {
        namespace: String,
        shoot: String,
        #[source]
        source: kube::Error,
    },
    #[error("{host} already routes to shoot {other} at the entry point; shoot {shoot} cannot have it too")]
    Taken { host: String, other: String, shoot: String },
    #[error("{shoot}: {value:?} is not an IP address (the kube-apiserver Service's address)")]
    BadAddress { shoot: String, value: String },
    #[error("the entry point's routes for {shoot} changed under us {ATTEMPTS} times in a row")]
    Contended { shoot: String },
}

/// The entry point's address: its Service's load-balancer address, else its cluster IP.
pub async fn address(seed: &Client, config: &ShootEntryConfig) -> Result<String, Error> {
    let api: Api<Service> = Api::namespaced(seed.clone(), &config.namespace);
    let svc = api.get(&config.service).await.map_err(|source| Error::Service {
        namespace: config.namespace.clone(),
        name: config.service.clone(),
        source,
    })?;
    crate::components::kube_apiserver::service_address(&svc)
        .ok_or_else(|| Error::NoAddress { namespace: config.namespace.clone(), name: config.service.clone() })
}

/// Routes `hosts` of shoot `technical_id` to `address` (its kube-apiserver Service).
pub async fn publish(
    seed: &Client,
    config: &ShootEntryConfig,
    technical_id: &str,
    hosts: &[String],
    address: &str,
) -> Result<(), Error> {
    let ip: IpAddr = address
        .parse()
        .map_err(|_| Error::BadAddress { shoot: technical_id.to_string(), value: address.to_string() })?;
    let value = routes::value(hosts, ip);
    let api: Api<ConfigMap> = Api::namespaced(seed.clone(), &config.namespace);
    let kube_err =
        |source| Error::Routes { namespace: config.namespace.clone(), shoot: technical_id.to_string(), source };
    for _ in 0..ATTEMPTS {
        let Some(cm) = api.get_opt(ROUTES_CONFIGMAP).await.map_err(kube_err)? else {
            let cm = ConfigMap {
                metadata: ObjectMeta { name: Some(ROUTES_CONFIGMAP.into()), ..Default::default() },
                data: Some(BTreeMap::from([(technical_id.to_string(), value.clone())])),
                ..Default::default()
            };
            match api.create(&PostParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() }, &cm).await
            {
                Ok(_) => return Ok(()),
                Err(kube::Error::Api(s)) if s.code == 409 => continue,
                Err(e) => return Err(kube_err(e)),
            }
        };
        let data = cm.data.clone().unwrap_or_default();
        if let Some((host, other)) = routes::conflicts(&data, technical_id, hosts).into_iter().next() {
            return Err(Error::Taken { host, other, shoot: technical_id.to_string() });
        }
        if data.get(technical_id) == Some(&value) {
            return Ok(());
        }
        let patch = json!({
            "metadata": { "resourceVersion": cm.metadata.resource_version },
            "data": { technical_id: value },
        });
        let params = PatchParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() };
        match api.patch(ROUTES_CONFIGMAP, &params, &Patch::Merge(&patch)).await {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(s)) if s.code == 409 => continue,
            Err(e) => return Err(kube_err(e)),
        }
    }
    Err(Error::Contended { shoot: technical_id.to_string() })
}

/// Removes shoot `technical_id`'s routes (nothing when there are none).
pub async fn withdraw(seed: &Client, config: &ShootEntryConfig, technical_id: &str) -> Result<(), Error> {
    let api: Api<ConfigMap> = Api::namespaced(seed.clone(), &config.namespace);
    let kube_err =
        |source| Error::Routes { namespace: config.namespace.clone(), shoot: technical_id.to_string(), source };
    let Some(cm) = api.get_opt(ROUTES_CONFIGMAP).await.map_err(kube_err)? else {
        return Ok(());
    };
    if !cm.data.as_ref().is_some_and(|d| d.contains_key(technical_id)) {
        return Ok(());
    }
    // A merge patch deleting one key touches no other shoot's key; no guard needed.
    let patch = json!({ "data": { technical_id: null } });
    let params = PatchParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() };
    match api.patch(ROUTES_CONFIGMAP, &params, &Patch::Merge(&patch)).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(kube_err(e)),
    }
}
