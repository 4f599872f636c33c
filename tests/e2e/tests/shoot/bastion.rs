//! SSH to the shoot's node through a Bastion, as a user does it (GEP-15): a key pair of the
//! user's, an `operations.gardener.cloud` Bastion admitting the host's address, `ssh -J`-style
//! through the bastion's sshd to the node's sshd as `gardener` with the shoot's key pair from
//! the project namespace. A connection from a source outside the Bastion's ingress range is
//! refused; deleting the Bastion removes its Pod.

use e2e::kubectl;
use e2e::shoot::{CaseShoot, PROJECT_NS, STEP_TIMEOUT};
use k8s_openapi::api::core::v1::Node;
use kube::{Api, Client, ResourceExt};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

fn run(cmd: &mut Command) -> Result<String, String> {
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    if out.status.success() { Ok(text) } else { Err(format!("{:?} failed: {text}", cmd.get_program())) }
}

/// A new ed25519 key pair in `dir`; returns the private key's path.
fn key_pair(dir: &Path, name: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    run(Command::new("ssh-keygen").args(["-q", "-t", "ed25519", "-N", "", "-C", "e2e", "-f"]).arg(&path))
        .expect("ssh-keygen (hack/setup-local.sh installs openssh-client)");
    path
}

/// Writes the shoot's key pair `secret` (`id_rsa`) from the project namespace to `dir`.
fn shoot_key(dir: &Path, secret: &str) -> std::path::PathBuf {
    let b64 = kubectl(&["-n", PROJECT_NS, "get", "secret", secret, "-o", "jsonpath={.data.id_rsa}"]).unwrap();
    use base64::Engine;
    let key = base64::engine::general_purpose::STANDARD.decode(b64.trim()).unwrap();
    let path = dir.join(secret);
    std::fs::write(&path, key).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    path
}

const SSH_OPTIONS: [&str; 12] = [
    "-o",
    "LogLevel=ERROR",
    "-o",
    "StrictHostKeyChecking=no",
    "-o",
    "UserKnownHostsFile=/dev/null",
    "-o",
    "IdentitiesOnly=yes",
    "-o",
    "BatchMode=yes",
    "-o",
    "ConnectTimeout=10",
];

/// Runs `command` on `node` as `gardener` with `node_key`, through the bastion at `bastion` with
/// the user's `user_key`.
fn ssh_through(bastion: &str, user_key: &Path, node: &str, node_key: &Path, command: &str) -> Result<String, String> {
    let proxy = format!("ssh {} -i {} -W %h:%p gardener@{bastion}", SSH_OPTIONS.join(" "), user_key.display());
    run(Command::new("ssh")
        .args(SSH_OPTIONS)
        .arg("-o")
        .arg(format!("ProxyCommand={proxy}"))
        .arg("-i")
        .arg(node_key)
        .arg(format!("gardener@{node}"))
        .arg(command))
}

/// The host's source address towards the seed's pods (what the bastion sees from `ssh` here).
fn host_address_towards_pods() -> String {
    let pod_ip =
        kubectl(&["-n", "garden", "get", "pods", "-o", "jsonpath={.items[0].status.podIP}"]).expect("a garden pod");
    let route = run(Command::new("ip").args(["-o", "route", "get", pod_ip.trim()])).unwrap();
    let mut words = route.split_whitespace();
    words.find(|w| *w == "src");
    words.next().unwrap_or_else(|| panic!("no source address in {route:?}")).to_string()
}

fn bastion_field(bastion: &str, path: &str) -> Result<String, String> {
    kubectl(&["-n", PROJECT_NS, "get", "bastion.operations.gardener.cloud", bastion, "-o", &format!("jsonpath={path}")])
}

pub async fn ssh_through_a_bastion_reaches_the_node(s: &CaseShoot, shoot: &Client) {
    // The case's own names: its Bastions, and where the refusal is tried from (a pod in the
    // seed, outside the admitted range).
    let bastion_name = format!("{}-bastion", s.name);
    let elsewhere_name = format!("{}-elsewhere", s.name);
    let probe_ns = format!("{}-bastion-probe", s.name);
    let dir = tempfile::tempdir().unwrap();
    let user_key = key_pair(dir.path(), "user");
    let public = std::fs::read_to_string(dir.path().join("user.pub")).unwrap();
    let source = host_address_towards_pods();
    use base64::Engine;
    let bastion = serde_json::json!({
        "apiVersion": "operations.gardener.cloud/v1alpha1", "kind": "Bastion",
        "metadata": {"name": bastion_name, "namespace": PROJECT_NS},
        "spec": {"shootRef": {"name": s.name},
                 "sshPublicKey": base64::engine::general_purpose::STANDARD.encode(public.trim()),
                 "ingress": [{"ipBlock": {"cidr": format!("{source}/32")}}]},
    });
    let file = dir.path().join("bastion.json");
    std::fs::write(&file, bastion.to_string()).unwrap();
    kubectl(&["apply", "-f", &file.display().to_string()]).unwrap();
    let (address, ready) = s
        .wait("the Bastion is ready", STEP_TIMEOUT, || async {
            let state = bastion_field(
                &bastion_name,
                "{.status.conditions[?(@.type==\"BastionReady\")].status}/{.status.ingress.ip}",
            )?;
            match state.split_once('/') {
                Some(("True", ip)) if !ip.is_empty() => Ok(Some(ip.to_string())),
                _ => Err(format!("BastionReady/ip: {state}")),
            }
        })
        .await;
    eprintln!("bastion ready at {address} after {ready:?} (admitting {source}/32)");
    let creator = bastion_field(&bastion_name, "{.metadata.annotations.gardener\\.cloud/created-by}").unwrap();
    assert!(!creator.is_empty(), "admission records who created the Bastion");

    let node: Node = Api::<Node>::all(shoot.clone())
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .find(super::node_ready)
        .expect("a Ready node");
    let node_ip = node
        .status
        .iter()
        .flat_map(|s| s.addresses.iter().flatten())
        .find(|a| a.type_ == "InternalIP")
        .map(|a| a.address.clone())
        .expect("the node's InternalIP");
    let current = shoot_key(dir.path(), &format!("{}.ssh-keypair", s.name));
    // sshd on a node that just turned Ready may still be generating its host keys.
    let (hostname, took) = s
        .wait("ssh through the bastion to the node", Duration::from_secs(60), || async {
            ssh_through(&address, &user_key, &node_ip, &current, "hostname; id -un").map(Some)
        })
        .await;
    eprintln!("ssh to node {} ({node_ip}) through the bastion: {:?} after {took:?}", node.name_any(), hostname.trim());
    let mut lines = hostname.lines();
    assert_eq!(lines.next(), Some(node.name_any().as_str()), "the command ran on the node");
    assert_eq!(lines.next(), Some("gardener"), "as the user gardener");

    // rotate-ssh-keypair renewed the key pair: the previous one is accepted until the next
    // rotation; a key that is no shoot key is not.
    let previous = shoot_key(dir.path(), &format!("{}.ssh-keypair.old", s.name));
    ssh_through(&address, &user_key, &node_ip, &previous, "true")
        .unwrap_or_else(|e| panic!("the previous key pair is still accepted: {e}"));
    let stranger = key_pair(dir.path(), "stranger");
    let refused = ssh_through(&address, &user_key, &node_ip, &stranger, "true");
    assert!(refused.is_err_and(|e| e.contains("Permission denied")), "a key that is no shoot key is refused");

    // The bastion is a jump host to SSH ports only: nothing else in the seed is reachable from
    // it (here the API server's Service).
    let api = kubectl(&["-n", "default", "get", "service", "kubernetes", "-o", "jsonpath={.spec.clusterIP}"]).unwrap();
    let on_bastion = run(Command::new("ssh")
        .args(SSH_OPTIONS)
        .arg("-i")
        .arg(&user_key)
        .arg(format!("gardener@{address}"))
        .arg(format!("/bin/busybox nc -w 3 {api} 443 </dev/null; echo rc=$?")))
    .unwrap();
    eprintln!("from the bastion to the API server {api}:443: {}", on_bastion.trim());
    assert!(on_bastion.contains("rc=1") && on_bastion.contains("refused"), "egress is closed: {on_bastion}");

    // From outside the admitted range the bastion refuses the connection.
    kubectl(&["create", "namespace", &probe_ns]).unwrap();
    let probe = format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: probe\n  namespace: {probe_ns}\nspec:\n  restartPolicy: Never\n  automountServiceAccountToken: false\n  containers:\n  - name: probe\n    image: gardener-rs.local/busybox:1.35.0\n    command: [\"sh\", \"-c\", \"/bin/busybox nc -w 5 {address} 22 </dev/null; echo rc=$?\"]\n"
    );
    e2e::apply(&probe_ns, &probe);
    let (log, _) = s
        .wait("the probe pod ran", STEP_TIMEOUT, || async {
            let phase = kubectl(&["-n", &probe_ns, "get", "pod", "probe", "-o", "jsonpath={.status.phase}"])?;
            if phase != "Succeeded" {
                return Err(format!("phase {phase}"));
            }
            kubectl(&["-n", &probe_ns, "logs", "probe"]).map(Some)
        })
        .await;
    let probe_ip = kubectl(&["-n", &probe_ns, "get", "pod", "probe", "-o", "jsonpath={.status.podIP}"]).unwrap();
    eprintln!("from {probe_ip}, outside {source}/32: {}", log.trim());
    assert!(log.contains("Connection refused") && !log.contains("SSH-2.0"), "refused from outside: {log}");
    kubectl(&["delete", "namespace", &probe_ns, "--wait=false"]).unwrap();

    // A Bastion for someone elsewhere: ready all the same (its readiness does not depend on the
    // admitted range), and this host is refused.
    let remote = serde_json::json!({
        "apiVersion": "operations.gardener.cloud/v1alpha1", "kind": "Bastion",
        "metadata": {"name": elsewhere_name, "namespace": PROJECT_NS},
        "spec": {"shootRef": {"name": s.name},
                 "sshPublicKey": base64::engine::general_purpose::STANDARD.encode(public.trim()),
                 "ingress": [{"ipBlock": {"cidr": "203.0.113.0/24"}}]},
    });
    std::fs::write(&file, remote.to_string()).unwrap();
    kubectl(&["apply", "-f", &file.display().to_string()]).unwrap();
    let (elsewhere, _) = s
        .wait("the Bastion for 203.0.113.0/24 is ready", STEP_TIMEOUT, || async {
            let state = kubectl(&[
                "-n",
                PROJECT_NS,
                "get",
                "bastion.operations.gardener.cloud",
                &elsewhere_name,
                "-o",
                "jsonpath={.status.conditions[?(@.type==\"BastionReady\")].status}/{.status.ingress.ip}",
            ])?;
            match state.split_once('/') {
                Some(("True", ip)) if !ip.is_empty() => Ok(Some(ip.to_string())),
                _ => Err(format!("BastionReady/ip: {state}")),
            }
        })
        .await;
    let refused = run(Command::new("ssh")
        .args(SSH_OPTIONS)
        .arg("-i")
        .arg(&user_key)
        .arg(format!("gardener@{elsewhere}"))
        .arg("true"));
    eprintln!("this host to the bastion for 203.0.113.0/24: {refused:?}");
    assert!(refused.is_err_and(|e| e.contains("refused") || e.contains("reset")), "the host is outside its range");
    kubectl(&["-n", PROJECT_NS, "delete", "bastion.operations.gardener.cloud", &elsewhere_name, "--wait=false"])
        .unwrap();

    // Deleting the Bastion removes the bastion host.
    kubectl(&["-n", PROJECT_NS, "delete", "bastion.operations.gardener.cloud", &bastion_name, "--wait=false"]).unwrap();
    let ((), gone) = s
        .wait("the Bastion and its Pod are gone", STEP_TIMEOUT, || async {
            let left = kubectl(&[
                "-n",
                &s.seed_ns,
                "get",
                "pods,bastions.extensions.gardener.cloud",
                "-l",
                "bastion.provider-local.gardener.cloud/name",
                "-o",
                "name",
            ])?;
            let op = kubectl(&["-n", PROJECT_NS, "get", "bastion.operations.gardener.cloud", "-o", "name"])?;
            Ok((left.trim().is_empty() && op.trim().is_empty()).then_some(()))
        })
        .await;
    eprintln!("bastion removed after {gone:?}");
}
