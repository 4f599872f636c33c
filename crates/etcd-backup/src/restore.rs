//! The restore before etcd starts (the pod's init container): when the data directory holds no
//! etcd member and the store holds backups, etcd's data is rebuilt from them: the migration's
//! final snapshot when one is pending, otherwise the newest full snapshot and every delta after
//! it. `etcdctl snapshot restore` builds a data directory from the full snapshot (into a scratch
//! directory, renamed at the end, so an interrupted restore leaves nothing half written); the
//! deltas are then applied by a temporary etcd on that directory, listening on loopback only, one
//! transaction per original revision, so the revisions (the API server's resourceVersions) come
//! out as they were.

use crate::chain::{self, Chain};
use crate::delta;
use crate::gateway::Etcd;
use crate::snapshot::{self, SnapshotError};
use crate::store::Store;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
    #[error(transparent)]
    Gateway(#[from] crate::gateway::GatewayError),
    #[error("the delta snapshot {file} is unusable: {reason}")]
    Delta { file: String, reason: String },
    #[error("{command} failed: {reason}")]
    Command { command: String, reason: String },
    #[error("{action} {}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the temporary etcd did not answer within {0:?}")]
    NotReady(Duration),
}

/// Everything the restore needs to know (also the flags of `etcd-backup restore`).
#[derive(Debug, Clone, clap::Args)]
pub struct Options {
    /// The backup store (a directory).
    #[arg(long)]
    pub store: PathBuf,
    #[arg(long)]
    pub data_dir: PathBuf,
    /// The member's name and cluster (as etcd gets them).
    #[arg(long)]
    pub name: String,
    #[arg(long)]
    pub initial_cluster: String,
    #[arg(long)]
    pub initial_advertise_peer_urls: String,
    /// A migration's final snapshot in the store (a file name); preferred while it exists.
    #[arg(long)]
    pub final_snapshot: Option<String>,
    #[arg(long, default_value = "etcd")]
    pub etcd: PathBuf,
    #[arg(long, default_value = "etcdctl")]
    pub etcdctl: PathBuf,
}

/// What was done, for the init container's termination message and the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The data directory holds a member: etcd starts from it.
    DataPresent,
    /// Nothing to restore from: etcd starts empty.
    NoBackup,
    Restored {
        from: String,
        deltas: usize,
        revision: i64,
        gap_at: Option<i64>,
    },
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Outcome::DataPresent => f.write_str("the data directory holds an etcd member; nothing restored"),
            Outcome::NoBackup => f.write_str("no data directory and no backup; etcd starts empty"),
            Outcome::Restored { from, deltas, revision, gap_at } => {
                write!(f, "restored from {from} and {deltas} delta snapshots up to revision {revision}")?;
                if let Some(gap) = gap_at {
                    write!(f, "; the deltas from revision {gap} on are missing, later ones were not applied")?;
                }
                Ok(())
            }
        }
    }
}

fn io_err(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> RestoreError {
    let path = path.to_path_buf();
    move |source| RestoreError::Io { action, path, source }
}

/// Restores when there is something to restore and nothing to lose.
pub async fn run(options: &Options) -> Result<Outcome, RestoreError> {
    if options.data_dir.join("member").is_dir() {
        return Ok(Outcome::DataPresent);
    }
    let store = Store::new(&options.store);
    let final_snapshot = options.final_snapshot.as_ref().map(|f| options.store.join(f)).filter(|p| p.is_file());
    let scratch = scratch_dir(&options.data_dir);
    remove_dir(&scratch).await?;
    let outcome = if let Some(path) = final_snapshot {
        snapshot::verify_file(&path).await?;
        etcdctl_restore(options, &path, &scratch).await?;
        let revision = with_temporary_etcd(options, &scratch, |_| async { Ok(()) }).await?;
        Outcome::Restored { from: file_name(&path), deltas: 0, revision, gap_at: None }
    } else {
        let Some(chain) = chain::restore_chain(&store.list().await?) else {
            return Ok(Outcome::NoBackup);
        };
        restore_chain(options, &store, &chain, &scratch).await?
    };
    remove_dir(&options.data_dir).await?;
    tokio::fs::rename(&scratch, &options.data_dir)
        .await
        .map_err(io_err("renaming the restored data to", &options.data_dir))?;
    Ok(outcome)
}

fn scratch_dir(data_dir: &Path) -> PathBuf {
    let mut s = data_dir.as_os_str().to_owned();
    s.push(".restore");
    PathBuf::from(s)
}

fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

async fn remove_dir(path: &Path) -> Result<(), RestoreError> {
    match tokio::fs::remove_dir_all(path).await {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_err("removing", path)(e)),
    }
}

async fn restore_chain(
    options: &Options,
    store: &Store,
    chain: &Chain,
    scratch: &Path,
) -> Result<Outcome, RestoreError> {
    let full = store.path(&chain.full);
    snapshot::verify_file(&full).await?;
    // Every delta is read and checked before anything is applied.
    let mut deltas = Vec::new();
    for d in &chain.deltas {
        let bytes = store.read(d).await?;
        let revisions = delta::decode(&bytes).map_err(|reason| RestoreError::Delta { file: d.file_name(), reason })?;
        deltas.push((d.file_name(), revisions));
    }
    etcdctl_restore(options, &full, scratch).await?;
    let revision = with_temporary_etcd(options, scratch, |etcd| async move {
        let mut current = etcd.revision().await?;
        for (file, revisions) in &deltas {
            for r in revisions {
                if r.revision <= current {
                    continue;
                }
                let got = etcd.apply(&r.events).await?;
                if got != r.revision {
                    tracing::warn!(file, expected = r.revision, got, "a replayed revision came out as another");
                }
                current = got;
            }
        }
        Ok(())
    })
    .await?;
    tracing::info!(full = %chain.full.file_name(), deltas = chain.deltas.len(), revision, "restored");
    Ok(Outcome::Restored { from: chain.full.file_name(), deltas: chain.deltas.len(), revision, gap_at: chain.gap_at })
}

async fn etcdctl_restore(options: &Options, snapshot: &Path, scratch: &Path) -> Result<(), RestoreError> {
    let output = tokio::process::Command::new(&options.etcdctl)
        .env("ETCDCTL_API", "3")
        .arg("snapshot")
        .arg("restore")
        .arg(snapshot)
        .arg(format!("--data-dir={}", scratch.display()))
        .arg(format!("--name={}", options.name))
        .arg(format!("--initial-cluster={}", options.initial_cluster))
        .arg(format!("--initial-advertise-peer-urls={}", options.initial_advertise_peer_urls))
        .output()
        .await
        .map_err(io_err("running", &options.etcdctl))?;
    if !output.status.success() {
        return Err(RestoreError::Command {
            command: format!("etcdctl snapshot restore {}", snapshot.display()),
            reason: String::from_utf8_lossy(&output.stderr).trim().to_string(),
        });
    }
    Ok(())
}

/// Two free loopback ports.
fn free_ports() -> Result<(u16, u16), RestoreError> {
    let bind = || std::net::TcpListener::bind("127.0.0.1:0").map_err(io_err("binding", Path::new("127.0.0.1:0")));
    let (a, b) = (bind()?, bind()?);
    let port = |l: &std::net::TcpListener| {
        l.local_addr().map(|a| a.port()).map_err(io_err("binding", Path::new("127.0.0.1:0")))
    };
    Ok((port(&a)?, port(&b)?))
}

const READY_WITHIN: Duration = Duration::from_secs(60);

/// Starts etcd on the restored `data_dir` (loopback only, no TLS: nothing else in the pod runs
/// yet), runs `body` against it, stops it, and returns its final revision.
async fn with_temporary_etcd<F, Fut>(options: &Options, data_dir: &Path, body: F) -> Result<i64, RestoreError>
where
    F: FnOnce(Etcd) -> Fut,
    Fut: std::future::Future<Output = Result<(), RestoreError>>,
{
    let (client, peer) = free_ports()?;
    let url = format!("http://127.0.0.1:{client}");
    let mut child = tokio::process::Command::new(&options.etcd)
        .arg(format!("--name={}", options.name))
        .arg(format!("--data-dir={}", data_dir.display()))
        .arg(format!("--listen-client-urls={url}"))
        .arg(format!("--advertise-client-urls={url}"))
        .arg(format!("--listen-peer-urls=http://127.0.0.1:{peer}"))
        .arg("--quota-backend-bytes=8589934592")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(io_err("starting", &options.etcd))?;
    let result = async {
        let etcd = Etcd::new(&url, "", None).await?;
        let deadline = tokio::time::Instant::now() + READY_WITHIN;
        while etcd.revision().await.is_err() {
            if tokio::time::Instant::now() >= deadline {
                return Err(RestoreError::NotReady(READY_WITHIN));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        body(etcd.clone()).await?;
        Ok(etcd.revision().await?)
    }
    .await;
    stop(&mut child).await;
    result
}

/// SIGTERM, then SIGKILL after ten seconds.
pub(crate) async fn stop(child: &mut tokio::process::Child) {
    if let Some(pid) = child.id().and_then(|p| i32::try_from(p).ok()).and_then(rustix::process::Pid::from_raw) {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
    }
    if tokio::time::timeout(Duration::from_secs(10), child.wait()).await.is_err() {
        let _ = child.kill().await;
    }
}
