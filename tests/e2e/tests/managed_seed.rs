//! ManagedSeed on the local garden (GEP-13): `example/managedseed.yaml` applied as an operator
//! applies it. Its shoot becomes a real cluster with a node; the local seed's gardenlet deploys a
//! gardenlet into it (its image pulled from the local registry by the shoot's node), which
//! registers the Seed `managed`; the ManagedSeed reports `SeedRegistered`. The scheduler places
//! a shoot that selects managed seeds on it, and the new seed's gardenlet and provider-local
//! create it there (hibernated: see below); while that shoot is there, deleting the ManagedSeed
//! keeps the seed (`SeedInUse`); once the shoot is gone the Seed, the seed's extensions,
//! gardenlet in the shoot and its garden identity are removed; then the shoot is deleted.
//! Before that, a workerless shoot migrates from the local seed to the managed one with its
//! etcd data (see [`migrate_a_shoot_from_the_local_seed_to_the_managed_one`]).
//! While the workerless shoot is still on the local seed, the managed seed's gardenlet, as
//! itself (its client certificate, `gardener.cloud:system:seed:managed`), is refused that
//! shoot's ShootState, Shoot and credentials and the local Seed, while it may reach its own
//! shoot's, and the local seed's gardenlet, as itself, reaches the former (see
//! [`a_seed_reaches_only_its_own_objects`]).
//! Gardener's e2e test "ManagedSeed" (test/e2e/gardener/managedseed) is the model.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use e2e::garden::{BlockingGarden, Kind, LEASE, MANAGED_SEED, SEED, SHOOT};
use e2e::{kubectl, repo_root};
use std::time::{Duration, Instant};

const NS: &str = "garden";
const NAME: &str = "managed";
const SEED_NS: &str = "shoot--garden--managed";
const HOSTED: &str = "hosted";
const HOSTED_NS: &str = "garden-local";

fn diagnosis() -> String {
    let mut out = String::new();
    for (what, args) in [
        ("managedseed", vec!["-n", NS, "get", "managedseed", NAME, "-o", "jsonpath={.status}"]),
        ("shoot", vec!["-n", NS, "get", "shoot", NAME, "-o", "jsonpath={.status.lastOperation}"]),
        ("seed", vec!["get", "seed", NAME, "-o", "jsonpath={.status}"]),
        (
            "hosted shoot",
            vec!["-n", HOSTED_NS, "get", "shoot", HOSTED, "-o", "jsonpath={.spec.seedName} {.status.lastOperation}"],
        ),
        ("installations", vec!["get", "controllerinstallations", "-o", "wide"]),
        ("seed namespace pods", vec!["-n", SEED_NS, "get", "pods", "-o", "wide"]),
    ] {
        out.push_str(&format!("{what}: {}\n", kubectl(&args).unwrap_or_else(|e| e)));
    }
    out.push_str(&format!(
        "gardenlet in the shoot: {}\n",
        shoot_kubectl(&["-n", "garden", "get", "pods", "-o", "wide"])
    ));
    out.push_str(&format!("its log: {}\n", shoot_kubectl(&["-n", "garden", "logs", "deploy/gardenlet", "--tail=30"])));
    out
}

/// A shoot's admin kubeconfig (hack/shoot-kubeconfig.sh, an AdminKubeconfigRequest), written to a
/// file that is removed on drop.
struct ShootKubeconfig(std::path::PathBuf);

impl ShootKubeconfig {
    fn issue(project: &str, shoot: &str) -> Result<Self, String> {
        let out = std::process::Command::new(repo_root().join("hack/shoot-kubeconfig.sh"))
            .args([project, shoot])
            .env("KUBECTL", e2e::assets().join("kubectl"))
            .env("KUBECONFIG_FILE", e2e::kubeconfig())
            .output()
            .map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(format!("no kubeconfig for {project}/{shoot}: {}", String::from_utf8_lossy(&out.stderr)));
        }
        let path = std::env::temp_dir().join(format!("{project}-{shoot}-{}.kubeconfig", std::process::id()));
        std::fs::write(&path, &out.stdout).map_err(|e| e.to_string())?;
        Ok(Self(path))
    }

    fn command(&self) -> std::process::Command {
        let mut c = std::process::Command::new(e2e::assets().join("kubectl"));
        c.arg(format!("--kubeconfig={}", self.0.display()));
        c
    }

    fn kubectl(&self, args: &[&str]) -> Result<String, String> {
        let out = self.command().args(args).output().map_err(|e| e.to_string())?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(format!("kubectl {} failed: {}", args.join(" "), String::from_utf8_lossy(&out.stderr)))
        }
    }
}

impl Drop for ShootKubeconfig {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// kubectl against the managed shoot, with its admin kubeconfig; failures come back as text.
fn shoot_kubectl(args: &[&str]) -> String {
    match ShootKubeconfig::issue("garden", NAME) {
        Ok(k) => k.kubectl(args).unwrap_or_else(|e| e),
        Err(e) => e,
    }
}

/// `kubectl port-forward` through the managed shoot's API server and the kubelet of its node to
/// a Service there; the forward ends on drop.
struct PortForward {
    child: std::process::Child,
    port: u16,
}

impl PortForward {
    fn start(shoot: &ShootKubeconfig, namespace: &str, target: &str, remote: u16) -> Self {
        use std::io::BufRead;
        let mut child = shoot
            .command()
            .args(["-n", namespace, "port-forward", target, &format!(":{remote}")])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("kubectl port-forward starts");
        let mut line = String::new();
        let mut out = std::io::BufReader::new(child.stdout.take().expect("stdout"));
        // "Forwarding from 127.0.0.1:<port> -> <remote>"
        let read = out.read_line(&mut line);
        let port = line
            .strip_prefix("Forwarding from 127.0.0.1:")
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|p| p.parse().ok());
        let Some(port) = port else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("port-forward to {namespace}/{target} did not start ({read:?}: {line:?})\n{}", diagnosis());
        };
        // Keep reading (and discarding) its output so the pipe never fills.
        std::thread::spawn(move || for _ in out.lines() {});
        Self { child, port }
    }
}

impl Drop for PortForward {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits until `probe` returns `Some`, at most `timeout`; returns the value and how long it took.
fn wait<T>(what: &str, timeout: Duration, mut probe: impl FnMut() -> Result<Option<T>, String>) -> (T, Duration) {
    let start = Instant::now();
    let mut last = String::new();
    loop {
        match probe() {
            Ok(Some(v)) => return (v, start.elapsed()),
            Ok(None) => {}
            Err(e) => last = e,
        }
        if start.elapsed() > timeout {
            panic!("{what}: not within {timeout:?}; last: {last}\n{}", diagnosis());
        }
        std::thread::sleep(Duration::from_secs(2));
    }
}

fn field(args: &[&str]) -> Result<String, String> {
    kubectl(args).map(|s| s.trim().to_string())
}

/// The garden for the polls (e2e::garden: one connection instead of a kubectl per poll).
fn garden() -> &'static BlockingGarden {
    static GARDEN: std::sync::OnceLock<BlockingGarden> = std::sync::OnceLock::new();
    GARDEN.get_or_init(BlockingGarden::connect)
}

/// A shoot's `{seedName} {lastOperation.type} {lastOperation.state}`.
fn last_operation(namespace: &str, name: &str) -> Result<String, String> {
    let path = "{.status.seedName} {.status.lastOperation.type} {.status.lastOperation.state}";
    garden().field(&SHOOT, Some(namespace), name, path).map(|s| s.trim().to_string())
}

/// `Some(())` once the object is gone.
fn gone_object(kind: &Kind, namespace: Option<&str>, name: &str) -> Result<Option<()>, String> {
    garden().gone(kind, namespace, name)
}

/// A condition of an object: `{status} {reason}: {message}`.
fn condition((kind, namespace, name): (&Kind, Option<&str>, &str), type_: &str) -> Result<String, String> {
    let path = format!(
        "{{.status.conditions[?(@.type==\"{type_}\")].status}} {{.status.conditions[?(@.type==\"{type_}\")].reason}}: {{.status.conditions[?(@.type==\"{type_}\")].message}}"
    );
    garden().field(kind, namespace, name, &path).map(|s| s.trim().to_string())
}

fn gone(args: &[&str]) -> Result<Option<()>, String> {
    match kubectl(args) {
        Ok(out) if out.trim().is_empty() => Ok(Some(())),
        Ok(out) => Err(format!("still there: {out}")),
        Err(e) if e.contains("NotFound") || e.contains("not found") => Ok(Some(())),
        Err(e) => Err(e),
    }
}

fn delete_shoot(namespace: &str, name: &str) {
    kubectl(&["-n", namespace, "annotate", "shoot", name, "confirmation.gardener.cloud/deletion=true", "--overwrite"])
        .unwrap();
    kubectl(&["-n", namespace, "delete", "shoot", name, "--wait=false"]).unwrap();
}

#[test]
fn a_shoot_becomes_a_seed_hosts_a_shoot_and_is_released_only_when_unused() {
    let manifest = std::fs::read_to_string(repo_root().join("example/managedseed.yaml")).unwrap();
    e2e::apply(NS, &manifest);
    // The shoot that migrates later is created meanwhile, on `local`, with credentials of its
    // own (so that no shoot on the managed seed uses them before the migration).
    e2e::apply(HOSTED_NS, MOVER_CREDENTIALS);
    e2e::apply(HOSTED_NS, &mover_manifest());

    let (_, created) = wait("the managed seed's shoot is created", Duration::from_secs(600), || {
        let op = last_operation(NS, NAME)?;
        Ok((op.ends_with("Create Succeeded") || op.ends_with("Reconcile Succeeded")).then_some(()))
    });
    println!("shoot {NAME} created with a Ready node in {created:?}");

    let ms = (&MANAGED_SEED, Some(NS), NAME);
    let (_, registered) = wait("SeedRegistered", Duration::from_secs(300), || {
        let c = condition(ms, "SeedRegistered")?;
        Ok(c.starts_with("True").then_some(()))
    });
    println!("gardenlet deployed into the shoot and Seed {NAME} registered in {registered:?}");
    assert!(condition(ms, "ShootReconciled").unwrap().starts_with("True"));
    assert!(condition((&SEED, None, NAME), "GardenletReady").unwrap().starts_with("True"));
    let pods = shoot_kubectl(&[
        "-n",
        "garden",
        "get",
        "pods",
        "-l",
        "app.kubernetes.io/name=gardenlet",
        "-o",
        "jsonpath={.items[*].status.phase}",
    ]);
    assert_eq!(pods.trim(), "Running", "gardenlet runs in the shoot\n{}", diagnosis());

    // The scheduler places a shoot that selects managed seeds on the new seed, and the new seed's
    // gardenlet creates it there. It is created hibernated ("never started": namespace, secrets,
    // extension objects reconciled by the provider-local the new gardenlet installed, control
    // plane at zero replicas), which keeps this step short; a control plane that runs on the
    // managed seed, etcd volume included, is the migrated shoot's below.
    let hosted = format!(
        "apiVersion: core.gardener.cloud/v1beta1\nkind: Shoot\nmetadata:\n  name: {HOSTED}\n  namespace: {HOSTED_NS}\nspec:\n  hibernation:\n    enabled: true\n  cloudProfileName: local\n  secretBindingName: local\n  region: local\n  seedSelector:\n    matchLabels:\n      seed.gardener.cloud/managed: \"true\"\n  kubernetes:\n    version: 1.20.2\n  networking:\n    type: local\n    nodes: 10.12.0.0/16\n    pods: 10.128.0.0/16\n    services: 10.129.0.0/16\n  provider:\n    type: local\n"
    );
    e2e::apply(HOSTED_NS, &hosted);
    let (seed, scheduled) = wait("the hosted shoot is scheduled", Duration::from_secs(120), || {
        let seed = garden().field(&SHOOT, Some(HOSTED_NS), HOSTED, "{.spec.seedName}")?;
        Ok((!seed.is_empty()).then_some(seed))
    });
    assert_eq!(seed, NAME, "the only seed the shoot selects");
    println!("shoot {HOSTED} scheduled to seed {NAME} in {scheduled:?}");
    let (_, hosted_created) = wait("the hosted shoot is created on the managed seed", Duration::from_secs(600), || {
        Ok((last_operation(HOSTED_NS, HOSTED)? == format!("{NAME} Create Succeeded")).then_some(()))
    });
    println!("shoot {HOSTED} created (hibernated) by the managed seed's gardenlet in {hosted_created:?}");
    let infrastructure = shoot_kubectl(&[
        "-n",
        "shoot--local--hosted",
        "get",
        "infrastructure",
        HOSTED,
        "-o",
        "jsonpath={.status.lastOperation.state}",
    ]);
    assert_eq!(
        infrastructure.trim(),
        "Succeeded",
        "provider-local in the managed seed reconciled the Infrastructure\n{}",
        diagnosis()
    );

    a_seed_reaches_only_its_own_objects();
    let marker = migrate_a_shoot_from_the_local_seed_to_the_managed_one();
    a_lost_seeds_shoot_is_restored_on_another_seed_from_its_backups(&marker);

    // Deleting the ManagedSeed keeps the seed while a shoot uses it.
    kubectl(&["-n", NS, "delete", "managedseed", NAME, "--wait=false"]).unwrap();
    wait("SeedInUse", Duration::from_secs(120), || {
        let c = condition(ms, "SeedRegistered")?;
        Ok(c.contains("SeedInUse").then_some(()))
    });
    assert!(kubectl(&["get", "seed", NAME]).is_ok(), "the seed stays while {HOSTED} uses it");

    let start = Instant::now();
    delete_shoot(HOSTED_NS, HOSTED);
    let (_, _) =
        wait("the hosted shoot is deleted", Duration::from_secs(600), || gone_object(&SHOOT, Some(HOSTED_NS), HOSTED));
    println!("shoot {HOSTED} deleted from the managed seed in {:?}", start.elapsed());
    wait("the migrated shoot is deleted", Duration::from_secs(600), || gone_object(&SHOOT, Some(HOSTED_NS), MOVER));
    println!("shoot {MOVER} deleted (from local, where it runs after the takeover) in {:?}", start.elapsed());
    kubectl(&["-n", HOSTED_NS, "delete", "secretbinding,secret", "mover", "--ignore-not-found"]).unwrap();
    let (_, released) =
        wait("the ManagedSeed is released", Duration::from_secs(300), || gone_object(&MANAGED_SEED, Some(NS), NAME));
    println!("ManagedSeed released in {released:?} after its last shoot");
    gone_object(&SEED, None, NAME).unwrap().unwrap();
    // The seed's heartbeat Lease is owned by the Seed: the garden's garbage collector removes it.
    let (_, collected) = wait("the seed's heartbeat Lease is collected", Duration::from_secs(60), || {
        gone_object(&LEASE, Some("gardener-system-seed-lease"), NAME)
    });
    println!("the heartbeat Lease of seed {NAME} collected {collected:?} after the release");
    let installations =
        field(&["get", "controllerinstallations", "-o", "jsonpath={.items[*].spec.seedRef.name}"]).unwrap();
    assert!(
        !installations.split_whitespace().any(|s| s == NAME),
        "the seed's extensions are uninstalled: {installations}"
    );
    gone(&["-n", NS, "get", "serviceaccount", "gardenlet-managed", "--ignore-not-found", "-o", "name"])
        .unwrap()
        .unwrap();
    let left = shoot_kubectl(&["-n", "garden", "get", "deployment", "gardenlet", "--ignore-not-found", "-o", "name"]);
    assert!(left.trim().is_empty(), "gardenlet left the shoot: {left}");

    let start = Instant::now();
    delete_shoot(NS, NAME);
    wait("the managed seed's shoot is deleted", Duration::from_secs(600), || gone_object(&SHOOT, Some(NS), NAME));
    println!("shoot {NAME} deleted in {:?}", start.elapsed());
}

/// The managed seed's gardenlet, as itself in the garden: the kubeconfig with its client
/// certificate that its bootstrap wrote into the shoot (`garden/gardenlet-kubeconfig`), in a
/// file removed on drop.
struct SeedIdentity(tempfile::NamedTempFile, Option<String>);

impl SeedIdentity {
    /// From the base64 `kubeconfig` of a gardenlet's kubeconfig Secret (`what` names it in a
    /// failure), its requests sent to `server` when given.
    fn from_secret_data(encoded: &str, what: &str, server: Option<String>) -> Self {
        use base64::Engine;
        let kubeconfig = base64::engine::general_purpose::STANDARD
            .decode(encoded.trim())
            .unwrap_or_else(|e| panic!("{what} ({e}): {encoded}\n{}", diagnosis()));
        let mut file = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut file, &kubeconfig).unwrap();
        Self(file, server.map(|s| format!("--server={}", s.trim())))
    }

    fn of_managed_seed() -> Self {
        let path = "jsonpath={.data.kubeconfig}";
        let encoded = shoot_kubectl(&["-n", "garden", "get", "secret", "gardenlet-kubeconfig", "-o", path]);
        Self::from_secret_data(&encoded, "the managed gardenlet's kubeconfig Secret", None)
    }

    /// The local seed's gardenlet: its kubeconfig Secret in the garden (which is its seed).
    fn of_local_seed() -> Self {
        let encoded =
            kubectl(&["-n", "garden", "get", "secret", "gardenlet-kubeconfig", "-o", "jsonpath={.data.kubeconfig}"])
                .unwrap_or_else(|e| e);
        // Its server is the in-cluster name (kubernetes.default.svc), which the host does not
        // resolve: the same API server at the address the admin kubeconfig uses.
        let server = kubectl(&["config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}"]).unwrap();
        Self::from_secret_data(&encoded, "the local gardenlet's kubeconfig Secret (seedIdentity.enabled)", Some(server))
    }

    fn kubectl(&self, args: &[&str]) -> Result<String, String> {
        let mut all: Vec<&str> = self.1.iter().map(String::as_str).collect();
        all.extend_from_slice(args);
        e2e::kubectl_with(self.0.path(), &all)
    }
}

/// `result` is the API server's refusal of the managed seed's user.
fn refused(what: &str, result: Result<String, String>) {
    match result {
        Err(e) if e.contains("Forbidden") || e.contains("forbidden") => {
            assert!(e.contains(&format!("gardener.cloud:system:seed:{NAME}")), "{what}: refused as another user: {e}");
            println!("refused as it must be: {what}");
        }
        other => panic!("{what}: the managed seed must be refused, got {other:?}"),
    }
}

/// GEP-13's trust boundary between seeds (docs/security.md, the seed authorizer): the managed
/// seed's gardenlet reaches its own shoot's objects and not those of the shoot on `local`. The
/// writes are server-side dry runs: authorized and admitted exactly as real ones, but a wrongly
/// allowed one changes nothing.
fn a_seed_reaches_only_its_own_objects() {
    let seed = SeedIdentity::of_managed_seed();
    let dry = "--dry-run=server";
    let annotate = |shoot: &str| {
        seed.kubectl(&[
            "-n",
            HOSTED_NS,
            "annotate",
            "shoot",
            shoot,
            "e2e.gardener.cloud/touched=true",
            "--overwrite",
            dry,
        ])
    };
    // Its own: the hosted shoot, its credentials, its Seed.
    seed.kubectl(&["-n", HOSTED_NS, "get", "shoot", HOSTED, "-o", "name"]).expect("the managed seed reads its shoot");
    annotate(HOSTED).expect("the managed seed patches its shoot");
    let own_state = seed.kubectl(&["-n", HOSTED_NS, "get", "shootstate", HOSTED, "-o", "name"]);
    assert!(
        own_state.as_ref().map_or_else(|e| e.contains("NotFound"), |_| true),
        "the managed seed may read its shoot's ShootState: {own_state:?}"
    );
    seed.kubectl(&["-n", HOSTED_NS, "get", "secret", "local", "-o", "name"])
        .expect("the managed seed reads its shoot's credentials");
    seed.kubectl(&["delete", "seed", NAME, dry]).expect("the managed seed may delete its own Seed");

    // The shoot on `local` and what belongs to it.
    let state = kubectl(&["-n", HOSTED_NS, "get", "shootstate", MOVER, "-o", "name"]);
    println!("the mover's ShootState as the admin sees it: {state:?}");
    refused("the ShootState of a shoot on another seed", seed.kubectl(&["-n", HOSTED_NS, "get", "shootstate", MOVER]));
    refused("a patch of a shoot on another seed", annotate(MOVER));
    refused("the credentials of a shoot on another seed", seed.kubectl(&["-n", HOSTED_NS, "get", "secret", "mover"]));
    refused("deleting another Seed", seed.kubectl(&["delete", "seed", "local", dry]));
    let annotations =
        field(&["-n", HOSTED_NS, "get", "shoot", MOVER, "-o", "jsonpath={.metadata.annotations}"]).unwrap();
    assert!(!annotations.contains("e2e.gardener.cloud/touched"), "the mover is unchanged: {annotations}");

    // The same requests succeed for the seed that owns the mover, as itself (the writes again as
    // dry runs).
    let local = SeedIdentity::of_local_seed();
    local.kubectl(&["-n", HOSTED_NS, "get", "shootstate", MOVER, "-o", "name"]).expect("local reads the ShootState");
    local
        .kubectl(&["-n", HOSTED_NS, "annotate", "shoot", MOVER, "e2e.gardener.cloud/touched=true", "--overwrite", dry])
        .expect("local patches its shoot");
    local.kubectl(&["-n", HOSTED_NS, "get", "secret", "mover", "-o", "name"]).expect("local reads its credentials");
    local.kubectl(&["delete", "seed", "local", dry]).expect("local may delete its own Seed");
}

/// Control-plane migration between two real seeds (docs/migration.md): a workerless shoot created
/// on `local` gets a ConfigMap through its API; `spec.seedName` is set to `managed`; the local
/// gardenlet takes the final etcd snapshot into the backup store, the managed seed's gardenlet
/// restores etcd from it in the shoot `managed`, and the ConfigMap is read back through the
/// migrated API server with the same UID and resourceVersion. Nothing of the shoot is left in
/// the local seed. The shoot is workerless: the local machines would have to nest one more
/// level to be its nodes on the managed seed.
fn migrate_a_shoot_from_the_local_seed_to_the_managed_one() -> String {
    const MOVER_NS: &str = "shoot--local--mover";
    let (_, created) = wait(
        "the workerless shoot is created on local",
        Duration::from_secs(600),
        mover_reached("local Create Succeeded"),
    );
    println!("shoot {MOVER} created on seed local in {created:?}");

    let before = ShootKubeconfig::issue("local", MOVER).unwrap();
    before
        .kubectl(&["-n", "default", "create", "configmap", "marker", "--from-literal=written=before-the-move"])
        .unwrap();
    let identity = |k: &ShootKubeconfig, extra: &[&str]| {
        let mut args = vec![
            "-n",
            "default",
            "get",
            "configmap",
            "marker",
            "-o",
            "jsonpath={.metadata.uid} {.metadata.resourceVersion} {.data.written}",
        ];
        args.extend_from_slice(extra);
        k.kubectl(&args)
    };
    let written = identity(&before, &[]).unwrap();
    let cluster_ca = || {
        let configmap = format!("{MOVER}.ca-cluster");
        field(&["-n", HOSTED_NS, "get", "configmap", &configmap, "-o", "jsonpath={.data.ca\\.crt}"]).unwrap()
    };
    let ca_before = cluster_ca();
    drop(before);

    kubectl(&[
        "-n",
        HOSTED_NS,
        "patch",
        "shoot",
        MOVER,
        "--type=merge",
        "-p",
        &format!("{{\"spec\":{{\"seedName\":\"{NAME}\"}}}}"),
    ])
    .unwrap();
    let (_, migrated) = wait(
        "the migration to the managed seed",
        Duration::from_secs(480),
        mover_reached(&format!("{NAME} Restore Succeeded")),
    );
    println!("shoot {MOVER} migrated from local to {NAME} (Migrate, then Restore) in {migrated:?}");

    // The source seed let go of everything.
    gone(&["get", "namespace", MOVER_NS, "--ignore-not-found", "-o", "name"]).unwrap().unwrap();
    // The same cluster CA, and the marker through the migrated API server: reached through the
    // managed shoot's API server and its node's kubelet (the API's address in the managed seed is
    // a Service inside that shoot).
    let ca_after = cluster_ca();
    assert_eq!(ca_after, ca_before, "the cluster CA moved with the shoot");
    let managed = ShootKubeconfig::issue("garden", NAME).unwrap();
    let forward = PortForward::start(&managed, MOVER_NS, "service/kube-apiserver", 443);
    let after = ShootKubeconfig::issue("local", MOVER).unwrap();
    let server = format!("--server=https://127.0.0.1:{}", forward.port);
    let tls_name = format!("--tls-server-name={}", mover_api_host());
    let (read, _) = wait("the marker through the migrated API server", Duration::from_secs(120), || {
        identity(&after, &[&server, &tls_name]).map(Some)
    });
    assert_eq!(read, written, "the marker kept its UID, resourceVersion and data");
    println!("ConfigMap marker read back on {NAME}: {read}");
    drop(forward);
    read
}

/// A probe for [`wait`]: the mover's lastOperation description once `{status.seedName}
/// {lastOperation.type} {lastOperation.state}` is `want`; until then what the shoot reports (the
/// wait's last word if it times out).
fn mover_reached(want: &str) -> impl FnMut() -> Result<Option<String>, String> {
    let want = want.to_string();
    move || {
        let path = "{.status.seedName} {.status.lastOperation.type} {.status.lastOperation.state}|{.status.lastOperation.description}";
        let out = garden().field(&SHOOT, Some(HOSTED_NS), MOVER, path)?;
        let (op, description) = out.split_once('|').unwrap_or((&out, ""));
        if op == want {
            return Ok(Some(description.to_string()));
        }
        Err(format!("{op}: {description}"))
    }
}

/// The host name of the mover's API server (its external address), which its serving certificate
/// names.
fn mover_api_host() -> String {
    let external = field(&[
        "-n",
        HOSTED_NS,
        "get",
        "shoot",
        MOVER,
        "-o",
        "jsonpath={.status.advertisedAddresses[?(@.name==\"external\")].url}",
    ])
    .unwrap();
    external.trim_start_matches("https://").split([':', '/']).next().unwrap_or_default().to_string()
}

/// The host directory of the mover's backups: `<backup store>/<bucket>/<entry>`, from its garden
/// BackupEntry (provider-local's layout, docs/backup.md).
fn mover_backup_dir() -> Result<std::path::PathBuf, String> {
    let entries = field(&[
        "-n",
        HOSTED_NS,
        "get",
        "backupentries.core.gardener.cloud",
        "-o",
        r#"jsonpath={range .items[*]}{.metadata.name} {.spec.bucketName}{"\n"}{end}"#,
    ])?;
    let prefix = format!("shoot--local--{MOVER}--");
    let (entry, bucket) = entries
        .lines()
        .filter(|l| l.starts_with(&prefix))
        .find_map(|l| l.split_once(' '))
        .ok_or_else(|| format!("no garden BackupEntry {prefix}*: {entries:?}"))?;
    Ok(e2e::state_dir().join("backup").join(bucket).join(entry))
}

/// The last revision of the newest delta snapshot in `dir` (`Incr-<start>-<end>-<unix>.json`).
fn newest_delta_end(dir: &std::path::Path) -> Option<i64> {
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let rest = name.strip_prefix("Incr-")?.strip_suffix(".json")?.to_string();
            rest.split('-').nth(1)?.parse::<i64>().ok()
        })
        .max()
}

/// GEP-17's bad case (docs/migration.md, "The bad case: the source is gone"): the seed that runs
/// the mover is lost. A ConfigMap is written through the mover's API on `managed`, and the managed
/// seed's backup sidecar stores it in a delta snapshot; then the seed stops: its gardenlet (the
/// ManagedSeed's `replicaCount: 0`) and the mover's control plane in it (scaled to zero, as the
/// loss of its machines would stop them, with nobody left to start them again). An operator moves
/// the shoot to `local` with `force-restore`; there is no final snapshot (the one of the first move
/// was consumed), so etcd comes back from the continuous backups, and both ConfigMaps, the marker
/// from before the first move with its UID and resourceVersion, are read back through the API
/// server on `local`. Then the lost seed's gardenlet comes back and leaves the shoot alone.
fn a_lost_seeds_shoot_is_restored_on_another_seed_from_its_backups(marker: &str) {
    const MOVER_NS: &str = "shoot--local--mover";
    let managed = ShootKubeconfig::issue("garden", NAME).unwrap();
    let forward = PortForward::start(&managed, MOVER_NS, "service/kube-apiserver", 443);
    let mover = ShootKubeconfig::issue("local", MOVER).unwrap();
    let server = format!("--server=https://127.0.0.1:{}", forward.port);
    let tls_name = format!("--tls-server-name={}", mover_api_host());
    let (written, _) = wait("a ConfigMap written on the managed seed", Duration::from_secs(120), || {
        let via = [server.as_str(), tls_name.as_str(), "-n", "default"];
        let create = [&via[..], &["create", "configmap", "on-managed", "--from-literal=seed=managed"]].concat();
        match mover.kubectl(&create) {
            Err(e) if !e.contains("AlreadyExists") => return Err(e),
            _ => {}
        }
        let jsonpath = "jsonpath={.metadata.uid} {.metadata.resourceVersion} {.data.seed}";
        mover.kubectl(&[&via[..], &["get", "configmap", "on-managed", "-o", jsonpath]].concat()).map(Some)
    });
    drop(forward);
    let revision: i64 = written.split_whitespace().nth(1).and_then(|r| r.parse().ok()).unwrap();
    let dir = mover_backup_dir().unwrap();
    let (_, stored) =
        wait("a delta snapshot of the managed seed's etcd with the write", Duration::from_secs(120), || {
            Ok(newest_delta_end(&dir).filter(|end| *end >= revision))
        });
    println!("ConfigMap on-managed (revision {revision}) in a delta snapshot in {} after {stored:?}", dir.display());

    // The seed is lost: its gardenlet stops (the ManagedSeed, which deploys it, keeps it at zero),
    // and so does the mover's control plane there.
    let replicas = |n: i32| format!("{{\"spec\":{{\"gardenlet\":{{\"deployment\":{{\"replicaCount\":{n}}}}}}}}}");
    kubectl(&["-n", NS, "patch", "managedseed", NAME, "--type=merge", "-p", &replicas(0)]).unwrap();
    managed.kubectl(&["-n", MOVER_NS, "scale", "deployment,statefulset", "--all", "--replicas=0"]).unwrap();
    let (_, stopped) =
        wait("the lost seed's gardenlet and the mover's control plane stop", Duration::from_secs(180), || {
            let gardenlet = managed.kubectl(&[
                "-n",
                "garden",
                "get",
                "pods",
                "-l",
                "app.kubernetes.io/name=gardenlet",
                "-o",
                "name",
            ])?;
            let control_plane = managed.kubectl(&["-n", MOVER_NS, "get", "pods", "-o", "name"])?;
            Ok((gardenlet.trim().is_empty() && control_plane.trim().is_empty()).then_some(()))
        });
    println!("seed {NAME} lost (its gardenlet and {MOVER}'s control plane stopped) in {stopped:?}");

    let start = Instant::now();
    kubectl(&[
        "-n",
        HOSTED_NS,
        "patch",
        "shoot",
        MOVER,
        "--type=merge",
        "-p",
        r#"{"metadata":{"annotations":{"gardener.cloud/operation":"force-restore"}},"spec":{"seedName":"local"}}"#,
    ])
    .unwrap();
    let (description, restored) =
        wait("the forced restore on local", Duration::from_secs(480), mover_reached("local Restore Succeeded"));
    println!("shoot {MOVER} restored on local from its backups in {restored:?}: {description}");
    assert!(
        description.contains("was restored from its backups") && description.contains("restored from Full-"),
        "the Restore's lastOperation names the snapshots etcd came back from: {description}"
    );
    let annotation =
        garden().field(&SHOOT, Some(HOSTED_NS), MOVER, r#"{.metadata.annotations.gardener\.cloud/operation}"#);
    assert_eq!(annotation.unwrap(), "", "the force-restore annotation is consumed");

    let back = ShootKubeconfig::issue("local", MOVER).unwrap();
    let identity = |name: &str, data: &str| {
        back.kubectl(&[
            "-n",
            "default",
            "get",
            "configmap",
            name,
            "-o",
            &format!("jsonpath={{.metadata.uid}} {{.metadata.resourceVersion}} {{.data.{data}}}"),
        ])
    };
    let (read, _) = wait("the ConfigMaps through the API server on local", Duration::from_secs(120), || {
        identity("on-managed", "seed").map(Some)
    });
    assert_eq!(read, written, "the write on the lost seed came back from its backups with its UID and resourceVersion");
    assert_eq!(identity("marker", "written").unwrap(), marker, "the marker from before the first move is still there");
    println!("ConfigMaps on-managed ({read}) and marker read back on local {:?} after the takeover", start.elapsed());

    // The lost seed's gardenlet comes back (it must run to release the seed): neither the shoot's
    // spec nor its status names its seed, so it leaves the mover's leftovers there as they are.
    kubectl(&["-n", NS, "patch", "managedseed", NAME, "--type=merge", "-p", &replicas(1)]).unwrap();
    let since = k8s_openapi::jiff::Timestamp::now();
    let (_, back) = wait(
        "the managed seed's gardenlet is back (a heartbeat newer than its return)",
        Duration::from_secs(180),
        || {
            let renewed = garden().field(&LEASE, Some("gardener-system-seed-lease"), NAME, "{.spec.renewTime}")?;
            let renewed: k8s_openapi::jiff::Timestamp =
                renewed.trim().parse().map_err(|e| format!("{renewed:?}: {e}"))?;
            Ok((renewed > since).then_some(()))
        },
    );
    println!("the managed seed's gardenlet is back {back:?} after its ManagedSeed asked for it");
    let left = managed
        .kubectl(&["-n", MOVER_NS, "get", "deployment,statefulset", "-o", "jsonpath={.items[*].spec.replicas}"])
        .unwrap();
    assert!(left.split_whitespace().all(|r| r == "0"), "the old seed started nothing of the mover again: {left}");
    assert_eq!(
        garden().field(&SHOOT, Some(HOSTED_NS), MOVER, "{.status.seedName} {.status.lastOperation.type}").unwrap(),
        "local Restore",
        "the old seed wrote nothing to the shoot"
    );
    clean_up_a_lost_seeds_leftovers(&managed, MOVER_NS, &format!("shoot--local--{MOVER}--"));

    // Deleted while the hosted shoot is deleted too; the seed is released once both are gone.
    delete_shoot(HOSTED_NS, MOVER);
}

const MOVER: &str = "mover";

/// The mover's own credentials: a Secret and its SecretBinding in the project.
const MOVER_CREDENTIALS: &str = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: mover\n  namespace: garden-local\ntype: Opaque\nstringData:\n  marker: mover-credentials\n---\napiVersion: core.gardener.cloud/v1beta1\nkind: SecretBinding\nmetadata:\n  name: mover\n  namespace: garden-local\nprovider:\n  type: local\nsecretRef:\n  name: mover\n  namespace: garden-local\n";

/// The workerless shoot that migrates from `local` to the managed seed.
fn mover_manifest() -> String {
    format!(
        "apiVersion: core.gardener.cloud/v1beta1\nkind: Shoot\nmetadata:\n  name: {MOVER}\n  namespace: {HOSTED_NS}\nspec:\n  seedName: local\n  cloudProfileName: local\n  secretBindingName: mover\n  region: local\n  kubernetes:\n    version: 1.20.2\n  networking:\n    services: 10.131.0.0/16\n  provider:\n    type: local\n"
    )
}

/// The extension kinds a shoot's namespace in a seed holds.
const EXTENSION_KINDS: &str = "infrastructures.extensions.gardener.cloud,controlplanes.extensions.gardener.cloud,networks.extensions.gardener.cloud,dnsrecords.extensions.gardener.cloud,operatingsystemconfigs.extensions.gardener.cloud,workers.extensions.gardener.cloud,extensions.extensions.gardener.cloud,containerruntimes.extensions.gardener.cloud";

/// What an operator does with a lost seed's leftovers once it is back (docs/migration.md,
/// "Leftovers after a forced takeover"): every extension object of the shoot there, and its
/// cluster-scoped BackupEntry (`entry_prefix`), is migrated first, so that its extension lets go
/// of it and keeps what it stands for (the backups in the shared store above all, which the shoot's
/// new seed writes now); only then are they deleted, with the namespace. Deleted without the
/// migration, the old seed's provider would delete the live backups. Until they are gone, the old
/// seed's extensions stay `Required`, and the seed cannot be released.
fn clean_up_a_lost_seeds_leftovers(managed: &ShootKubeconfig, namespace: &str, entry_prefix: &str) {
    let start = Instant::now();
    let mut objects: Vec<Vec<String>> = managed
        .kubectl(&["-n", namespace, "get", EXTENSION_KINDS, "-o", "name"])
        .unwrap()
        .lines()
        .map(|name| vec!["-n".to_string(), namespace.to_string(), name.to_string()])
        .collect();
    let entries = managed.kubectl(&["get", "backupentries.extensions.gardener.cloud", "-o", "name"]).unwrap();
    let entry = entries.lines().find(|n| n.contains(entry_prefix)).expect("the old seed's BackupEntry of the shoot");
    objects.push(vec![entry.to_string()]);
    for object in &objects {
        let mut args: Vec<&str> = object.iter().map(String::as_str).collect();
        args.splice(args.len() - 1..args.len() - 1, ["annotate"]);
        args.extend(["gardener.cloud/operation=migrate", "--overwrite"]);
        managed.kubectl(&args).unwrap();
    }
    let (_, migrated) = wait("the old seed's extensions let go of the leftovers", Duration::from_secs(180), || {
        for object in &objects {
            let mut args: Vec<&str> = object.iter().map(String::as_str).collect();
            args.splice(args.len() - 1..args.len() - 1, ["get"]);
            args.extend([
                "-o",
                "jsonpath={.status.lastOperation.type} {.status.lastOperation.state} {.metadata.finalizers}",
            ]);
            let state = managed.kubectl(&args)?;
            if state.trim() != "Migrate Succeeded" {
                return Err(format!("{}: {state:?}", object.join(" ")));
            }
        }
        Ok(Some(()))
    });
    for object in &objects {
        let mut args: Vec<&str> = object.iter().map(String::as_str).collect();
        args.splice(args.len() - 1..args.len() - 1, ["delete"]);
        args.push("--wait=false");
        managed.kubectl(&args).unwrap();
    }
    managed.kubectl(&["delete", "clusters.extensions.gardener.cloud", namespace, "--ignore-not-found"]).unwrap();
    managed.kubectl(&["delete", "namespace", namespace, "--wait=false"]).unwrap();
    wait("the leftover namespace is gone", Duration::from_secs(180), || {
        let left = managed.kubectl(&["get", "namespace", namespace, "--ignore-not-found", "-o", "name"])?;
        Ok(left.trim().is_empty().then_some(()))
    });
    let dir = mover_backup_dir().unwrap();
    assert!(newest_delta_end(&dir).is_some(), "the shoot's backups in {} are kept", dir.display());
    println!(
        "the lost seed's leftovers of {MOVER} migrated ({} objects, {migrated:?}) and removed {:?} after the start",
        objects.len(),
        start.elapsed()
    );
}
