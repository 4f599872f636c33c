//! The kube-apiserver 1.20 of the test assets takes what gardenlet renders for a shoot with
//! every `spec.kubernetes.kubeAPIServer` setting: the flags (parsed and validated), the
//! AdmissionConfiguration, the audit policy, the OIDC CA file and the tunnel's
//! EgressSelectorConfiguration (read at start). The files
//! and the shoot's secrets (from pki) are written where the flags point (paths moved into a
//! temporary directory); etcd is not reachable, so a server that is still running after the
//! start has accepted all of it, and one with a broken file stops naming it.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use gardenlet::components::{ControlPlaneValues, Images, konnectivity, kube_apiserver};
use gardenlet::shoot::operation::values::ShootValues;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SHOOT: &str = "apiVersion: core.gardener.cloud/v1beta1\nkind: Shoot\nmetadata:\n  name: demo\n  namespace: garden-dev\nspec:\n  region: local\n  provider:\n    type: local\n  kubernetes:\n    version: 1.20.2\n  networking:\n    pods: 10.96.0.0/11\n    services: 10.112.0.0/13\n  dns:\n    domain: demo.dev.example.com\n";

const POLICY: &str = "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n";

fn settings(ca: &str) -> String {
    format!(
        "admissionPlugins:
- name: DefaultStorageClass
  disabled: true
- name: DefaultIngressClass
  disabled: true
- name: PodNodeSelector
  config:
    podNodeSelectorPluginConfig:
      clusterDefaultNodeSelector: env=prod
- name: EventRateLimit
  config: |
    apiVersion: eventratelimit.admission.k8s.io/v1alpha1
    kind: Configuration
    limits:
    - type: Server
      qps: 10
      burst: 20
- name: AlwaysPullImages
apiAudiences: [kubernetes, gardener]
auditConfig:
  auditPolicy:
    configMapRef:
      name: audit-policy
eventTTL: 24h
requests:
  maxNonMutatingInflight: 600
  maxMutatingInflight: 300
watchCacheSizes:
  default: 50
  resources:
  - resource: secrets
    size: 500
  - apiGroup: apps
    resource: deployments
    size: 80
logging:
  verbosity: 3
  httpAccessVerbosity: 4
defaultNotReadyTolerationSeconds: 120
defaultUnreachableTolerationSeconds: 90
enableAnonymousAuthentication: false
oidcConfig:
  issuerURL: https://issuer.example.com/dex
  clientID: shoot
  caBundle: {ca:?}
  usernameClaim: email
  usernamePrefix: 'oidc:'
  groupsClaim: groups
  groupsPrefix: 'oidc:'
  signingAlgs: [RS256, ES256]
  requiredClaims:
    hd: example.com
    tier: gold
serviceAccountConfig:
  issuer: https://issuer.example.com
  extendTokenExpiration: false
  maxTokenExpiration: 720h
encryptionConfig:
  resources: [configmaps, deployments.apps]
"
    )
}

/// The values of the demo shoot with every setting and the audit policy read.
fn values(ca: &str) -> ControlPlaneValues {
    let mut shoot: api::core::Shoot = serde_yaml::from_str(SHOOT).unwrap();
    shoot.spec.kubernetes.kube_api_server = Some(serde_yaml::from_str(&settings(ca)).unwrap());
    let mut v = ShootValues::new(&shoot, None).unwrap().control_plane(&Images::default(), true, 100);
    v.apiserver.audit_policy = Some(POLICY.into());
    // With workers: the EgressSelectorConfiguration of the tunnel.
    v.tunnel = true;
    v
}

/// Writes the shoot's secrets (pki) and the ConfigMaps under `dir` and returns the flags with
/// their paths moved there, on a free local port, with an etcd nobody listens on.
fn prepare(v: &ControlPlaneValues, dir: &Path) -> Vec<String> {
    let inputs = pki::shoot_set::ShootInputs::new(
        "shoot--dev--demo",
        "api.demo.dev.internal.local",
        "10.112.0.1".parse().unwrap(),
    );
    let plan =
        pki::manager::plan(&pki::shoot_set::shoot_set(&inputs), &pki::SecretSet::new(), std::time::SystemTime::now())
            .unwrap();
    let srv = dir.join("srv");
    for secret in plan.secrets.iter() {
        std::fs::create_dir_all(srv.join(&secret.name)).unwrap();
        for (key, value) in &secret.data {
            std::fs::write(srv.join(&secret.name).join(key), value).unwrap();
        }
    }
    let key = plan.secrets.value("etcd-encryption-key", "value").unwrap();
    let encryption = kube_apiserver::encryption_config_secret(v, key, None);
    let enc_dir = srv.join(kube_apiserver::ENCRYPTION_CONFIG_SECRET);
    std::fs::create_dir_all(&enc_dir).unwrap();
    for (k, value) in encryption.data.unwrap() {
        std::fs::write(enc_dir.join(k), value.0).unwrap();
    }
    let etc = dir.join("etc");
    for cm in kube_apiserver::config_maps(v) {
        let name = cm.metadata.name.clone().unwrap();
        let target = match name.as_str() {
            kube_apiserver::ADMISSION_CONFIG_MAP => kube_apiserver::ADMISSION_CONFIG_DIR,
            kube_apiserver::AUDIT_POLICY_CONFIG_MAP => kube_apiserver::AUDIT_POLICY_DIR,
            konnectivity::EGRESS_CONFIG_MAP => konnectivity::EGRESS_DIR,
            _ => kube_apiserver::OIDC_CA_DIR,
        };
        let target = etc.join(target.trim_start_matches("/etc/kubernetes/"));
        std::fs::create_dir_all(&target).unwrap();
        for (k, value) in cm.data.unwrap() {
            std::fs::write(target.join(k), value).unwrap();
        }
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    kube_apiserver::args(v)
        .into_iter()
        .map(|a| {
            if a.starts_with("--secure-port=") {
                format!("--secure-port={port}")
            } else if a.starts_with("--etcd-servers=") {
                "--etcd-servers=https://127.0.0.1:1".to_string()
            } else {
                a.replace("/srv/kubernetes", srv.to_str().unwrap()).replace("/etc/kubernetes", etc.to_str().unwrap())
            }
        })
        .chain(["--bind-address=127.0.0.1".to_string()])
        .collect()
}

/// Starts kube-apiserver; `Ok(stderr)` when it is still running after `wait`, `Err(stderr)`
/// when it stopped.
fn run(args: &[String], dir: &Path, wait: Duration) -> Result<String, String> {
    let assets = testenv::Assets::from_env().unwrap();
    let log = dir.join("stderr.log");
    let mut child: Child = Command::new(&assets.kube_apiserver)
        .args(args)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let exited = loop {
        if child.try_wait().unwrap().is_some() {
            break true;
        }
        if start.elapsed() > wait {
            break false;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    if !exited {
        child.kill().unwrap();
        child.wait().unwrap();
    }
    let stderr = std::fs::read_to_string(&log).unwrap();
    if exited { Err(stderr) } else { Ok(stderr) }
}

fn ca_bundle() -> String {
    let inputs = pki::shoot_set::ShootInputs::new("x", "api.x", "10.0.0.1".parse().unwrap());
    let plan =
        pki::manager::plan(&pki::shoot_set::shoot_set(&inputs), &pki::SecretSet::new(), std::time::SystemTime::now())
            .unwrap();
    plan.secrets.value("ca-bundle", "bundle.crt").unwrap().to_string()
}

#[test]
fn kube_apiserver_1_20_starts_with_every_setting() {
    let dir = tempfile::tempdir().unwrap();
    let v = values(&ca_bundle());
    let args = prepare(&v, dir.path());
    for expected in [
        "--audit-log-path=-",
        "--anonymous-auth=false",
        "--vmodule=httplog=4",
        &format!("--egress-selector-config-file={}/etc/egress/{}", dir.path().display(), konnectivity::EGRESS_KEY),
    ] {
        assert!(args.iter().any(|a| a == expected), "{expected} in {args:?}");
    }
    let stderr = run(&args, dir.path(), Duration::from_secs(8)).expect("kube-apiserver stopped");
    assert!(!stderr.contains("Error:"), "{stderr}");
}

/// Each file is read at start: a broken one stops kube-apiserver with an error naming it.
#[test]
fn a_broken_file_stops_kube_apiserver_naming_it() {
    let broken = [
        (
            format!("etc/admission/{}", kube_apiserver::ADMISSION_CONFIG_KEY),
            "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: EventRateLimit\n  configuration:\n    kind: NotAConfiguration\n",
            "EventRateLimit",
        ),
        (format!("etc/audit/{}", kube_apiserver::AUDIT_POLICY_KEY), "kind: NotAPolicy\n", "audit"),
        (format!("etc/oidc/{}", kube_apiserver::OIDC_CA_KEY), "not a certificate\n", "oidc"),
        (
            format!("etc/egress/{}", konnectivity::EGRESS_KEY),
            "apiVersion: apiserver.k8s.io/v1beta1\nkind: Wrong\n",
            "egress",
        ),
    ];
    for (file, content, named) in broken {
        let dir = tempfile::tempdir().unwrap();
        let args = prepare(&values(&ca_bundle()), dir.path());
        std::fs::write(dir.path().join(&file), content).unwrap();
        let stderr = run(&args, dir.path(), Duration::from_secs(20)).expect_err("kube-apiserver kept running");
        let last = stderr.lines().rfind(|l| l.contains("Error")).unwrap_or_default().to_string();
        assert!(last.to_lowercase().contains(&named.to_lowercase()), "{file}: {stderr}");
    }
}
