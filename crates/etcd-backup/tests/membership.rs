//! The join step with real etcd processes (the test assets' etcd 3.4): the first member
//! bootstraps, two more join at the same time (etcd takes one learner at a time, so one waits),
//! every member ends a voting member with every key, and a member whose data directory is lost
//! (the first one included) is replaced without a manual step and gets every key back.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use etcd_backup::delta::Event;
use etcd_backup::gateway::Etcd;
use etcd_backup::join::{self, Outcome};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const MEMBERS: usize = 3;

struct Cluster {
    etcd: PathBuf,
    dir: tempfile::TempDir,
    ports: Vec<(u16, u16)>,
    running: Vec<Option<Child>>,
}

impl Cluster {
    fn new() -> Self {
        let etcd = testenv::Assets::from_env().unwrap().etcd;
        let free = || testenv::free_port("127.0.0.1".parse().unwrap()).unwrap();
        Cluster {
            etcd,
            dir: tempfile::tempdir().unwrap(),
            ports: (0..MEMBERS).map(|_| (free(), free())).collect(),
            running: (0..MEMBERS).map(|_| None).collect(),
        }
    }

    fn data(&self, i: usize) -> PathBuf {
        self.dir.path().join(format!("data-{i}"))
    }

    fn client(&self, i: usize) -> String {
        format!("http://127.0.0.1:{}", self.ports[i].0)
    }

    fn peer(&self, i: usize) -> String {
        format!("http://127.0.0.1:{}", self.ports[i].1)
    }

    /// The flags every member's etcd runs with, as in the pod: the first member alone in the
    /// initial cluster (etcd ignores it once the data directory holds a member).
    fn args(&self, i: usize) -> Vec<String> {
        vec![
            format!("--name=m{i}"),
            format!("--data-dir={}", self.data(i).display()),
            format!("--listen-client-urls={}", self.client(i)),
            format!("--advertise-client-urls={}", self.client(i)),
            format!("--listen-peer-urls={}", self.peer(i)),
            format!("--initial-advertise-peer-urls={}", self.peer(i)),
            format!("--initial-cluster=m0={}", self.peer(0)),
            "--initial-cluster-state=new".to_string(),
        ]
    }

    fn options(&self, i: usize) -> join::Options {
        join::Options {
            data_dir: self.data(i),
            name: format!("m{i}"),
            peer_url: self.peer(i),
            members: (0..MEMBERS).map(|j| format!("m{j}={}", self.client(j))).collect(),
            cacert: None,
            cert: None,
            key: None,
            wait_seconds: 120,
            etcd: self.etcd.clone(),
            etcd_args: self.args(i),
        }
    }

    fn start(&mut self, i: usize) {
        let log = std::fs::File::create(self.dir.path().join(format!("m{i}.log"))).unwrap();
        self.running[i] =
            Some(Command::new(&self.etcd).args(self.args(i)).stdout(Stdio::null()).stderr(log).spawn().unwrap());
    }

    fn kill(&mut self, i: usize) {
        if let Some(mut child) = self.running[i].take() {
            child.kill().unwrap();
            child.wait().unwrap();
        }
    }

    async fn etcd(&self, i: usize) -> Etcd {
        Etcd::new(&self.client(i), "", None).await.unwrap()
    }

    /// Waits (bounded) until member `i` answers with the cluster's keys.
    async fn count(&self, i: usize) -> i64 {
        let etcd = self.etcd(i).await;
        testenv::poll::until_some(
            &format!("member m{i} answers"),
            Duration::from_secs(60),
            Duration::from_millis(200),
            || {
                let etcd = etcd.clone();
                async move { etcd.count().await.ok() }
            },
        )
        .await
    }

    /// The member list, as `(name, learner)` sorted.
    async fn members(&self, through: usize) -> Vec<(String, bool)> {
        let mut all: Vec<(String, bool)> =
            self.etcd(through).await.members().await.unwrap().into_iter().map(|m| (m.name, m.is_learner)).collect();
        all.sort();
        all
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for i in 0..MEMBERS {
            self.kill(i);
        }
    }
}

fn wipe(path: &Path) {
    std::fs::remove_dir_all(path).unwrap();
}

async fn write(etcd: &Etcd, prefix: &str, n: usize) {
    for k in 0..n {
        let put = Event::Put { key: format!("/{prefix}/{k}").into_bytes(), value: b"v".to_vec() };
        etcd.apply(&[put]).await.unwrap();
    }
}

fn voters() -> Vec<(String, bool)> {
    (0..MEMBERS).map(|i| (format!("m{i}"), false)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_join_as_learners_and_a_member_whose_data_is_lost_is_replaced() {
    let mut cluster = Cluster::new();
    // Nobody answers: the first member bootstraps, the others would wait.
    assert_eq!(join::run(&cluster.options(0)).await.unwrap(), Outcome::Bootstrap);
    cluster.start(0);
    cluster.count(0).await;
    write(&cluster.etcd(0).await, "before", 50).await;

    // Two members join at once, each pod starting its etcd right after its own join: etcd
    // takes one learner at a time, so the other waits its turn. (Between the first one's
    // promotion and its etcd's start, the two-voter cluster has no quorum for a moment.)
    let joins: Vec<_> = (1..MEMBERS)
        .map(|i| {
            let (options, etcd, args) = (cluster.options(i), cluster.etcd.clone(), cluster.args(i));
            let log = std::fs::File::create(cluster.dir.path().join(format!("m{i}.log"))).unwrap();
            tokio::spawn(async move {
                let outcome = join::run(&options).await;
                let child = Command::new(etcd).args(args).stdout(Stdio::null()).stderr(log).spawn().unwrap();
                (outcome, child)
            })
        })
        .collect();
    for (i, handle) in (1..MEMBERS).zip(joins) {
        let (outcome, child) = handle.await.unwrap();
        cluster.running[i] = Some(child);
        let outcome = outcome.unwrap();
        assert!(matches!(outcome, Outcome::Joined { replaced: false, .. }), "m{i}: {outcome}");
    }
    let keys = cluster.count(0).await;
    assert_eq!(keys, 50);
    for i in 1..MEMBERS {
        assert_eq!(cluster.count(i).await, keys, "member m{i}");
    }
    assert_eq!(cluster.members(0).await, voters(), "every member votes");

    // A member's volume is lost while the others go on writing: it is replaced and catches up.
    // Then the same for the first member, which must join rather than bootstrap anew.
    for lost in [2, 0] {
        cluster.kill(lost);
        wipe(&cluster.data(lost));
        let alive = (lost + 1) % MEMBERS;
        write(&cluster.etcd(alive).await, &format!("while-{lost}-was-gone"), 20).await;
        let outcome = join::run(&cluster.options(lost)).await.unwrap();
        assert!(matches!(outcome, Outcome::Joined { replaced: true, members: 3, .. }), "m{lost}: {outcome}");
        cluster.start(lost);
        let keys = cluster.count(alive).await;
        assert_eq!(cluster.count(lost).await, keys, "m{lost} has every key after its replacement");
        assert_eq!(cluster.members(alive).await, voters(), "three voters after m{lost}'s replacement");
    }
    assert_eq!(cluster.count(1).await, 90);
    // A member with its data starts from it.
    cluster.kill(1);
    assert_eq!(join::run(&cluster.options(1)).await.unwrap(), Outcome::DataPresent);
}
