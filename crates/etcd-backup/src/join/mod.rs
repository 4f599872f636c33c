//! A member's way into a multi-member etcd (the init step before etcd in each member's pod), as
//! etcd-backup-restore does it for etcd-druid: the first member bootstraps the cluster alone; every
//! other member, and any member that lost its data directory while the others run, joins the
//! running cluster as a **learner** (it receives the data but does not vote, so a member that
//! never comes up cannot cost the quorum), is promoted to a voting member once it has caught up,
//! and only then hands its data directory to etcd. A member whose old entry is still in the
//! cluster (its volume was lost) is removed first. Members join one at a time (etcd allows one
//! learner); a second one waits.
//!
//! While it joins, the member runs etcd itself with the pod's own flags plus
//! `--initial-cluster-state=existing` and the cluster's current members. Once the data directory
//! holds the member, etcd ignores those flags, so the pod's etcd container keeps one set of flags.

use crate::gateway::{Etcd, EtcdClientTls, GatewayError};
use crate::members::Member;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::time::{Instant, timeout};

#[derive(Debug, thiserror::Error)]
pub enum JoinError {
    #[error("--members names no member {0}")]
    NotAMember(String),
    #[error("--members entry {0:?} is not name=clientURL")]
    BadMember(String),
    #[error("reading {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("starting {}", path.display())]
    Start {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Gateway(#[from] GatewayError),
    #[error("{what}: not done within {within:?}; last error: {last}")]
    Timeout { what: &'static str, within: Duration, last: String },
    #[error("the joining etcd exited before it was promoted: {0}")]
    Exited(String),
    #[error("removing {}", path.display())]
    Remove {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The flags of `etcd-backup join`.
#[derive(Debug, Clone, clap::Args)]
pub struct Options {
    #[arg(long)]
    pub data_dir: PathBuf,
    /// This member's name.
    #[arg(long)]
    pub name: String,
    /// The peer URL this member advertises.
    #[arg(long)]
    pub peer_url: String,
    /// Every member as `name=clientURL`, comma-separated; the first bootstraps the cluster.
    #[arg(long, value_delimiter = ',', required = true)]
    pub members: Vec<String>,
    /// CA bundle, client certificate and key for the other members (PEM files). Without them,
    /// only plain `http://127.0.0.1` members (tests).
    #[arg(long, requires_all = ["cert", "key"])]
    pub cacert: Option<PathBuf>,
    #[arg(long)]
    pub cert: Option<PathBuf>,
    #[arg(long)]
    pub key: Option<PathBuf>,
    /// How long a member waits for the cluster (to answer, to take it as a learner, to promote
    /// it) before it gives up and the pod's restart tries again.
    #[arg(long, default_value_t = 300)]
    pub wait_seconds: u64,
    #[arg(long, default_value = "etcd")]
    pub etcd: PathBuf,
    /// etcd's own flags (after `--`): the joining member runs with them.
    #[arg(last = true)]
    pub etcd_args: Vec<String>,
}

/// What a member does before etcd starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// The data directory holds the member (and it votes): etcd starts from it.
    DataPresent,
    /// No other member answers and this is the first: etcd bootstraps the cluster alone (from
    /// a backup when the restore step finds one).
    Bootstrap,
    /// No member answers yet and this member may not bootstrap: ask again.
    Wait,
    /// Join the running cluster: get an entry ([`entry`], step by step), run etcd with
    /// [`initial_cluster`] of the members then, promote.
    Join,
    /// The data directory holds a member that is still a learner (a join that stopped before
    /// its promotion): run etcd and promote it.
    Promote { id: u64 },
}

/// A member's name in `initial-cluster`: its own, or for one that never started, the first
/// label of its peer URL's host (`etcd-main-2` of `https://etcd-main-2.etcd-main-peer...`).
fn member_name(m: &Member) -> String {
    if !m.name.is_empty() {
        return m.name.clone();
    }
    let url = m.peer_urls.first().map(String::as_str).unwrap_or_default();
    let host = url.split("://").nth(1).unwrap_or(url);
    host.split(['.', ':', '/']).next().unwrap_or(host).to_string()
}

/// The decision, from what is on disk and what the cluster says (`None`: nobody answered).
pub fn plan(data_present: bool, first: bool, peer_url: &str, members: Option<&[Member]>) -> Plan {
    let own = members.and_then(|all| all.iter().find(|m| m.peer_urls.iter().any(|u| u == peer_url)));
    if data_present {
        return match own {
            Some(m) if m.is_learner && !m.name.is_empty() => Plan::Promote { id: m.id },
            _ => Plan::DataPresent,
        };
    }
    match members {
        None if first => Plan::Bootstrap,
        None => Plan::Wait,
        Some(_) => Plan::Join,
    }
}

/// A joining member's next step with its entry in the cluster's `members`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    /// Added but never started (an earlier attempt stopped, or an add whose answer was lost):
    /// join with it.
    Use(u64),
    /// Started before (it has a name) but its data is gone: remove it; a new learner replaces it.
    Remove(u64),
    /// None: add this member as a learner.
    Add,
}

/// [`Entry`] for the member with `peer_url`.
pub fn entry(members: &[Member], peer_url: &str) -> Entry {
    match members.iter().find(|m| m.peer_urls.iter().any(|u| u == peer_url)) {
        Some(m) if m.name.is_empty() => Entry::Use(m.id),
        Some(m) => Entry::Remove(m.id),
        None => Entry::Add,
    }
}

/// `--initial-cluster` of a joining member: every member of the cluster (etcd refuses a list
/// that differs from its own), this one under its own name.
pub fn initial_cluster(members: &[Member], name: &str, peer_url: &str) -> String {
    let mut cluster: Vec<String> = members
        .iter()
        .filter(|m| !m.peer_urls.iter().any(|u| u == peer_url))
        .filter_map(|m| Some(format!("{}={}", member_name(m), m.peer_urls.first()?)))
        .collect();
    cluster.push(format!("{name}={peer_url}"));
    cluster.join(",")
}

/// What the step did, for the termination message and the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    DataPresent,
    Bootstrap,
    /// `starts`: how often its etcd was started until it was promoted (more than once when the
    /// cluster refused it at first).
    Joined {
        id: u64,
        members: usize,
        replaced: bool,
        starts: u32,
    },
    Promoted {
        id: u64,
        starts: u32,
    },
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Outcome::DataPresent => f.write_str("the data directory holds a voting member; etcd starts from it"),
            Outcome::Bootstrap => f.write_str("no other member answered; this first member bootstraps the cluster"),
            Outcome::Joined { id, members, replaced, starts } => write!(
                f,
                "joined as member {id:x} of {members}{}; its etcd started {starts} time(s)",
                if *replaced { ", replacing its entry whose data was lost" } else { "" }
            ),
            Outcome::Promoted { id, starts } => {
                write!(f, "member {id:x} was still a learner; promoted; its etcd started {starts} time(s)")
            }
        }
    }
}

/// One call bounded in time (a cluster without a quorum never answers some).
const CALL: Duration = Duration::from_secs(10);
const RETRY: Duration = Duration::from_millis(500);

struct Peers {
    /// The other members' clients, in `--members` order.
    others: Vec<Etcd>,
    first: bool,
}

async fn peers(options: &Options) -> Result<Peers, JoinError> {
    let tls = match (&options.cacert, &options.cert, &options.key) {
        (Some(ca), Some(cert), Some(key)) => Some(EtcdClientTls { ca: read(ca)?, cert: read(cert)?, key: read(key)? }),
        _ => None,
    };
    let mut others = Vec::new();
    let mut found = None;
    for (i, entry) in options.members.iter().enumerate() {
        let (name, url) = entry.split_once('=').ok_or_else(|| JoinError::BadMember(entry.clone()))?;
        if name == options.name {
            found = Some(i);
            continue;
        }
        let host = url.split("://").nth(1).unwrap_or(url).split([':', '/']).next().unwrap_or_default();
        others.push(Etcd::new(url, host, tls.as_ref()).await?);
    }
    let index = found.ok_or_else(|| JoinError::NotAMember(options.name.clone()))?;
    Ok(Peers { others, first: index == 0 })
}

fn read(path: &Path) -> Result<String, JoinError> {
    std::fs::read_to_string(path).map_err(|source| JoinError::Read { path: path.to_path_buf(), source })
}

/// The member list from the first other member that answers, and that member.
async fn ask(peers: &Peers) -> Option<(Vec<Member>, Etcd)> {
    for etcd in &peers.others {
        match timeout(CALL, etcd.members()).await {
            Ok(Ok(members)) => return Some((members, etcd.clone())),
            Ok(Err(e)) => tracing::debug!(error = %runtime::cli::report(&e), "no member list"),
            Err(_) => tracing::debug!(endpoint = etcd.endpoint(), "no member list in time"),
        }
    }
    None
}

/// Retries `call` every [`RETRY`] until it succeeds or `deadline` passes.
async fn retry<T, F, Fut>(what: &'static str, deadline: Instant, mut call: F) -> Result<T, JoinError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, GatewayError>>,
{
    let started = Instant::now();
    loop {
        let last = match timeout(CALL, call()).await {
            Ok(Ok(value)) => return Ok(value),
            Ok(Err(e)) => runtime::cli::report(&e),
            Err(_) => format!("no answer within {CALL:?}"),
        };
        if Instant::now() >= deadline {
            return Err(JoinError::Timeout { what, within: deadline - started, last });
        }
        tracing::info!(what, error = %last, "retrying");
        tokio::time::sleep(RETRY).await;
    }
}

/// Decides and does what [`plan`] says.
pub async fn run(options: &Options) -> Result<Outcome, JoinError> {
    let deadline = Instant::now() + Duration::from_secs(options.wait_seconds);
    let peers = peers(options).await?;
    // etcd itself counts a member as initialized by its write-ahead log: a joining etcd that
    // stopped before it wrote one leaves `member/` without `member/wal`, and must join again.
    let data_present = options.data_dir.join("member").join("wal").is_dir();
    loop {
        let answer = ask(&peers).await;
        let members = answer.as_ref().map(|(m, _)| m.as_slice());
        let decided = plan(data_present, peers.first, &options.peer_url, members);
        tracing::info!(?decided, "membership");
        match (decided, answer) {
            (Plan::DataPresent, _) => return Ok(Outcome::DataPresent),
            (Plan::Bootstrap, _) => return Ok(Outcome::Bootstrap),
            (Plan::Wait, _) | (_, None) => {
                if Instant::now() >= deadline {
                    return Err(JoinError::Timeout {
                        what: "waiting for a member to answer",
                        within: Duration::from_secs(options.wait_seconds),
                        last: "no member answered".into(),
                    });
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            (Plan::Promote { id }, Some((_, voter))) => {
                let starts = run_until_promoted(options, &[], &voter, id, false, deadline).await?;
                return Ok(Outcome::Promoted { id, starts });
            }
            (Plan::Join, Some((_, voter))) => {
                let Entered { id, members, replaced } = enter(options, &voter, deadline).await?;
                let cluster = initial_cluster(&members, &options.name, &options.peer_url);
                let flags = [format!("--initial-cluster={cluster}"), "--initial-cluster-state=existing".to_string()];
                let starts = run_until_promoted(options, &flags, &voter, id, true, deadline).await?;
                return Ok(Outcome::Joined { id, members: members.len(), replaced, starts });
            }
        }
    }
}

/// Gives this member an entry of the cluster that it can start as, following [`entry`] step by
/// step. The member list is read again before every step, because an add whose answer was lost
/// may still have happened (a second add of the same peer URL is refused).
async fn enter(options: &Options, voter: &Etcd, deadline: Instant) -> Result<Entered, JoinError> {
    let started = Instant::now();
    let mut replaced = false;
    loop {
        let members = retry("listing the members", deadline, || voter.members()).await?;
        let last = match entry(&members, &options.peer_url) {
            Entry::Use(id) => return Ok(Entered { id, members, replaced }),
            Entry::Remove(id) => {
                tracing::info!(member = format!("{id:x}"), "removing this member's entry: its data is lost");
                retry("removing the stale entry", deadline, || voter.remove_member(id)).await?;
                replaced = true;
                continue;
            }
            // etcd takes one learner at a time: a second joining member waits here.
            Entry::Add => match timeout(CALL, voter.add_learner(&options.peer_url)).await {
                Ok(Ok((id, members))) => return Ok(Entered { id, members, replaced }),
                Ok(Err(e)) => runtime::cli::report(&e),
                Err(_) => format!("no answer within {CALL:?} (the add may have happened)"),
            },
        };
        if Instant::now() >= deadline {
            return Err(JoinError::Timeout {
                what: "adding this member as a learner",
                within: deadline - started,
                last,
            });
        }
        tracing::info!(what = "adding this member as a learner", error = %last, "retrying");
        tokio::time::sleep(RETRY).await;
    }
}

/// This member's entry in the cluster, the members then, and whether a stale entry was removed.
struct Entered {
    id: u64,
    members: Vec<Member>,
    replaced: bool,
}

/// Runs etcd with the pod's flags and `extra` until `voter` has promoted learner `id`, then
/// stops it (SIGTERM): the data directory then holds a voting member. Returns how often etcd
/// was started.
///
/// A joining etcd that exits first is started again (until `deadline`). It exits when the
/// cluster refuses it at its start, e.g. while the seed's DNS does not yet know the new pod's
/// address, by which the other members check its certificate. A `fresh` join's partial data
/// directory is removed before each new start: it holds nothing the cluster needs.
async fn run_until_promoted(
    options: &Options,
    extra: &[String],
    voter: &Etcd,
    id: u64,
    fresh: bool,
    deadline: Instant,
) -> Result<u32, JoinError> {
    let started = Instant::now();
    let mut last = String::from("not started");
    let mut starts = 0;
    while Instant::now() < deadline {
        starts += 1;
        if fresh {
            remove_partial_member(&options.data_dir).await?;
        }
        let mut child = tokio::process::Command::new(&options.etcd)
            .args(&options.etcd_args)
            .args(extra)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| JoinError::Start { path: options.etcd.clone(), source })?;
        let outcome = promote_while_running(&mut child, voter, id, deadline).await;
        crate::restore::stop(&mut child).await;
        match outcome {
            Ok(()) => {
                tracing::info!(member = format!("{id:x}"), starts, "promoted to a voting member");
                return Ok(starts);
            }
            Err(JoinError::Exited(status)) => {
                tracing::warn!(%status, "the joining etcd exited before its promotion; starting it again");
                last = format!("the joining etcd exited: {status}");
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
            Err(e) => return Err(e),
        }
    }
    Err(JoinError::Timeout { what: "promoting the learner", within: deadline - started, last })
}

/// Asks `voter` to promote `id` until it does; `Exited` when the joining etcd stops first.
async fn promote_while_running(
    child: &mut tokio::process::Child,
    voter: &Etcd,
    id: u64,
    deadline: Instant,
) -> Result<(), JoinError> {
    let started = Instant::now();
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(JoinError::Exited(status.to_string()));
        }
        // etcd refuses while the learner is behind the leader.
        let last = match timeout(CALL, voter.promote(id)).await {
            Ok(Ok(())) => return Ok(()),
            Ok(Err(e)) => runtime::cli::report(&e),
            Err(_) => format!("no answer within {CALL:?}"),
        };
        if Instant::now() >= deadline {
            return Err(JoinError::Timeout { what: "promoting the learner", within: deadline - started, last });
        }
        tokio::time::sleep(RETRY).await;
    }
}

/// Removes `data_dir/member`, what a joining etcd that stopped early left.
async fn remove_partial_member(data_dir: &Path) -> Result<(), JoinError> {
    let member = data_dir.join("member");
    match tokio::fs::remove_dir_all(&member).await {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(JoinError::Remove { path: member, source }),
    }
}

#[cfg(test)]
mod tests;
