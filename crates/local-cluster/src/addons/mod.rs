//! The cluster's add-ons, run by `local-cluster addons` as one host process next to the
//! kubelet: cluster DNS ([`dns`], records computed by [`records`] from Services and by
//! [`zones`] from provider-local's zone ConfigMaps) and the host-path storage
//! provisioner ([`storage`]). Both watch the API server through shared reflectors and act on
//! changes only.

pub mod dns;
pub mod records;
pub mod storage;
pub mod zones;

use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::settings::{CLUSTER_DOMAIN, DNS_PORT, NODE_IP};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Endpoints, Service};
use kube::Api;
use kube::runtime::{WatchStreamExt, reflector, watcher};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// Runs DNS and storage until the process ends, as the add-ons user (`config/addons.kubeconfig`).
pub async fn run(layout: &Layout) -> Result<()> {
    let client = crate::up::client_from(&layout.config_file("addons.kubeconfig")).await?;
    let dns =
        cluster_dns(client.clone(), CLUSTER_DOMAIN, SocketAddr::from((NODE_IP, DNS_PORT)), Some(zones::ZONE_NAMESPACE));
    let storage = storage::run(client, layout.volumes());
    tokio::select! {
        r = dns => r,
        r = storage => r,
    }
}

/// Serves cluster DNS for `domain` on `listen` from watches of Services and Endpoints, and,
/// with `zone_namespace`, the extra zones kept as ConfigMaps there ([`zones`]). Runs until an
/// error; the local cluster's add-ons and the shoots' `cluster-dns` both run this.
pub async fn cluster_dns(
    client: kube::Client,
    domain: &str,
    listen: SocketAddr,
    zone_namespace: Option<&str>,
) -> Result<()> {
    let zones = dns::Zones::new(domain)?;
    let (services, svc_writer) = reflector::store::<Service>();
    let (endpoints, ep_writer) = reflector::store::<Endpoints>();
    let changed = Arc::new(tokio::sync::Notify::new());
    let svc_stream = watch_into(Api::<Service>::all(client.clone()), svc_writer, changed.clone());
    let ep_stream = watch_into(Api::<Endpoints>::all(client.clone()), ep_writer, changed.clone());
    let (config_maps, cm_writer) = reflector::store::<ConfigMap>();
    let cm_stream = async {
        match zone_namespace {
            Some(ns) => {
                watch_into_with(
                    Api::<ConfigMap>::namespaced(client.clone(), ns),
                    watcher::Config::default().labels(zones::ZONE_LABEL),
                    cm_writer,
                    changed.clone(),
                )
                .await
            }
            None => futures::future::pending::<()>().await,
        }
    };
    let updater = {
        let zones = zones.clone();
        let changed = changed.clone();
        async move {
            let mut current = dns::Snapshot::default();
            let mut serial: u32 = 1;
            loop {
                changed.notified().await;
                // Coalesce a burst of events (a rollout touches many Endpoints) into one rebuild.
                tokio::time::sleep(Duration::from_millis(100)).await;
                let next = dns::snapshot(&services, &endpoints, &config_maps, domain);
                if next != current {
                    serial = serial.wrapping_add(1);
                    if next.problems != current.problems {
                        for problem in &next.problems {
                            tracing::warn!(problem = %problem, "DNS zone record not served");
                        }
                    }
                    match zones.replace(&next.cluster, &next.extra, serial) {
                        Ok(()) => {
                            tracing::debug!(
                                names = next.cluster.names.len(),
                                reverse = next.cluster.reverse.len(),
                                zones = next.extra.len(),
                                serial,
                                "DNS zones updated"
                            );
                            current = next;
                        }
                        Err(e) => tracing::warn!(error = %crate::report(&e), "DNS zone update"),
                    }
                }
            }
        }
    };
    let server = dns::serve(zones, listen);
    tokio::select! {
        r = server => r,
        () = svc_stream => Err(Error::Dns("the Service watch ended".into())),
        () = ep_stream => Err(Error::Dns("the Endpoints watch ended".into())),
        () = cm_stream => Err(Error::Dns("the zone ConfigMap watch ended".into())),
        () = updater => Ok(()),
    }
}

/// Keeps `writer`'s store in step with `api` and wakes `changed` on every touched object.
async fn watch_into<K>(api: Api<K>, writer: reflector::store::Writer<K>, changed: Arc<tokio::sync::Notify>)
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + Sync + 'static,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone,
{
    watch_into_with(api, watcher::Config::default(), writer, changed).await;
}

/// [`watch_into`] with a watcher configuration (a label selector).
async fn watch_into_with<K>(
    api: Api<K>,
    config: watcher::Config,
    writer: reflector::store::Writer<K>,
    changed: Arc<tokio::sync::Notify>,
) where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + Sync + 'static,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone,
{
    reflector(writer, watcher(api, config))
        .default_backoff()
        .touched_objects()
        .for_each(|_| {
            changed.notify_one();
            futures::future::ready(())
        })
        .await;
}
