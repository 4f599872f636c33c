//! The bench's world: one testenv control plane as garden and seed (with an audit log), the
//! shared stand-in shoot API, the actuators and the light simulator, and one gardenlet per seed.

use super::Settings;
use super::gardenlet::{Gardenlet, RssSampler};
use super::relay::Upstream;
use super::simulator::LightSimulator;
use crate::garden;
use crate::proc::rss_kib;
use api::core::Shoot;
use kube::Api;
use std::path::{Path, PathBuf};

const AUDIT_POLICY: &str =
    "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n";

/// Everything that runs while the bench measures. Fields drop in order: the gardenlets first,
/// the control planes and then the work directory last.
pub struct Bench {
    pub gardenlets: Vec<Gardenlet>,
    pub sampler: RssSampler,
    _tasks: Vec<tokio::task::JoinHandle<()>>,
    pub simulator: LightSimulator,
    pub shoots: Api<Shoot>,
    pub standin: testenv::TestEnv,
    pub garden: testenv::TestEnv,
    pub audit_log: PathBuf,
    pub work: tempfile::TempDir,
}

impl Bench {
    pub async fn start(s: &Settings) -> Self {
        let work = tempfile::Builder::new().prefix("scale-bench-").tempdir().unwrap();
        let (garden, audit_log) = start_garden(work.path()).await;
        // The shoots' service range (the system components' Services take addresses from it).
        let standin = testenv::TestEnv::start_with(testenv::Options {
            extra_apiserver_args: vec!["--service-cluster-ip-range=10.112.0.0/13".into()],
            ..Default::default()
        })
        .await
        .unwrap();
        let client = garden.client().await.unwrap();
        garden::prepare_garden(&client).await;
        // The actuators and the simulator serve every seed: they watch all namespaces, by type.
        let simulator = LightSimulator::new(Upstream::new(&standin));
        let mut tasks = garden::spawn_actuators(&client);
        tasks.push(simulator.spawn(client.clone()));
        let gardenlets: Vec<Gardenlet> =
            (0..s.seeds).map(|i| start_gardenlet(&garden, i, work.path(), s.care)).collect();
        let sampler = RssSampler::default();
        sampler.watch(&gardenlets);
        tasks.push(sampler.spawn());
        let shoots = Api::namespaced(client, "garden-dev");
        Self { gardenlets, sampler, _tasks: tasks, simulator, shoots, standin, garden, audit_log, work }
    }

    /// The gardenlets' resident memory now, in KiB.
    pub fn rss(&self) -> Vec<u64> {
        self.gardenlets.iter().map(|g| rss_kib(g.pid())).collect()
    }

    /// Reads each gardenlet's cache metrics, stops the gardenlets and waits until the last
    /// audit events are written.
    pub async fn stop(&mut self) -> Vec<(String, Vec<String>)> {
        let mut cache_metrics = Vec::new();
        for g in &self.gardenlets {
            cache_metrics.push((g.seed.clone(), g.cache_metrics().await));
        }
        for g in &mut self.gardenlets {
            g.stop();
        }
        tokio::time::sleep(std::time::Duration::from_secs(2)).await;
        cache_metrics
    }
}

/// The garden (and seed) control plane, with its audit log in `work`.
async fn start_garden(work: &Path) -> (testenv::TestEnv, PathBuf) {
    let audit_policy = work.join("audit-policy.yaml");
    let audit_log = work.join("audit.log");
    std::fs::write(&audit_policy, AUDIT_POLICY).unwrap();
    let mut options = crate::support::simulator::seed_options();
    // Every shoot takes a few cluster IPs in the seed: a /16 (the default /24 is full after
    // about 100 shoots). Nothing listens on them here.
    let range = format!("--service-cluster-ip-range=127.{}.0.0/16", fastrand::u8(250..255));
    options.extra_apiserver_args.extend([
        range,
        format!("--audit-policy-file={}", audit_policy.display()),
        format!("--audit-log-path={}", audit_log.display()),
        "--audit-log-format=json".into(),
        "--audit-log-maxsize=100000".into(),
        "--audit-log-maxbackup=1".into(),
    ]);
    (testenv::TestEnv::start_with(options).await.unwrap(), audit_log)
}

/// The `i`-th seed's gardenlet with its own client certificate (user `gardenlet-<seed>`), at the
/// default resync period.
fn start_gardenlet(garden: &testenv::TestEnv, i: usize, work: &Path, care: u64) -> Gardenlet {
    let seed = seed_name(i);
    let kubeconfig = work.join(format!("kubeconfig-gardenlet-{seed}"));
    let config = garden.kubeconfig_for(&format!("gardenlet-{seed}"), Some("system:masters")).unwrap();
    std::fs::write(&kubeconfig, serde_yaml::to_string(&config).unwrap()).unwrap();
    Gardenlet::start(&seed, i, &kubeconfig, work, 3600, care)
}

/// `local`, `local-2`, ...
pub fn seed_name(i: usize) -> String {
    if i == 0 { "local".to_string() } else { format!("local-{}", i + 1) }
}
