//! Stand-ins for a shoot's etcd and kube-apiserver pods (test code only): real etcd and
//! kube-apiserver processes started from what gardenlet deployed — the certificates it
//! generated for the shoot, the etcd pod's init containers (run as a kubelet would, with their
//! volumes mapped to local directories), etcd's data directory on a per-StatefulSet "volume"
//! that outlives the process (as a PersistentVolume does) — listening where the shoot's
//! Services say: etcd on the client Service's cluster IP (the seed's test apiserver hands out
//! loopback cluster IPs), kube-apiserver on the load-balancer address and port 443.

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{Container, Secret, Service};
use kube::{Api, ResourceExt};
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use testenv::{Assets, Process};

async fn write_secret(client: &kube::Client, namespace: &str, name: &str, target: &Path) -> Result<(), String> {
    let secret = Api::<Secret>::namespaced(client.clone(), namespace)
        .get(name)
        .await
        .map_err(|e| format!("reading secret {name}: {e}"))?;
    std::fs::create_dir_all(target).map_err(|e| e.to_string())?;
    for (key, value) in secret.data.unwrap_or_default() {
        std::fs::write(target.join(key), value.0).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// The running etcd of one shoot.
pub struct EtcdStandIn {
    pub process: Process,
    /// The StatefulSet generation it was started for: a newer one (a new certificate) restarts it.
    pub generation: Option<i64>,
    /// Its client and peer ports, kept when it restarts (the running kube-apiserver dials it).
    pub ports: (u16, u16),
    /// Where the stand-in kube-apiserver reaches it (a loopback name in the server's SANs).
    pub local_url: String,
    /// The Service's cluster IP it also listens on (what gardenlet dials), if loopback.
    pub service_ip: Option<Ipv4Addr>,
    pub certs: Arc<tempfile::TempDir>,
}

/// Volumes that outlive the processes: one directory per StatefulSet (by UID), as a
/// PersistentVolumeClaim outlives its pod and goes away with its namespace.
#[derive(Default)]
pub struct Volumes {
    dirs: std::sync::Mutex<BTreeMap<String, Arc<tempfile::TempDir>>>,
}

impl Volumes {
    fn of(&self, uid: &str) -> Result<Arc<tempfile::TempDir>, String> {
        let mut dirs = self.dirs.lock().unwrap();
        if let Some(d) = dirs.get(uid) {
            return Ok(d.clone());
        }
        let d = Arc::new(tempfile::tempdir().map_err(|e| e.to_string())?);
        dirs.insert(uid.to_string(), d.clone());
        Ok(d)
    }
}

/// Replaces container paths by their local directories (longest mount path first).
pub fn map_paths(text: &str, mounts: &[(String, PathBuf)]) -> String {
    let mut mounts = mounts.to_vec();
    mounts.sort_by_key(|(m, _)| std::cmp::Reverse(m.len()));
    // Two passes through placeholders, so a replaced path is never replaced again.
    let mut out = text.to_string();
    for (i, (mount, _)) in mounts.iter().enumerate() {
        out = out.replace(mount.as_str(), &format!("\u{0}{i}\u{0}"));
    }
    for (i, (_, local)) in mounts.iter().enumerate() {
        out = out.replace(&format!("\u{0}{i}\u{0}"), &local.display().to_string());
    }
    out
}

/// The local directory of each of a container's mounts: hostPath volumes are the host's
/// directories (this machine is the seed host), claim templates the StatefulSet's volume.
fn mounts_of(sts: &StatefulSet, container: &Container, volume: &Path) -> Result<Vec<(String, PathBuf)>, String> {
    let spec = sts.spec.as_ref().ok_or("no spec")?;
    let pod = spec.template.spec.as_ref().ok_or("no pod spec")?;
    let claims: Vec<String> =
        spec.volume_claim_templates.iter().flatten().filter_map(|c| c.metadata.name.clone()).collect();
    let mut out = Vec::new();
    for m in container.volume_mounts.iter().flatten() {
        let host = pod.volumes.iter().flatten().find(|v| v.name == m.name).and_then(|v| v.host_path.as_ref());
        let local = match host {
            Some(h) => PathBuf::from(&h.path),
            None if claims.contains(&m.name) => volume.join(&m.name),
            None => continue, // secret volumes: the stand-in writes its own certificate files
        };
        std::fs::create_dir_all(&local).map_err(|e| e.to_string())?;
        out.push((m.mount_path.clone(), local));
    }
    Ok(out)
}

/// Runs the pod's init containers to completion, as a kubelet would before starting etcd; all
/// of them as the test's user (the stand-in's volume and etcd are that user's). The ones that
/// run as root (the ownership step, `data-dir`) are left out: handing the volume to etcd's user
/// has no meaning here, and the unit tests of `etcd::data_dir_script` run it.
async fn run_init_containers(sts: &StatefulSet, volume: &Path, tools: &Path) -> Result<(), String> {
    let pod = sts.spec.as_ref().and_then(|s| s.template.spec.as_ref()).ok_or("no pod spec")?;
    let pod_name = format!("{}-0", sts.name_any());
    let as_root = |c: &&Container| c.security_context.as_ref().and_then(|s| s.run_as_user) == Some(0);
    for c in pod.init_containers.iter().flatten().filter(|c| !as_root(c)) {
        let mounts = mounts_of(sts, c, volume)?;
        let mut env = Vec::new();
        for e in c.env.iter().flatten() {
            let field = e.value_from.as_ref().and_then(|v| v.field_ref.as_ref()).map(|f| f.field_path.as_str());
            match (e.value.as_deref(), field) {
                (Some(v), _) => env.push((e.name.clone(), v.to_string())),
                (None, Some("metadata.name")) => env.push((e.name.clone(), pod_name.clone())),
                _ => continue,
            };
        }
        // `$(VAR)` in the command and arguments is the kubelet's expansion of the container's env.
        let expand = |a: &str| env.iter().fold(a.to_string(), |a, (k, v)| a.replace(&format!("$({k})"), v));
        let argv: Vec<String> =
            c.command.iter().flatten().chain(c.args.iter().flatten()).map(|a| map_paths(&expand(a), &mounts)).collect();
        let (program, args) = argv.split_first().ok_or_else(|| format!("init container {} has no command", c.name))?;
        if program == "etcd-backup" {
            // The restore's own code, in this process (the test has no image with the binary).
            restore_in_process(args, tools).await.map_err(|e| format!("init container {}: {e}", c.name))?;
            continue;
        }
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(args);
        let path = format!("{}:{}", tools.display(), std::env::var("PATH").unwrap_or_default());
        cmd.env("PATH", path);
        cmd.envs(env.iter().map(|(k, v)| (k, v)));
        let out = cmd.output().await.map_err(|e| format!("init container {}: {e}", c.name))?;
        if !out.status.success() {
            return Err(format!(
                "init container {} failed ({}): {}",
                c.name,
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    Ok(())
}

/// `etcd-backup restore --k=v ...` through the library, with etcd and etcdctl from `tools`.
async fn restore_in_process(args: &[String], tools: &Path) -> Result<(), String> {
    let (sub, flags) = args.split_first().ok_or("etcd-backup without a subcommand")?;
    if sub != "restore" {
        return Err(format!("etcd-backup {sub} is not an init step"));
    }
    let get = |name: &str| flags.iter().find_map(|a| a.strip_prefix(&format!("--{name}="))).map(str::to_string);
    let need = |name: &str| get(name).ok_or_else(|| format!("etcd-backup restore without --{name}"));
    let options = etcd_backup::restore::Options {
        store: PathBuf::from(need("store")?),
        data_dir: PathBuf::from(need("data-dir")?),
        name: need("name")?,
        initial_cluster: need("initial-cluster")?,
        initial_advertise_peer_urls: need("initial-advertise-peer-urls")?,
        final_snapshot: get("final-snapshot"),
        etcd: tools.join("etcd"),
        etcdctl: tools.join("etcdctl"),
    };
    etcd_backup::restore::run(&options).await.map(drop).map_err(|e| e.to_string())
}

impl EtcdStandIn {
    /// Starts etcd for `sts`, on `ports` (client, peer) when given (a restart), else on free ones.
    pub async fn start(
        client: &kube::Client,
        sts: &StatefulSet,
        volumes: &Volumes,
        ports: Option<(u16, u16)>,
    ) -> Result<Self, String> {
        let namespace = sts.namespace().unwrap_or_default();
        let assets = Assets::from_env().map_err(|e| e.to_string())?;
        let tools = assets.etcd.parent().ok_or("assets without a directory")?.to_path_buf();
        let volume = volumes.of(&sts.uid().unwrap_or_default())?;
        run_init_containers(sts, volume.path(), &tools).await?;
        let etcd = sts
            .spec
            .as_ref()
            .and_then(|s| s.template.spec.as_ref())
            .and_then(|p| p.containers.iter().find(|c| c.name == "etcd"))
            .ok_or("no etcd container")?;
        let mounts = mounts_of(sts, etcd, volume.path())?;
        let data_dir = etcd
            .args
            .iter()
            .flatten()
            .find_map(|a| a.strip_prefix("--data-dir="))
            .map(|d| map_paths(d, &mounts))
            .ok_or("etcd has no --data-dir")?;
        let certs = Arc::new(tempfile::tempdir().map_err(|e| e.to_string())?);
        let d = certs.path();
        for name in ["ca-etcd-bundle", "etcd-server"] {
            write_secret(client, &namespace, name, &d.join(name)).await?;
        }
        let p = |s: &str, k: &str| d.join(s).join(k).display().to_string();
        let service = Api::<Service>::namespaced(client.clone(), &namespace)
            .get("etcd-main-client")
            .await
            .map_err(|e| format!("reading the etcd client Service: {e}"))?;
        let service_ip = service
            .spec
            .and_then(|s| s.cluster_ip)
            .and_then(|ip| ip.parse::<Ipv4Addr>().ok())
            .filter(Ipv4Addr::is_loopback);
        let host = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let (client_port, peer_port) = match ports {
            Some(p) => p,
            None => (
                testenv::free_port(host).map_err(|e| e.to_string())?,
                testenv::free_port(host).map_err(|e| e.to_string())?,
            ),
        };
        let local_url = format!("https://127.0.0.1:{client_port}");
        let mut listen = vec![local_url.clone()];
        if let Some(ip) = service_ip {
            listen.push(format!("https://{ip}:2379"));
        }
        let args = vec![
            format!("--data-dir={data_dir}"),
            format!("--listen-client-urls={}", listen.join(",")),
            format!("--advertise-client-urls={local_url}"),
            format!("--listen-peer-urls=http://127.0.0.1:{peer_port}"),
            format!("--initial-advertise-peer-urls=http://127.0.0.1:{peer_port}"),
            format!("--initial-cluster=default=http://127.0.0.1:{peer_port}"),
            "--client-cert-auth=true".into(),
            format!("--trusted-ca-file={}", p("ca-etcd-bundle", "bundle.crt")),
            format!("--cert-file={}", p("etcd-server", "tls.crt")),
            format!("--key-file={}", p("etcd-server", "tls.key")),
            "--unsafe-no-fsync=true".into(),
            "--log-level=warn".into(),
            "--logger=zap".into(),
        ];
        let process = Process::spawn("etcd", &assets.etcd, &args, d).map_err(|e| e.to_string())?;
        let generation = sts.metadata.generation;
        Ok(Self { process, generation, ports: (client_port, peer_port), local_url, service_ip, certs })
    }
}

/// The running kube-apiserver of one shoot.
pub struct ApiServerStandIn {
    pub process: Process,
    /// The Deployment generation it was started for: a newer one (new certificates, keys or
    /// flags) restarts it, as a rollout replaces the pod.
    pub generation: Option<i64>,
    pub dir: tempfile::TempDir,
}

impl ApiServerStandIn {
    pub async fn start(
        client: &kube::Client,
        namespace: &str,
        address: Ipv4Addr,
        etcd_url: &str,
        generation: Option<i64>,
    ) -> Result<Self, String> {
        let assets = Assets::from_env().map_err(|e| e.to_string())?;
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let d = dir.path();
        for name in [
            "ca-etcd-bundle",
            "etcd-client",
            "kube-apiserver",
            "ca-client-bundle",
            "ca-front-proxy-bundle",
            "front-proxy-client",
            "service-account-key",
            "kube-apiserver-etcd-encryption-configuration",
        ] {
            write_secret(client, namespace, name, &d.join(name)).await?;
        }
        // Mid-rotation of the service-account key, the previous key still verifies tokens.
        let previous_sa =
            write_secret(client, namespace, "service-account-key-old", &d.join("service-account-key-old"))
                .await
                .is_ok();
        let p = |s: &str, k: &str| d.join(s).join(k).display().to_string();
        let mut apiserver_args = vec![
            format!("--etcd-servers={etcd_url}"),
            format!("--etcd-cafile={}", p("ca-etcd-bundle", "bundle.crt")),
            format!("--etcd-certfile={}", p("etcd-client", "tls.crt")),
            format!("--etcd-keyfile={}", p("etcd-client", "tls.key")),
            // As the shoot's real kube-apiserver: Secrets encrypted at rest with the shoot's key.
            format!(
                "--encryption-provider-config={}",
                p("kube-apiserver-etcd-encryption-configuration", "encryption-configuration.yaml")
            ),
            format!("--bind-address={address}"),
            format!("--advertise-address={address}"),
            "--secure-port=443".into(),
            "--insecure-port=0".into(),
            format!("--cert-dir={}", d.join("certs").display()),
            format!("--tls-cert-file={}", p("kube-apiserver", "tls.crt")),
            format!("--tls-private-key-file={}", p("kube-apiserver", "tls.key")),
            format!("--client-ca-file={}", p("ca-client-bundle", "bundle.crt")),
            format!("--requestheader-client-ca-file={}", p("ca-front-proxy-bundle", "bundle.crt")),
            "--requestheader-allowed-names=front-proxy-client".into(),
            "--requestheader-username-headers=X-Remote-User".into(),
            "--requestheader-group-headers=X-Remote-Group".into(),
            format!("--proxy-client-cert-file={}", p("front-proxy-client", "tls.crt")),
            format!("--proxy-client-key-file={}", p("front-proxy-client", "tls.key")),
            "--authorization-mode=Node,RBAC".into(),
            "--enable-bootstrap-token-auth=true".into(),
            // As the shoot's real kube-apiserver (kube-proxy runs privileged).
            "--allow-privileged=true".into(),
            "--service-cluster-ip-range=10.112.0.0/13".into(),
            "--service-account-issuer=https://kubernetes.default.svc".into(),
            format!("--service-account-key-file={}", p("service-account-key", "sa.pub")),
            format!("--service-account-signing-key-file={}", p("service-account-key", "sa.key")),
            "--disable-admission-plugins=ServiceAccount".into(),
            "--enable-priority-and-fairness=false".into(),
        ];
        if previous_sa {
            apiserver_args.push(format!("--service-account-key-file={}", p("service-account-key-old", "sa.pub")));
        }
        let mut process =
            Process::spawn("kube-apiserver", &assets.kube_apiserver, &apiserver_args, d).map_err(|e| e.to_string())?;
        // Ready when /readyz answers to the admin kubeconfig gardenlet generated (TLS verified).
        let shoot = admin_client(client, namespace).await?;
        let started = std::time::Instant::now();
        loop {
            process.check_alive().map_err(|e| e.to_string())?;
            let request = http::Request::get("/readyz").body(Vec::new()).map_err(|e| e.to_string())?;
            if shoot.request_text(request).await.is_ok_and(|b| b.trim() == "ok") {
                break;
            }
            if started.elapsed() > std::time::Duration::from_secs(180) {
                return Err(format!("stand-in kube-apiserver not ready: {}", process.log_tail()));
            }
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
        publish_root_ca(&shoot, &p("ca-client-bundle", "bundle.crt")).await?;
        Ok(Self { process, generation, dir })
    }
}

/// What kube-controller-manager's root CA publisher writes once its controllers run (the
/// stand-in control plane has no kube-controller-manager): `kube-system/kube-root-ca.crt`, which
/// gardenlet waits for before it creates machines.
async fn publish_root_ca(shoot: &kube::Client, ca_file: &str) -> Result<(), String> {
    use k8s_openapi::api::core::v1::ConfigMap;
    let ca = std::fs::read_to_string(ca_file).map_err(|e| format!("reading {ca_file}: {e}"))?;
    let config_map = ConfigMap {
        metadata: kube::api::ObjectMeta { name: Some("kube-root-ca.crt".into()), ..Default::default() },
        data: Some(BTreeMap::from([("ca.crt".to_string(), ca)])),
        ..Default::default()
    };
    match Api::<ConfigMap>::namespaced(shoot.clone(), "kube-system").create(&Default::default(), &config_map).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
        Err(e) => Err(format!("publishing kube-system/kube-root-ca.crt: {e}")),
    }
}

/// A client for the shoot's API from the admin kubeconfig gardenlet generated.
pub async fn admin_client(seed: &kube::Client, namespace: &str) -> Result<kube::Client, String> {
    let admin = Api::<Secret>::namespaced(seed.clone(), namespace)
        .get("kubeconfig-admin")
        .await
        .map_err(|e| format!("reading kubeconfig-admin: {e}"))?;
    let text = admin.data.unwrap_or_default().get("kubeconfig").map(|b| String::from_utf8_lossy(&b.0).to_string());
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&text.unwrap_or_default()).map_err(|e| e.to_string())?;
    testenv::client_from(&kubeconfig).await.map_err(|e| e.to_string())
}
