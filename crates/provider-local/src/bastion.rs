//! Bastion: a Pod running sshd and a Service in front of it, in the shoot's namespace of the
//! seed. The bastion's user data (which installs the user's SSH key) is mounted from a Secret
//! and run before sshd starts. Only the `spec.ingress` ranges reach SSH: the Pod's init
//! container (the only one with `NET_ADMIN`) installs iptables rules in the Pod's network
//! namespace that accept port 22 from them and reset every other connection, as a cloud's
//! security group would (the local cluster's CNI enforces no NetworkPolicy); a NetworkPolicy
//! says the same for seeds whose network does. `status.ingress` comes from the Service: its
//! load-balancer ingress for type LoadBalancer (waiting until one is assigned), else its
//! cluster IP, once the Pod is ready (sshd listens). Everything is owned by the Bastion and
//! labelled with the shoot's technical ID, and removed on delete.

use crate::common::{apply_params, delete_if_exists, describe, shoot_labels, technical_id};
use crate::error::Error;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use extension_sdk::api::extensions::Bastion;
use extension_sdk::k8s_openapi::ByteString;
use extension_sdk::k8s_openapi::api::core::v1::{
    Capabilities, Container, ContainerPort, ExecAction, LoadBalancerIngress, Pod, PodSecurityContext, PodSpec, Probe,
    ResourceRequirements, SeccompProfile, Secret, SecretVolumeSource, SecurityContext, Service, ServicePort,
    ServiceSpec, Volume, VolumeMount,
};
use extension_sdk::k8s_openapi::api::networking::v1::{
    NetworkPolicy, NetworkPolicyIngressRule, NetworkPolicyPeer, NetworkPolicyPort, NetworkPolicySpec,
};
use extension_sdk::k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use extension_sdk::k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use extension_sdk::k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use extension_sdk::kube::api::{ObjectMeta, Patch};
use extension_sdk::kube::{Api, Client, Resource, ResourceExt};
use extension_sdk::{Actuator, ActuatorError, ClusterContext, Outcome};
use std::collections::BTreeMap;
use std::time::Duration;

const COMPONENT: &str = "bastion";
/// Label selecting a bastion's Pod.
pub const LABEL_BASTION: &str = "bastion.provider-local.gardener.cloud/name";
/// The bastion's command: the user data, host keys, then sshd as a jump host only: forwarding
/// to SSH ports, nothing else (no agent, X11, tunnels or Unix sockets).
const SSHD: &str = "sh /etc/bastion/userData && ssh-keygen -A && exec /usr/sbin/sshd -D -e \
    -o 'PermitOpen=*:22' -o AllowAgentForwarding=no -o AllowStreamLocalForwarding=no -o PermitTunnel=no \
    -o GatewayPorts=no -o X11Forwarding=no";

/// Annotation on the bastion Pod: the hash of its user data and firewall rules.
pub const ANNOTATION_CONFIG_HASH: &str = "bastion.provider-local.gardener.cloud/config-hash";
/// Default image of bastion Pods, built by `hack/images.sh` from Debian's openssh-server: any
/// image with `sh`, `useradd`, `ssh-keygen`, `/usr/sbin/sshd` and `iptables` will do.
pub const DEFAULT_IMAGE: &str = "gardener-rs.local/bastion:9.2p1";

/// Settings of the Bastion actuator.
#[derive(Clone, Debug)]
pub struct BastionConfig {
    pub image: String,
    /// `ClusterIP` (default; the kind and local setups have no load balancers) or `LoadBalancer`.
    pub service_type: String,
}

impl Default for BastionConfig {
    fn default() -> Self {
        Self { image: DEFAULT_IMAGE.into(), service_type: "ClusterIP".into() }
    }
}

/// The name of every object of a bastion.
pub fn object_name(bastion: &Bastion) -> String {
    format!("bastion-{}", bastion.name_any())
}

/// The firewall script of the init container, for both address families (IPv6 only where the
/// kernel has it; an IPv6 ingress range without it fails the script, naming the range):
/// * in: loopback (the readiness probe), then SSH from each ingress range (`except` ranges reset
///   first), every other connection to port 22 reset;
/// * out: loopback, replies, SSH (to the shoot's nodes) and DNS; everything else rejected, so a
///   bastion user reaches nothing else in the seed (no API server, no other shoot's control
///   plane).
///
/// Each CIDR is parsed first (`spec.ingress[i].ipBlock.cidr` names a bad one).
pub fn firewall(bastion: &Bastion) -> Result<String, Error> {
    let object = describe(bastion);
    let parse = |cidr: &str, field: String| {
        cidr.parse::<ipnet::IpNet>().map_err(|e| Error::config(&object, field, format!("{cidr:?} is not a CIDR: {e}")))
    };
    let mut ranges: [Vec<String>; 2] = [Vec::new(), Vec::new()];
    for (i, ingress) in bastion.spec.ingress.iter().enumerate() {
        let field = format!("spec.ingress[{i}].ipBlock");
        let net = parse(&ingress.ip_block.cidr, format!("{field}.cidr"))?;
        for (j, except) in ingress.ip_block.except.iter().flatten().enumerate() {
            let ex = parse(except, format!("{field}.except[{j}]"))?;
            ranges[usize::from(ex.addr().is_ipv6())]
                .push(format!("-A INPUT -p tcp --dport 22 -s {ex} -j REJECT --reject-with tcp-reset"));
        }
        ranges[usize::from(net.addr().is_ipv6())].push(format!("-A INPUT -p tcp --dport 22 -s {net} -j ACCEPT"));
    }
    let rules = |tool: &str, admitted: &[String]| {
        let mut out = vec![format!("{tool} -A INPUT -i lo -j ACCEPT")];
        out.extend(admitted.iter().map(|r| format!("{tool} {r}")));
        out.push(format!("{tool} -A INPUT -p tcp --dport 22 -j REJECT --reject-with tcp-reset"));
        out.push(format!("{tool} -A OUTPUT -o lo -j ACCEPT"));
        out.push(format!("{tool} -A OUTPUT -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT"));
        for (proto, port) in [("tcp", 22), ("udp", 53), ("tcp", 53)] {
            out.push(format!("{tool} -A OUTPUT -p {proto} --dport {port} -j ACCEPT"));
        }
        out.push(format!("{tool} -A OUTPUT -j REJECT"));
        out
    };
    let mut script = vec![
        "set -eu".to_string(),
        "# In: SSH only from the Bastion's ingress ranges. Out: only SSH, DNS and replies.".to_string(),
    ];
    script.extend(rules("iptables", &ranges[0]));
    if ranges[1].is_empty() {
        // Without IPv6 in the kernel there is nothing to close (and ip6tables would fail).
        script.push("if [ -e /proc/net/if_inet6 ]; then".into());
        script.extend(rules("ip6tables", &[]).into_iter().map(|r| format!("  {r}")));
        script.push("fi".into());
    } else {
        script.push(
            "[ -e /proc/net/if_inet6 ] || { echo 'IPv6 ingress ranges, but no IPv6 in this kernel' >&2; exit 1; }"
                .into(),
        );
        script.extend(rules("ip6tables", &ranges[1]));
    }
    Ok(script.join("\n") + "\n")
}

/// What sshd and the user data before it need as root, and nothing more: `SETUID`, `SETGID`
/// (switching to the login user and to the privilege separation user `sshd`), `SYS_CHROOT`
/// (the unauthenticated child is locked into `/run/sshd`), `NET_BIND_SERVICE` (port 22),
/// `AUDIT_WRITE` (Debian's sshd is built with Linux audit and refuses a login with a terminal
/// when root cannot write the audit record), `CHOWN` and `FOWNER` (`useradd -m`, the user data's
/// `chown`/`chmod`, a login terminal handed to the user) and `DAC_OVERRIDE` (the user data
/// writes the key into the user's home, mode 0700 and no longer root's). Left out of the
/// runtime's defaults: `KILL`, `NET_RAW`, `MKNOD`, `FSETID`, `SETFCAP`, `SETPCAP`.
pub const SSHD_CAPABILITIES: &[&str] =
    &["AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "NET_BIND_SERVICE", "SETGID", "SETUID", "SYS_CHROOT"];

/// A root container's context: every capability dropped but `add`, no privilege escalation
/// (sshd switches users with `setuid`, which `no_new_privs` leaves alone; it forbids gaining
/// privileges through `execve` of set-user-ID files, and the image has none a user could run),
/// the runtime's seccomp profile.
fn root_with(add: &[&str], read_only_root: bool) -> SecurityContext {
    SecurityContext {
        run_as_user: Some(0),
        run_as_non_root: Some(false),
        allow_privilege_escalation: Some(false),
        capabilities: Some(Capabilities {
            add: Some(add.iter().map(|c| c.to_string()).collect()),
            drop: Some(vec!["ALL".into()]),
        }),
        read_only_root_filesystem: Some(read_only_root),
        seccomp_profile: Some(SeccompProfile { type_: "RuntimeDefault".into(), ..Default::default() }),
        ..Default::default()
    }
}

/// Small requests and a memory limit (MiB): sshd forks a process of a few MiB per connection.
fn resources(request_mib: u32, limit_mib: u32) -> ResourceRequirements {
    ResourceRequirements {
        requests: Some(BTreeMap::from([
            ("cpu".to_string(), Quantity("10m".into())),
            ("memory".to_string(), Quantity(format!("{request_mib}Mi"))),
        ])),
        limits: Some(BTreeMap::from([("memory".to_string(), Quantity(format!("{limit_mib}Mi")))])),
        ..Default::default()
    }
}

/// The bastion Pod: an init container (the only one with NET_ADMIN) that installs the firewall,
/// then sshd; both run the user data mounted from Secret `name`. Both run as root (sshd must
/// switch users; the image has no other user that could own the firewall step), each with only
/// the capabilities it needs. The firewall's root is read-only (iptables writes nothing); sshd's
/// is not: the user data adds the login user to `/etc/passwd` and its home, `ssh-keygen -A`
/// writes the host keys into `/etc/ssh`, sshd its pid file.
fn pod_spec(name: &str, config: &BastionConfig) -> PodSpec {
    let mounted = || {
        Some(vec![VolumeMount {
            name: "user-data".into(),
            mount_path: "/etc/bastion".into(),
            read_only: Some(true),
            ..Default::default()
        }])
    };
    PodSpec {
        automount_service_account_token: Some(false),
        init_containers: Some(vec![Container {
            name: "firewall".into(),
            image: Some(config.image.clone()),
            command: Some(vec!["/bin/sh".into(), "/etc/bastion/firewall".into()]),
            // The script's error becomes the container's termination message.
            termination_message_policy: Some("FallbackToLogsOnError".into()),
            volume_mounts: mounted(),
            resources: Some(resources(16, 64)),
            security_context: Some(root_with(&["NET_ADMIN"], true)),
            ..Default::default()
        }]),
        containers: vec![Container {
            name: "sshd".into(),
            image: Some(config.image.clone()),
            command: Some(vec!["/bin/sh".into(), "-c".into(), SSHD.into()]),
            // sshd writes its pid file once it listens. Not a TCP probe: the kubelet's
            // address is outside the ingress ranges, and the firewall resets it.
            readiness_probe: Some(Probe {
                exec: Some(ExecAction { command: Some(vec!["test".into(), "-s".into(), "/run/sshd.pid".into()]) }),
                period_seconds: Some(2),
                ..Default::default()
            }),
            ports: Some(vec![ContainerPort {
                name: Some("ssh".into()),
                container_port: 22,
                protocol: Some("TCP".into()),
                ..Default::default()
            }]),
            volume_mounts: mounted(),
            resources: Some(resources(32, 256)),
            security_context: Some(root_with(SSHD_CAPABILITIES, false)),
            ..Default::default()
        }],
        security_context: Some(PodSecurityContext {
            seccomp_profile: Some(SeccompProfile { type_: "RuntimeDefault".into(), ..Default::default() }),
            ..Default::default()
        }),
        volumes: Some(vec![Volume {
            name: "user-data".into(),
            secret: Some(SecretVolumeSource { secret_name: Some(name.to_string()), ..Default::default() }),
            ..Default::default()
        }]),
        ..Default::default()
    }
}

/// The objects of a bastion: user-data Secret, Pod, Service and NetworkPolicy.
pub fn objects(bastion: &Bastion, config: &BastionConfig) -> Result<(Secret, Pod, Service, NetworkPolicy), Error> {
    let object = describe(bastion);
    let id = technical_id(bastion)?;
    let name = object_name(bastion);
    let mut labels = shoot_labels(&id, COMPONENT);
    labels.insert(LABEL_BASTION.into(), bastion.name_any());
    let select = BTreeMap::from([(LABEL_BASTION.to_string(), bastion.name_any())]);
    let meta = ObjectMeta {
        name: Some(name.clone()),
        labels: Some(labels),
        owner_references: bastion.controller_owner_ref(&()).map(|r| vec![r]),
        ..Default::default()
    };
    let user_data = STANDARD
        .decode(bastion.spec.user_data.trim())
        .map_err(|e| Error::config(&object, "spec.userData", format!("not base64: {e}")))?;
    let firewall = firewall(bastion)?;
    // The Pod is replaced when what it ran at start changes (a Pod's commands are immutable).
    let config_hash = crate::common::sha256_hex(&[user_data.as_slice(), firewall.as_bytes()].concat());
    let secret = Secret {
        metadata: meta.clone(),
        data: Some(BTreeMap::from([
            ("userData".to_string(), ByteString(user_data)),
            ("firewall".to_string(), ByteString(firewall.into_bytes())),
        ])),
        type_: Some("Opaque".into()),
        ..Default::default()
    };
    let mut pod_meta = meta.clone();
    pod_meta.annotations = Some(BTreeMap::from([(ANNOTATION_CONFIG_HASH.to_string(), config_hash)]));
    let pod = Pod { metadata: pod_meta, spec: Some(pod_spec(&name, config)), status: None };
    let service = Service {
        metadata: meta.clone(),
        spec: Some(ServiceSpec {
            type_: Some(config.service_type.clone()),
            // A node port or load balancer would otherwise replace the client's address with a
            // node's, and the firewall would judge the node instead of the user.
            external_traffic_policy: (config.service_type != "ClusterIP").then(|| "Local".to_string()),
            selector: Some(select.clone()),
            ports: Some(vec![ServicePort {
                name: Some("ssh".into()),
                port: 22,
                // Server-side apply keys the list by port and protocol; both must be set.
                protocol: Some("TCP".into()),
                target_port: Some(IntOrString::Int(22)),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        status: None,
    };
    let from = bastion
        .spec
        .ingress
        .iter()
        .map(|i| NetworkPolicyPeer { ip_block: Some(i.ip_block.clone()), ..Default::default() })
        .collect();
    let policy = NetworkPolicy {
        metadata: meta,
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(LabelSelector { match_labels: Some(select), ..Default::default() }),
            policy_types: Some(vec!["Ingress".into()]),
            ingress: Some(vec![NetworkPolicyIngressRule {
                from: Some(from),
                ports: Some(vec![NetworkPolicyPort {
                    port: Some(IntOrString::Int(22)),
                    protocol: Some("TCP".into()),
                    ..Default::default()
                }]),
            }]),
            egress: None,
        }),
    };
    Ok((secret, pod, service, policy))
}

/// The address of a bastion's Service, once it has one.
pub fn ingress_of(service: &Service) -> Option<LoadBalancerIngress> {
    let lb = service.status.as_ref().and_then(|s| s.load_balancer.as_ref()).and_then(|l| l.ingress.as_ref());
    if let Some(first) = lb.and_then(|i| i.first()) {
        return Some(first.clone());
    }
    let spec = service.spec.as_ref()?;
    if spec.type_.as_deref() == Some("LoadBalancer") {
        return None;
    }
    let ip = spec.cluster_ip.clone().filter(|ip| !ip.is_empty() && ip != "None")?;
    Some(LoadBalancerIngress { ip: Some(ip), ..Default::default() })
}

/// Why the Pod's init container (the firewall) failed, if it did: its last exit was not 0.
fn init_failure(pod: &Pod) -> Option<String> {
    let statuses = pod.status.as_ref()?.init_container_statuses.as_ref()?;
    statuses.iter().find_map(|s| {
        let state = s.state.as_ref();
        let terminated =
            state.and_then(|st| st.terminated.as_ref()).or(s.last_state.as_ref().and_then(|l| l.terminated.as_ref()));
        let t = terminated.filter(|t| t.exit_code != 0)?;
        Some(format!(
            "exit code {}{}",
            t.exit_code,
            t.message.as_deref().map(|m| format!(": {}", m.trim())).unwrap_or_default()
        ))
    })
}

/// Whether the Pod's `Ready` condition is true.
fn pod_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// The Bastion actuator.
#[derive(Clone)]
pub struct LocalBastion {
    client: Client,
    config: BastionConfig,
}

crate::debug_without_client!(LocalBastion);

impl LocalBastion {
    pub fn new(client: Client, config: BastionConfig) -> Self {
        Self { client, config }
    }
}

impl Actuator<Bastion> for LocalBastion {
    #[tracing::instrument(skip_all, fields(bastion = %describe(bastion)))]
    async fn reconcile(&self, bastion: &Bastion, _: &ClusterContext) -> Result<Outcome<Bastion>, ActuatorError> {
        let ns = bastion.namespace().unwrap_or_default();
        let name = object_name(bastion);
        let (secret, pod, service, policy) = objects(bastion, &self.config)?;
        let params = apply_params(COMPONENT);
        let what = |kind: &str| format!("applying {kind} {ns}/{name}");
        Api::<Secret>::namespaced(self.client.clone(), &ns)
            .patch(&name, &params, &Patch::Apply(&secret))
            .await
            .map_err(Error::kube(what("Secret")))?;
        Api::<NetworkPolicy>::namespaced(self.client.clone(), &ns)
            .patch(&name, &params, &Patch::Apply(&policy))
            .await
            .map_err(Error::kube(what("NetworkPolicy")))?;
        let pods = Api::<Pod>::namespaced(self.client.clone(), &ns);
        let current = pods.get_opt(&name).await.map_err(Error::kube(format!("reading Pod {ns}/{name}")))?;
        if let Some(current) = &current
            && current.annotations().get(ANNOTATION_CONFIG_HASH) != pod.annotations().get(ANNOTATION_CONFIG_HASH)
        {
            if current.metadata.deletion_timestamp.is_none() {
                tracing::info!("replacing the bastion Pod: its user data or ingress changed");
                delete_if_exists(&pods, &name, "Pod").await?;
            }
            return Ok(Outcome::done().requeue(Duration::from_secs(3)));
        }
        let pod = pods.patch(&name, &params, &Patch::Apply(&pod)).await.map_err(Error::kube(what("Pod")))?;
        let service = Api::<Service>::namespaced(self.client.clone(), &ns)
            .patch(&name, &params, &Patch::Apply(&service))
            .await
            .map_err(Error::kube(what("Service")))?;
        let Some(ingress) = ingress_of(&service) else {
            tracing::info!("waiting for the bastion Service to get an address");
            return Err(ActuatorError::requeue_after(Duration::from_secs(5)));
        };
        if let Some(why) = init_failure(&pod) {
            return Err(ActuatorError::new(format!("the bastion's firewall (init container) failed: {why}")));
        }
        if !pod_ready(&pod) {
            tracing::info!("waiting for the bastion's sshd");
            // Processing until sshd listens; no address is reported before.
            return Ok(Outcome::done().requeue(Duration::from_secs(3)));
        }
        Ok(Outcome::done()
            .with_provider_status(serde_json::json!({"service": format!("{ns}/{name}"), "pod": format!("{ns}/{name}")}))
            .with_status(move |s: &mut extension_sdk::api::extensions::BastionStatus| s.ingress = Some(ingress)))
    }

    #[tracing::instrument(skip_all, fields(bastion = %describe(bastion)))]
    async fn delete(&self, bastion: &Bastion, _: &ClusterContext) -> Result<(), ActuatorError> {
        let ns = bastion.namespace().unwrap_or_default();
        let name = object_name(bastion);
        let c = &self.client;
        delete_if_exists(&Api::<Service>::namespaced(c.clone(), &ns), &name, "Service").await?;
        delete_if_exists(&Api::<Pod>::namespaced(c.clone(), &ns), &name, "Pod").await?;
        delete_if_exists(&Api::<NetworkPolicy>::namespaced(c.clone(), &ns), &name, "NetworkPolicy").await?;
        delete_if_exists(&Api::<Secret>::namespaced(c.clone(), &ns), &name, "Secret").await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use extension_sdk::api::extensions::BastionSpec;
    use extension_sdk::api::extensions::bastion::BastionIngressPolicy;
    use extension_sdk::k8s_openapi::api::core::v1::{LoadBalancerStatus, ServiceStatus};
    use extension_sdk::k8s_openapi::api::networking::v1::IPBlock;

    fn bastion() -> Bastion {
        let mut b = Bastion::new(
            "b1",
            BastionSpec {
                user_data: STANDARD.encode("echo key >> ~/.ssh/authorized_keys"),
                ingress: vec![BastionIngressPolicy { ip_block: IPBlock { cidr: "10.0.0.0/8".into(), except: None } }],
                ..Default::default()
            },
        );
        b.metadata.namespace = Some("shoot--dev--a".into());
        b
    }

    #[test]
    fn objects_select_the_pod_and_admit_only_the_ingress_ranges() {
        let (secret, pod, service, policy) =
            objects(&bastion(), &BastionConfig::default()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(secret.data.unwrap_or_default()["userData"].0, b"echo key >> ~/.ssh/authorized_keys");
        let pod_labels = pod.metadata.labels.unwrap_or_default();
        for (k, v) in service.spec.and_then(|s| s.selector).unwrap_or_default() {
            assert_eq!(pod_labels.get(&k), Some(&v));
        }
        assert_eq!(pod_labels["shoot.gardener.cloud/technical-id"], "shoot--dev--a");
        let v = serde_json::to_value(&policy).unwrap_or_default();
        assert_eq!(v["spec"]["ingress"][0]["from"][0]["ipBlock"]["cidr"], "10.0.0.0/8");
        let mut bad = bastion();
        bad.spec.user_data = "%%".into();
        assert!(objects(&bad, &BastionConfig::default()).is_err());
    }

    #[test]
    fn the_firewall_admits_ssh_from_the_ingress_ranges_only_and_only_its_init_container_has_net_admin() {
        let mut b = bastion();
        b.spec.ingress.push(BastionIngressPolicy {
            ip_block: IPBlock { cidr: "fd00::/8".into(), except: Some(vec!["fd00:1::/32".into()]) },
        });
        let script = firewall(&b).unwrap_or_else(|e| panic!("{e}"));
        let input: Vec<&str> = script.lines().filter(|l| l.contains("-A INPUT")).map(str::trim).collect();
        assert_eq!(
            input,
            [
                "iptables -A INPUT -i lo -j ACCEPT",
                "iptables -A INPUT -p tcp --dport 22 -s 10.0.0.0/8 -j ACCEPT",
                "iptables -A INPUT -p tcp --dport 22 -j REJECT --reject-with tcp-reset",
                "ip6tables -A INPUT -i lo -j ACCEPT",
                "ip6tables -A INPUT -p tcp --dport 22 -s fd00:1::/32 -j REJECT --reject-with tcp-reset",
                "ip6tables -A INPUT -p tcp --dport 22 -s fd00::/8 -j ACCEPT",
                "ip6tables -A INPUT -p tcp --dport 22 -j REJECT --reject-with tcp-reset",
            ]
        );
        for tool in ["iptables", "ip6tables"] {
            let output: Vec<&str> =
                script.lines().map(str::trim).filter(|l| l.starts_with(&format!("{tool} -A OUTPUT"))).collect();
            assert_eq!(output.len(), 6, "{output:?}");
            assert!(output[..5].iter().all(|r| r.ends_with("-j ACCEPT")), "{output:?}");
            assert_eq!(output[5], format!("{tool} -A OUTPUT -j REJECT"), "nothing else leaves the bastion");
        }
        let v4_only = firewall(&bastion()).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            v4_only.contains("if [ -e /proc/net/if_inet6 ]; then\n  ip6tables -A INPUT -i lo -j ACCEPT"),
            "{v4_only}"
        );
        for text in [&script, &v4_only] {
            let syntax = std::process::Command::new("sh").args(["-n", "-c", text]).status();
            assert!(syntax.is_ok_and(|s| s.success()), "sh -n: {text}");
        }
        let (secret, pod, _, _) = objects(&b, &BastionConfig::default()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(secret.data.unwrap_or_default()["firewall"].0, script.as_bytes());
        let hash = |b: &Bastion| {
            let (_, pod, _, _) = objects(b, &BastionConfig::default()).unwrap_or_else(|e| panic!("{e}"));
            pod.metadata.annotations.unwrap_or_default()[ANNOTATION_CONFIG_HASH].clone()
        };
        let mut other = b.clone();
        other.spec.ingress.pop();
        assert_ne!(hash(&b), hash(&other), "new ingress ranges replace the Pod");
        assert_eq!(hash(&b), hash(&b.clone()));
        let spec = pod.spec.unwrap_or_default();
        let init = &spec.init_containers.unwrap_or_default()[0];
        assert_eq!(init.command.as_ref().map(|c| c[1].as_str()), Some("/etc/bastion/firewall"));
        let net_admin = |c: &Container| {
            c.security_context
                .as_ref()
                .and_then(|s| s.capabilities.as_ref())
                .and_then(|c| c.add.clone())
                .unwrap_or_default()
        };
        assert_eq!(net_admin(init), ["NET_ADMIN"]);
        assert!(!net_admin(&spec.containers[0]).contains(&"NET_ADMIN".to_string()), "sshd cannot change the rules");
        assert_eq!(net_admin(&spec.containers[0]), SSHD_CAPABILITIES);

        let mut bad = bastion();
        bad.spec.ingress[0].ip_block.cidr = "10.0.0.0/33; reboot".into();
        let err = firewall(&bad).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("spec.ingress[0].ipBlock.cidr"), "{err}");
    }

    #[test]
    fn both_containers_drop_every_other_capability_and_have_a_memory_limit() {
        let (_, pod, _, _) = objects(&bastion(), &BastionConfig::default()).unwrap_or_else(|e| panic!("{e}"));
        let spec = pod.spec.unwrap_or_default();
        let seccomp = |p: Option<SeccompProfile>| p.map(|p| p.type_);
        let pod_context = spec.security_context.clone().unwrap_or_default();
        assert_eq!(seccomp(pod_context.seccomp_profile).as_deref(), Some("RuntimeDefault"));
        for c in spec.init_containers.iter().flatten().chain(&spec.containers) {
            let s = c.security_context.clone().unwrap_or_default();
            assert_eq!(s.allow_privilege_escalation, Some(false), "{}", c.name);
            assert_eq!(s.capabilities.and_then(|c| c.drop), Some(vec!["ALL".to_string()]), "{}", c.name);
            assert_eq!(seccomp(s.seccomp_profile).as_deref(), Some("RuntimeDefault"), "{}", c.name);
            assert_eq!(s.privileged, None, "{}", c.name);
            let limits = c.resources.clone().and_then(|r| r.limits).unwrap_or_default();
            assert!(limits.contains_key("memory"), "{}", c.name);
        }
        let firewall = &spec.init_containers.unwrap_or_default()[0];
        let read_only = firewall.security_context.as_ref().and_then(|s| s.read_only_root_filesystem);
        assert_eq!(read_only, Some(true));
        for forbidden in ["SYS_ADMIN", "NET_RAW", "KILL", "MKNOD", "SETFCAP", "SETPCAP", "NET_ADMIN"] {
            assert!(!SSHD_CAPABILITIES.contains(&forbidden), "{forbidden}");
        }
    }

    #[test]
    fn a_failed_firewall_is_reported_with_its_message() {
        let pod: Pod = serde_json::from_value(serde_json::json!({"status": {"initContainerStatuses": [{
            "name": "firewall", "image": "i", "imageID": "", "ready": false, "restartCount": 1,
            "state": {"waiting": {"reason": "CrashLoopBackOff"}},
            "lastState": {"terminated": {"exitCode": 1, "message": "IPv6 ingress ranges, but no IPv6 in this kernel\n"}},
        }]}}))
        .unwrap_or_default();
        assert_eq!(init_failure(&pod).as_deref(), Some("exit code 1: IPv6 ingress ranges, but no IPv6 in this kernel"));
        assert_eq!(init_failure(&Pod::default()), None);
    }

    #[test]
    fn ingress_from_load_balancer_or_cluster_ip() {
        let svc = |type_: &str, ip: Option<&str>, lb: Option<&str>| Service {
            spec: Some(ServiceSpec { type_: Some(type_.into()), cluster_ip: ip.map(Into::into), ..Default::default() }),
            status: Some(ServiceStatus {
                load_balancer: Some(LoadBalancerStatus {
                    ingress: lb.map(|h| vec![LoadBalancerIngress { hostname: Some(h.into()), ..Default::default() }]),
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(
            ingress_of(&svc("ClusterIP", Some("10.0.0.5"), None)).and_then(|i| i.ip).as_deref(),
            Some("10.0.0.5")
        );
        assert_eq!(ingress_of(&svc("LoadBalancer", Some("10.0.0.5"), None)), None);
        assert_eq!(
            ingress_of(&svc("LoadBalancer", Some("10.0.0.5"), Some("lb.local"))).and_then(|i| i.hostname).as_deref(),
            Some("lb.local")
        );
    }
}
