//! A highly available etcd as gardenlet renders it, run as three real etcd processes (the test
//! assets' etcd 3.4, the shoots' version) on nothing but the shoot PKI's etcd certificate and CA
//! bundle, each member started as its pod starts it: the `join` init step (etcd-backup's, from
//! the rendered init container's flags), then etcd. All three start at once; the first
//! bootstraps, the others join as learners and are promoted; the members form one cluster over
//! peer TLS with client-certificate authentication, writes go on while any one member is down,
//! and a member started again rejoins from its data directory and serves every write, those
//! made while it was down included.
//!
//! The rendered flags are used as they are, with three translations a single host needs: each
//! member's DNS name becomes a loopback port of its own, the mounted secret paths become files
//! in a temporary directory, and `etcd` is the test assets' binary. (How members find each other by name in a seed, and which
//! certificate names that needs, is `pki::shoot_set::ShootInputs::etcd_sans`' test.)

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use clap::Parser;
use gardenlet::components::common::{FailureToleranceType, secrets};
use gardenlet::components::{ControlPlaneValues, etcd};
use pki::SecretSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

const NS: &str = "shoot--dev--ha";
const MEMBERS: usize = 3;

fn values() -> ControlPlaneValues {
    ControlPlaneValues {
        namespace: NS.into(),
        kubernetes_version: "1.20.2".into(),
        etcd_replicas: 3,
        failure_tolerance: Some(FailureToleranceType::Zone),
        etcd_defragmentation_schedule: "0 0 */3 * *".to_string(),
        requests_percent: 100,
        ..ControlPlaneValues::default()
    }
}

/// One member's loopback ports.
#[derive(Clone, Copy)]
struct Ports {
    client: u16,
    peer: u16,
    metrics: u16,
}

fn free() -> u16 {
    testenv::free_port("127.0.0.1".parse().unwrap()).unwrap()
}

/// The shoot PKI's etcd files under `dir` as the pod mounts them (`<secret>/<key>`).
fn write_secrets(dir: &Path, set: &SecretSet) {
    let files = [
        (secrets::CA_ETCD_BUNDLE, secrets::BUNDLE),
        (secrets::ETCD_SERVER, secrets::TLS_CERT),
        (secrets::ETCD_SERVER, secrets::TLS_KEY),
        (secrets::ETCD_CLIENT, secrets::TLS_CERT),
        (secrets::ETCD_CLIENT, secrets::TLS_KEY),
    ];
    for (secret, key) in files {
        let value = set.value(secret, key).unwrap_or_else(|| panic!("the shoot PKI has no {secret}/{key}"));
        std::fs::create_dir_all(dir.join(secret)).unwrap();
        std::fs::write(dir.join(secret).join(key), value).unwrap();
    }
}

/// The rendered etcd flags for member `i`, translated to this host.
fn member_args(rendered: &[String], i: usize, ports: &[Ports], secrets_dir: &Path, data: &Path) -> Vec<String> {
    rendered
        .iter()
        .map(|arg| {
            let mut arg = arg.replace("$(POD_NAME)", &format!("etcd-main-{i}"));
            for (j, p) in ports.iter().enumerate() {
                let host = format!("https://etcd-main-{j}.etcd-main-peer.{NS}.svc");
                arg = arg.replace(&format!("{host}:2380"), &format!("https://127.0.0.1:{}", p.peer));
                arg = arg.replace(&format!("{host}:2379"), &format!("https://127.0.0.1:{}", p.client));
            }
            let own = ports[i];
            arg.replace("https://0.0.0.0:2379", &format!("https://127.0.0.1:{}", own.client))
                .replace("https://0.0.0.0:2380", &format!("https://127.0.0.1:{}", own.peer))
                .replace("http://0.0.0.0:2381", &format!("http://127.0.0.1:{}", own.metrics))
                .replace("/var/etcd/data", data.to_str().unwrap())
                .replace("/srv/kubernetes/", &format!("{}/", secrets_dir.display()))
        })
        .collect()
}

/// `etcd-backup join`'s flags, parsed as the binary parses them.
#[derive(Parser)]
struct Join {
    #[command(flatten)]
    options: etcd_backup::join::Options,
}

struct Cluster {
    etcd: PathBuf,
    etcdctl: PathBuf,
    dir: tempfile::TempDir,
    ports: Vec<Ports>,
    args: Vec<Vec<String>>,
    joins: Vec<etcd_backup::join::Options>,
    members: Vec<Option<Child>>,
}

impl Cluster {
    /// Renders the etcd, writes the shoot PKI's files and starts the three members at once.
    async fn start() -> Self {
        let assets = testenv::Assets::from_env().unwrap();
        let etcdctl = assets.etcd.with_file_name("etcdctl");
        assert!(etcdctl.is_file(), "etcdctl is missing next to etcd; run {}", testenv::SETUP_COMMAND);
        let dir = tempfile::tempdir().unwrap();
        let inputs =
            pki::shoot_set::ShootInputs::new(NS, "api.ha.dev.internal.example.com", "100.64.0.1".parse().unwrap());
        let configs = pki::shoot_set::shoot_set(&inputs);
        let set = pki::manager::plan(&configs, &SecretSet::new(), SystemTime::now()).unwrap().secrets;
        let secrets_dir = dir.path().join("secrets");
        write_secrets(&secrets_dir, &set);
        let ports: Vec<Ports> = (0..MEMBERS).map(|_| Ports { client: free(), peer: free(), metrics: free() }).collect();
        let sts = etcd::statefulset(&values());
        let spec = sts.spec.unwrap();
        assert_eq!(spec.replicas, Some(MEMBERS as i32));
        let pod = spec.template.spec.unwrap();
        let rendered = pod.containers[0].args.clone().unwrap();
        let join = pod.init_containers.unwrap().into_iter().find(|c| c.name == "join").expect("a join init container");
        assert_eq!(join.command.unwrap(), ["etcd-backup", "join"]);
        let rendered_join = join.args.unwrap();
        let data = |i: usize| dir.path().join(format!("data-{i}"));
        let args = (0..MEMBERS).map(|i| member_args(&rendered, i, &ports, &secrets_dir, &data(i))).collect();
        let etcd_flag = format!("--etcd={}", assets.etcd.display());
        let joins = (0..MEMBERS)
            .map(|i| {
                let translated = member_args(&rendered_join, i, &ports, &secrets_dir, &data(i))
                    .into_iter()
                    .map(|a| if a == "--etcd=etcd" { etcd_flag.clone() } else { a });
                Join::try_parse_from(std::iter::once("join".to_string()).chain(translated)).unwrap().options
            })
            .collect();
        let mut cluster = Cluster {
            etcd: assets.etcd,
            etcdctl,
            dir,
            ports,
            args,
            joins,
            members: (0..MEMBERS).map(|_| None).collect(),
        };
        // As a StatefulSet with parallel pod management starts them: all at once.
        let started: Vec<_> = (0..MEMBERS).map(|i| tokio::spawn(cluster.pod(i))).collect();
        for (i, pod) in started.into_iter().enumerate() {
            cluster.members[i] = Some(pod.await.unwrap());
        }
        cluster
    }

    /// What member `i`'s pod does: the join step, then etcd.
    fn pod(&self, i: usize) -> impl std::future::Future<Output = Child> + use<> {
        let (join, etcd, args) = (self.joins[i].clone(), self.etcd.clone(), self.args[i].clone());
        let log = std::fs::File::create(self.dir.path().join(format!("member-{i}.log"))).unwrap();
        async move {
            let outcome = etcd_backup::join::run(&join).await.unwrap_or_else(|e| panic!("member {i}'s join: {e}"));
            eprintln!("member {i}: {outcome}");
            Command::new(&etcd).args(&args).stdout(Stdio::null()).stderr(log).spawn().unwrap()
        }
    }

    async fn start_member(&mut self, i: usize) {
        self.members[i] = Some(self.pod(i).await);
    }

    /// SIGKILL, as a node that is gone.
    fn kill(&mut self, i: usize) {
        if let Some(mut child) = self.members[i].take() {
            child.kill().unwrap();
            child.wait().unwrap();
        }
    }

    fn log(&self, i: usize) -> String {
        std::fs::read_to_string(self.dir.path().join(format!("member-{i}.log"))).unwrap_or_default()
    }

    /// etcdctl with the shoot's etcd client certificate against `members`.
    fn etcdctl(&self, members: &[usize], args: &[&str]) -> std::process::Output {
        let secrets_dir = self.dir.path().join("secrets");
        let file = |secret: &str, key: &str| secrets_dir.join(secret).join(key).display().to_string();
        let endpoints: Vec<String> =
            members.iter().map(|i| format!("https://127.0.0.1:{}", self.ports[*i].client)).collect();
        Command::new(&self.etcdctl)
            .env("ETCDCTL_API", "3")
            .arg(format!("--endpoints={}", endpoints.join(",")))
            .arg(format!("--cacert={}", file(secrets::CA_ETCD_BUNDLE, secrets::BUNDLE)))
            .arg(format!("--cert={}", file(secrets::ETCD_CLIENT, secrets::TLS_CERT)))
            .arg(format!("--key={}", file(secrets::ETCD_CLIENT, secrets::TLS_KEY)))
            .args(["--command-timeout=2s", "--dial-timeout=2s"])
            .args(args)
            .output()
            .unwrap()
    }

    /// Writes `key` through any of `members`: `Ok` when etcd acknowledged it, else etcdctl's error.
    fn put(&self, members: &[usize], key: &str) -> Result<(), String> {
        let out = self.etcdctl(members, &["put", key, key]);
        out.status.success().then_some(()).ok_or_else(|| String::from_utf8_lossy(&out.stderr).trim().to_string())
    }

    /// Writes `key` as a client does that retries (bounded): while a member is gone, the others
    /// may first elect a leader. The refusals before the acknowledgement, with their reasons.
    fn put_retrying(&self, members: &[usize], key: &str) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut refusals = Vec::new();
        loop {
            match self.put(members, key) {
                Ok(()) => return refusals,
                Err(e) => refusals.push(e),
            }
            assert!(Instant::now() < deadline, "{key}: not acknowledged within 30 s: {refusals:?}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The value of `key` read from member `i` alone, linearizably (through the quorum).
    fn get(&self, i: usize, key: &str) -> Option<String> {
        let out = self.etcdctl(&[i], &["get", key, "--print-value-only"]);
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    /// Waits (bounded) until every member in `members` reports itself healthy.
    fn wait_healthy(&self, members: &[usize], what: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let healthy = members.iter().all(|i| self.etcdctl(&[*i], &["endpoint", "health"]).status.success());
            if healthy {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: members {members:?} not healthy after 60 s; logs:\n{}",
                (0..MEMBERS).map(|i| format!("--- member {i}\n{}", tail(&self.log(i)))).collect::<String>()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for i in 0..MEMBERS {
            self.kill(i);
        }
    }
}

fn tail(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_members_on_the_shoot_pki_keep_every_acknowledged_write_through_the_loss_of_any_one() {
    let mut cluster = Cluster::start().await;
    let all: Vec<usize> = (0..MEMBERS).collect();
    cluster.wait_healthy(&all, "the three members' start");
    let list = cluster.etcdctl(&[0], &["member", "list"]);
    let list = String::from_utf8_lossy(&list.stdout).to_string();
    assert_eq!(list.lines().count(), MEMBERS, "one cluster of three: {list}");
    for i in 0..MEMBERS {
        assert!(list.contains(&format!("etcd-main-{i}")), "{list}");
    }

    let mut acknowledged = Vec::new();
    for down in 0..MEMBERS {
        cluster.kill(down);
        let up: Vec<usize> = all.iter().copied().filter(|i| *i != down).collect();
        // Two of three are a quorum: every write is acknowledged, once they have a leader (when
        // the member that went was it, the others elect a new one within about a second).
        let started = Instant::now();
        for n in 0..10 {
            let key = format!("/down-{down}/{n}");
            let refusals = cluster.put_retrying(&up, &key);
            if !refusals.is_empty() {
                eprintln!(
                    "member {down} down: {key} refused {} times before it was acknowledged: {refusals:?}",
                    refusals.len()
                );
            }
            acknowledged.push(key);
        }
        eprintln!("member {down} down: 10 writes acknowledged in {:?}", started.elapsed());
        cluster.start_member(down).await;
        cluster.wait_healthy(&all, &format!("member {down}'s restart"));
        // The restarted member serves what was written while it was down.
        for key in &acknowledged {
            assert_eq!(cluster.get(down, key).as_deref(), Some(key.as_str()), "member {down} after its restart");
        }
    }
    // Without a quorum, etcd acknowledges nothing (and so loses nothing it acknowledged).
    cluster.kill(1);
    cluster.kill(2);
    assert!(cluster.put(&[0], "/no-quorum").is_err(), "a write without a quorum was acknowledged");
    cluster.start_member(1).await;
    cluster.start_member(2).await;
    cluster.wait_healthy(&all, "the quorum's return");
    for i in 0..MEMBERS {
        for key in &acknowledged {
            assert_eq!(cluster.get(i, key).as_deref(), Some(key.as_str()), "member {i} at the end");
        }
    }
}
