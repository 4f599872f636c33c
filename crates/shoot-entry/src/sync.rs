//! The sync: watches the routes ConfigMap and keeps haproxy's map equal to it, in the file
//! (what haproxy loads when it starts) and in the running process (Runtime API, no reload, so
//! open connections stay). A missing ConfigMap means no routes.

use crate::haproxy::{self, RuntimeApi};
use crate::routes::{self, Routes};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How often the running map is compared with the ConfigMap even when nothing changed: a
/// haproxy that restarted loads the file, but the file may have been written while it started.
pub const RESYNC: Duration = Duration::from_secs(30);

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("writing haproxy's map file {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("reading ConfigMap {namespace}/{name}: {source}")]
    Read {
        namespace: String,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error(transparent)]
    Haproxy(#[from] haproxy::Error),
    #[error("the watch of ConfigMap {namespace}/{name} ended")]
    WatchEnded { namespace: String, name: String },
}

/// Where the routes come from and where they go.
#[derive(Clone, Debug)]
pub struct RouteSync {
    pub namespace: String,
    pub configmap: String,
    /// The map file haproxy's configuration names (its `map()` converter and the commands).
    pub map_file: PathBuf,
    pub haproxy: RuntimeApi,
}

impl RouteSync {
    /// The routes the ConfigMap holds now (none when it does not exist), problems logged.
    pub async fn read(&self, client: &Client) -> Result<Routes, Error> {
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), &self.namespace);
        let cm = api.get_opt(&self.configmap).await.map_err(|source| Error::Read {
            namespace: self.namespace.clone(),
            name: self.configmap.clone(),
            source,
        })?;
        Ok(self.routes_of(cm.as_ref()))
    }

    fn routes_of(&self, cm: Option<&ConfigMap>) -> Routes {
        let data = cm.and_then(|c| c.data.clone()).unwrap_or_default();
        let (routes, problems) = routes::parse(&data);
        for problem in problems {
            tracing::warn!(configmap = %self.configmap, %problem, "route left out");
        }
        routes
    }

    /// Writes the map file (atomically: a new file renamed over the old one).
    pub fn write_file(&self, routes: &Routes) -> Result<(), Error> {
        write_atomically(&self.map_file, &routes::map_file(routes))
    }

    /// Makes haproxy's running map equal to `routes`; returns how many entries changed.
    pub async fn apply(&self, routes: &Routes) -> Result<usize, Error> {
        let file = self.map_file.display().to_string();
        let shown = self.haproxy.run(&format!("show map {file}")).await?;
        let changes = routes::changes(&routes::parse_show_map(&shown), routes);
        for change in &changes {
            self.haproxy.change(&change.command(&file)).await?;
        }
        Ok(changes.len())
    }

    /// File first, then the running map: a haproxy restarting in between loads the new file.
    async fn converge(&self, routes: &Routes) -> Result<(), Error> {
        self.write_file(routes)?;
        let changed = self.apply(routes).await?;
        if changed > 0 {
            tracing::info!(routes = routes.len(), changed, "haproxy's routes updated");
        }
        Ok(())
    }

    /// Runs until the watch ends: every change of the ConfigMap, and every [`RESYNC`], brings
    /// haproxy's map to the ConfigMap's routes. A haproxy that is not (yet) answering is
    /// retried at the next event or resync; the file is current regardless.
    pub async fn run(&self, client: Client) -> Result<(), Error> {
        let api: Api<ConfigMap> = Api::namespaced(client, &self.namespace);
        let config = watcher::Config::default().fields(&format!("metadata.name={}", self.configmap));
        let mut events = std::pin::pin!(watcher(api, config).default_backoff());
        let mut current: Option<Routes> = None;
        let mut listing: BTreeMap<String, String> = BTreeMap::new();
        let mut resync = tokio::time::interval(RESYNC);
        loop {
            tokio::select! {
                event = events.next() => {
                    let Some(event) = event else {
                        return Err(Error::WatchEnded { namespace: self.namespace.clone(), name: self.configmap.clone() });
                    };
                    let routes = match event {
                        Ok(watcher::Event::Apply(cm)) => Some(self.routes_of(Some(&cm))),
                        Ok(watcher::Event::Delete(_)) => Some(Routes::new()),
                        Ok(watcher::Event::Init) => { listing.clear(); None }
                        Ok(watcher::Event::InitApply(cm)) => { listing = cm.data.unwrap_or_default(); None }
                        Ok(watcher::Event::InitDone) => {
                            let (routes, problems) = routes::parse(&listing);
                            for problem in problems {
                                tracing::warn!(configmap = %self.configmap, %problem, "route left out");
                            }
                            Some(routes)
                        }
                        Err(e) => { tracing::warn!(error = %e, "watching the routes"); None }
                    };
                    if let Some(routes) = routes {
                        current = Some(routes);
                    } else {
                        continue;
                    }
                }
                _ = resync.tick() => {}
            }
            if let Some(routes) = &current
                && let Err(e) = self.converge(routes).await
            {
                tracing::warn!(error = %runtime::cli::report(&e), "haproxy's routes not updated; retrying");
            }
        }
    }
}

fn write_atomically(path: &Path, content: &str) -> Result<(), Error> {
    let err = |source| Error::Write { path: path.to_path_buf(), source };
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, content).map_err(err)?;
    std::fs::rename(&tmp, path).map_err(err)
}
