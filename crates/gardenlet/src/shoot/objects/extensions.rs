//! Builders for the extension objects gardenlet creates in a shoot's seed namespace. Pure:
//! each takes the shoot's values and returns the desired object (spec only; the deployer adds
//! the operation annotation and timestamp).

use super::kubelet::{self, KUBELET_CLIENT_CA_PATH, KUBELET_CONFIG_PATH};
use crate::shoot::operation::values::ShootValues;
use api::Opaque;
use api::common::SecretReference;
use api::core::Shoot;
use api::core::controller::ControllerResourceLifecycleStrategy as Stage;
use api::core::{ControllerRegistration, Seed};
use api::extensions::dnsrecord::DnsRecordType;
use api::extensions::operatingsystemconfig::{
    File, FileContent, FileContentInline, OperatingSystemConfigPurpose, Unit,
};
use api::extensions::worker::{MachineImage, WorkerPool};
use api::extensions::{BackupBucket, BackupBucketSpec, BackupEntry, BackupEntrySpec};
use api::extensions::{
    Cluster, ClusterSpec, ControlPlane, ControlPlaneSpec, DNSRecord, DNSRecordSpec, DefaultSpec, Extension,
    ExtensionSpec, Infrastructure, InfrastructureSpec, Network, NetworkSpec, OperatingSystemConfig,
    OperatingSystemConfigSpec, Worker, WorkerSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// The Secret in the seed namespace holding the provider credentials.
pub const CLOUDPROVIDER_SECRET: &str = "cloudprovider";

fn meta(v: &ShootValues, name: &str) -> ObjectMeta {
    ObjectMeta { name: Some(name.to_string()), namespace: Some(v.namespace().to_string()), ..Default::default() }
}

fn default_spec(type_: &str, provider_config: Option<Opaque>) -> DefaultSpec {
    DefaultSpec { type_: type_.to_string(), class: None, provider_config }
}

fn cloudprovider(v: &ShootValues) -> SecretReference {
    SecretReference { name: CLOUDPROVIDER_SECRET.to_string(), namespace: Some(v.namespace().to_string()) }
}

/// The `Cluster` carrying the shoot, seed and cloud profile as raw JSON.
pub fn cluster(v: &ShootValues, shoot: Opaque, seed: Opaque, cloud_profile: Opaque) -> Cluster {
    let mut c = Cluster::new(v.namespace(), ClusterSpec { cloud_profile, seed, shoot });
    c.metadata.labels = None;
    c
}

pub fn infrastructure(v: &ShootValues, shoot: &Shoot) -> Infrastructure {
    Infrastructure {
        metadata: meta(v, &v.name),
        spec: InfrastructureSpec {
            default: default_spec(&v.provider_type, shoot.spec.provider.infrastructure_config.clone()),
            region: v.region.clone(),
            secret_ref: cloudprovider(v),
            ssh_public_key: None,
        },
        status: None,
    }
}

pub fn control_plane(v: &ShootValues, shoot: &Shoot, infrastructure_status: Option<Opaque>) -> ControlPlane {
    ControlPlane {
        metadata: meta(v, &v.name),
        spec: ControlPlaneSpec {
            default: default_spec(&v.provider_type, shoot.spec.provider.control_plane_config.clone()),
            purpose: None,
            infrastructure_provider_status: infrastructure_status,
            region: v.region.clone(),
            secret_ref: cloudprovider(v),
        },
        status: None,
    }
}

pub fn network(v: &ShootValues, shoot: &Shoot) -> Option<Network> {
    let networking = shoot.spec.networking.as_ref()?;
    let type_ = networking.type_.clone()?;
    Some(Network {
        metadata: meta(v, &v.name),
        spec: NetworkSpec {
            default: default_spec(&type_, networking.provider_config.clone()),
            pod_cidr: v.pods.map(|p| p.to_string()).unwrap_or_default(),
            service_cidr: v.services.to_string(),
            ip_families: Vec::new(),
        },
        status: None,
    })
}

/// The DNS provider type for the shoot's records: the shoot's primary DNS provider, else the
/// shoot's infrastructure provider (which, for `local`, serves DNS too).
pub fn dns_type(v: &ShootValues, shoot: &Shoot) -> String {
    shoot
        .spec
        .dns
        .as_ref()
        .and_then(|d| d.providers.iter().find(|p| p.primary.unwrap_or(false)).or(d.providers.first()))
        .and_then(|p| p.type_.clone())
        .unwrap_or_else(|| v.provider_type.clone())
}

/// The `<shoot>-internal` (and `<shoot>-external`) A or CNAME records pointing at the
/// kube-apiserver Service address.
pub fn dns_records(v: &ShootValues, shoot: &Shoot, address: &str) -> Vec<DNSRecord> {
    let record_type = match address.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(_)) => DnsRecordType::A,
        Ok(std::net::IpAddr::V6(_)) => DnsRecordType::Aaaa,
        Err(_) => DnsRecordType::Cname,
    };
    let mut names = vec![(format!("{}-internal", v.name), v.internal_domain.clone())];
    if let Some(external) = &v.external_domain {
        names.push((format!("{}-external", v.name), external.clone()));
    }
    names
        .into_iter()
        .map(|(object, domain)| DNSRecord {
            metadata: meta(v, &object),
            spec: DNSRecordSpec {
                default: default_spec(&dns_type(v, shoot), None),
                secret_ref: cloudprovider(v),
                region: Some(v.region.clone()),
                zone: None,
                name: domain,
                record_type,
                values: vec![address.to_string()],
                ttl: Some(120),
            },
            status: None,
        })
        .collect()
}

/// When in the flow the `Extension` objects of `type_` are reconciled, by the registration of
/// their controller (`resources[].lifecycle.reconcile`); after kube-apiserver when no
/// registration says otherwise.
pub fn stage_of(registrations: &[ControllerRegistration], type_: &str) -> Stage {
    registrations
        .iter()
        .flat_map(|r| r.spec.resources.iter())
        .find(|r| r.kind == "Extension" && r.type_ == type_)
        .and_then(|r| r.lifecycle.as_ref())
        .and_then(|l| l.reconcile)
        .unwrap_or(Stage::AfterKubeAPIServer)
}

/// The shoot's own extensions (`spec.extensions[]`) of one lifecycle stage, one object per type.
pub fn extensions(
    v: &ShootValues,
    shoot: &Shoot,
    registrations: &[ControllerRegistration],
    stage: Stage,
) -> Vec<Extension> {
    shoot
        .spec
        .extensions
        .iter()
        .filter(|e| e.disabled != Some(true))
        .filter(|e| stage_of(registrations, &e.type_) == stage)
        .map(|e| Extension {
            metadata: meta(v, &e.type_),
            spec: ExtensionSpec { default: default_spec(&e.type_, e.provider_config.clone()) },
            status: None,
        })
        .collect()
}

/// The name of a pool's OperatingSystemConfig.
pub fn osc_name(pool: &str) -> String {
    format!("osc-{pool}")
}

/// Where the bootstrap kubeconfig, with the bootstrap token, lives on a machine.
pub const BOOTSTRAP_KUBECONFIG_PATH: &str = "/var/lib/kubelet/kubeconfig-bootstrap";

/// Pure: the pool's key for its machines, `gardener-node-agent-<pool>-<hash>`, from its
/// OperatingSystemConfig without the bootstrap kubeconfig's content. The bootstrap token is
/// renewed when it has less than half of its day left; that must not replace the machines
/// (running nodes have their own client certificates), while a changed CA bundle, kubelet
/// configuration or unit must (machines are not reconfigured in place).
pub fn node_agent_secret_name(pool: &str, osc: &OperatingSystemConfig) -> String {
    let mut spec = osc.spec.clone();
    for file in spec.files.iter_mut().filter(|f| f.path == BOOTSTRAP_KUBECONFIG_PATH) {
        file.content = FileContent::default();
    }
    let mut hash = crate::components::common::checksum(&serde_json::to_string(&spec).unwrap_or_default());
    hash.truncate(16);
    format!("gardener-node-agent-{pool}-{hash}")
}

/// Where the nodes' provisioning keeps the `gardener` user's authorized keys and the script that
/// installs them.
const GARDENER_USER_DIR: &str = "/var/lib/gardener-user";

/// What SSH access adds to a node, as Gardener's `gardener-user` and `sshd-ensurer` do: the
/// user `gardener` whose `authorized_keys` are `authorized_keys` (the shoot's current and
/// previous key pair), installed by a oneshot unit that runs during provisioning, and sshd.
/// The script runs again on every provisioning, so changed keys replace the old file.
fn ssh_access(authorized_keys: &str) -> (Vec<Unit>, Vec<(String, i32, String)>) {
    let script = format!(
        "#!/bin/bash\n# The user `gardener` and the shoot's SSH keys (its current and previous key pair).\nset -euo pipefail\n\
         id gardener >/dev/null 2>&1 || useradd -m -U -p '*' -s /bin/bash gardener\n\
         # Root writes into the user's home: never through a link the user may have put there.\n\
         if [ -L /home/gardener/.ssh ]; then rm -f /home/gardener/.ssh; fi\n\
         mkdir -p /home/gardener/.ssh\nrm -f /home/gardener/.ssh/authorized_keys\n\
         (umask 077; cat {GARDENER_USER_DIR}/authorized_keys > /home/gardener/.ssh/authorized_keys)\n\
         chmod 0700 /home/gardener/.ssh\nchmod 0600 /home/gardener/.ssh/authorized_keys\n\
         chown gardener:gardener /home/gardener/.ssh /home/gardener/.ssh/authorized_keys\n"
    );
    let unit = |name: &str, content: String, command| Unit {
        name: name.to_string(),
        command,
        enable: Some(true),
        content: Some(content),
        drop_ins: Vec::new(),
        file_paths: Vec::new(),
    };
    use api::extensions::operatingsystemconfig::UnitCommand;
    let units = vec![
        unit(
            "gardener-user.service",
            format!(
                "[Unit]\nDescription=the user gardener and its SSH keys\n\n[Service]\nType=oneshot\nExecStart={GARDENER_USER_DIR}/run.sh\n\n[Install]\nWantedBy=multi-user.target\n"
            ),
            // During provisioning, so that the user exists before sshd starts.
            Some(UnitCommand::Start),
        ),
        unit(
            "sshd.service",
            "[Unit]\nDescription=OpenSSH server\nAfter=gardener-user.service\n\n[Service]\nRestart=always\nRestartSec=5\nExecStart=/bin/sh -c 'ssh-keygen -A && exec /usr/sbin/sshd -D -e'\n\n[Install]\nWantedBy=multi-user.target\n"
                .to_string(),
            None,
        ),
    ];
    let files = vec![
        (authorized_keys.to_string(), 0o644, format!("{GARDENER_USER_DIR}/authorized_keys")),
        (script, 0o755, format!("{GARDENER_USER_DIR}/run.sh")),
    ];
    (units, files)
}

/// One OperatingSystemConfig per worker pool: the kubelet unit and the files it needs to join
/// the cluster by TLS bootstrapping (bootstrap kubeconfig with the token, the CA bundle, the
/// pool's kubelet configuration with the shoot's or the pool's kubelet settings
/// ([`kubelet`]), and the kubelet CA bundle it trusts for the API server's client
/// certificate); with `authorized_keys` (the shoot's nodes are reached over SSH), the user
/// `gardener` with those keys and sshd. A changed kubelet setting changes the pool's
/// configuration and so its [`node_agent_secret_name`]: the pool's machines are replaced.
pub fn operating_system_configs(
    v: &ShootValues,
    shoot: &Shoot,
    bootstrap_kubeconfig: &str,
    ca_bundle: &str,
    kubelet_ca_bundle: &str,
    authorized_keys: Option<&str>,
) -> Vec<OperatingSystemConfig> {
    shoot
        .spec
        .provider
        .workers
        .iter()
        .map(|pool| {
            let image_type =
                pool.machine.image.as_ref().map(|i| i.name.clone()).unwrap_or_else(|| v.provider_type.clone());
            let kubelet = Unit {
                name: "kubelet.service".to_string(),
                command: None,
                enable: Some(true),
                content: Some(kubelet_unit(&v.kubernetes_version, &pool.name)),
                drop_ins: Vec::new(),
                file_paths: Vec::new(),
            };
            let inline = |data: &str, permissions: i32, path: &str| File {
                path: path.to_string(),
                permissions: Some(permissions),
                content: FileContent {
                    inline: Some(FileContentInline { encoding: String::new(), data: data.to_string() }),
                    ..Default::default()
                },
            };
            let mut units = vec![kubelet];
            let mut files = vec![
                inline(bootstrap_kubeconfig, 0o600, BOOTSTRAP_KUBECONFIG_PATH),
                inline(ca_bundle, 0o644, "/var/lib/kubelet/ca.crt"),
                inline(kubelet_ca_bundle, 0o644, KUBELET_CLIENT_CA_PATH),
                inline(&kubelet::pool_config(v, shoot, pool), 0o644, KUBELET_CONFIG_PATH),
            ];
            if let Some(keys) = authorized_keys {
                let (ssh_units, ssh_files) = ssh_access(keys);
                units.extend(ssh_units);
                files.extend(ssh_files.iter().map(|(data, mode, path)| inline(data, *mode, path)));
            }
            OperatingSystemConfig {
                metadata: meta(v, &osc_name(&pool.name)),
                spec: OperatingSystemConfigSpec {
                    default: default_spec(&image_type, None),
                    cri_config: None,
                    purpose: OperatingSystemConfigPurpose::Provision,
                    reload_config_file_path: None,
                    units,
                    files,
                },
                status: None,
            }
        })
        .collect()
}

/// The kubelet unit, as Gardener's: TLS bootstrap, the configuration file, the container
/// runtime's socket, the pool label, and `$KUBELET_EXTRA_ARGS` from `/etc/default/kubelet`
/// for what the machine image knows best (its cgroup root, say).
fn kubelet_unit(version: &str, pool: &str) -> String {
    use api::helpers::constants::LABEL_WORKER_POOL;
    format!(
        "[Unit]\nDescription=kubelet {version}\nAfter=containerd.service\n\n[Service]\nRestart=always\nRestartSec=5\nEnvironmentFile=-/etc/default/kubelet\nExecStart=/opt/bin/kubelet \\\n  --bootstrap-kubeconfig=/var/lib/kubelet/kubeconfig-bootstrap \\\n  --kubeconfig=/var/lib/kubelet/kubeconfig-real \\\n  --config={KUBELET_CONFIG_PATH} \\\n  --container-runtime=remote \\\n  --container-runtime-endpoint=unix:///run/containerd/containerd.sock \\\n  --node-labels={LABEL_WORKER_POOL}={pool} \\\n  --v=2 $KUBELET_EXTRA_ARGS\n\n[Install]\nWantedBy=multi-user.target\n"
    )
}

/// The Worker with one pool per shoot worker group; `user_data` maps pool name to the rendered
/// user data from its OperatingSystemConfig, `pool_keys` to its [`node_agent_secret_name`].
pub fn worker(
    v: &ShootValues,
    shoot: &Shoot,
    infrastructure_status: Option<Opaque>,
    user_data: &std::collections::BTreeMap<String, String>,
    pool_keys: &std::collections::BTreeMap<String, String>,
    ssh_public_key: Option<&str>,
) -> Worker {
    let pools = shoot
        .spec
        .provider
        .workers
        .iter()
        .map(|w| WorkerPool {
            name: w.name.clone(),
            machine_type: w.machine.type_.clone(),
            machine_image: MachineImage {
                name: w.machine.image.as_ref().map(|i| i.name.clone()).unwrap_or_default(),
                version: w.machine.image.as_ref().and_then(|i| i.version.clone()).unwrap_or_default(),
                provider_config: w.machine.image.as_ref().and_then(|i| i.provider_config.clone()),
            },
            minimum: w.minimum,
            maximum: w.maximum,
            max_surge: w.max_surge.clone(),
            max_unavailable: w.max_unavailable.clone(),
            annotations: w.annotations.clone(),
            labels: w.labels.clone(),
            taints: w.taints.clone(),
            provider_config: w.provider_config.clone(),
            user_data: user_data.get(&w.name).cloned().unwrap_or_default(),
            node_agent_secret_name: pool_keys.get(&w.name).cloned(),
            zones: w.zones.clone(),
            machine_controller_manager: w.machine_controller_manager_settings.clone(),
            kubernetes_version: Some(v.kubernetes_version.clone()),
            ..Default::default()
        })
        .collect();
    Worker {
        metadata: meta(v, &v.name),
        spec: WorkerSpec {
            default: default_spec(&v.provider_type, None),
            infrastructure_provider_status: infrastructure_status,
            region: v.region.clone(),
            secret_ref: cloudprovider(v),
            ssh_public_key: ssh_public_key.map(crate::shoot::credentials::secrets::b64),
            pools,
        },
        status: None,
    }
}

/// The name of a shoot's backup entry: `<technical ID>--<shoot UID>`, so a re-created shoot
/// of the same name never shares an entry with its predecessor.
pub fn backup_entry_name(v: &ShootValues, shoot_uid: &str) -> String {
    format!("{}--{shoot_uid}", v.namespace())
}

/// The seed's extension BackupBucket (named after the seed's UID, as the entries' `bucketName`),
/// when the seed has a backup configuration. The seed controller keeps it; it is the seed's, so
/// no shoot operation deletes it.
pub fn backup_bucket(seed: &Seed) -> Option<BackupBucket> {
    let backup = seed.spec.backup.as_ref()?;
    let type_ = backup.provider.clone().or_else(|| backup.type_.clone())?;
    let name = seed.metadata.uid.clone()?;
    let mut bucket = BackupBucket::new(
        &name,
        BackupBucketSpec {
            default: default_spec(&type_, backup.provider_config.clone()),
            region: backup.region.clone().unwrap_or_else(|| seed.spec.provider.region.clone()),
            secret_ref: backup.secret_ref.clone().unwrap_or_default(),
        },
    );
    bucket.metadata.labels =
        Some([("seed.gardener.cloud/name".to_string(), seed.metadata.name.clone().unwrap_or_default())].into());
    Some(bucket)
}

/// The extension BackupEntry in the seed's backup bucket (named after the seed's UID), when the
/// seed has a backup configuration.
pub fn backup_entry(v: &ShootValues, seed: &Seed, shoot_uid: &str) -> Option<BackupEntry> {
    let backup = seed.spec.backup.as_ref()?;
    let type_ = backup.provider.clone().or_else(|| backup.type_.clone())?;
    let bucket = seed.metadata.uid.clone()?;
    let mut entry = BackupEntry::new(
        &backup_entry_name(v, shoot_uid),
        BackupEntrySpec {
            default: default_spec(&type_, backup.provider_config.clone()),
            backup_bucket_provider_status: None,
            region: backup.region.clone().unwrap_or_else(|| seed.spec.provider.region.clone()),
            secret_ref: backup.secret_ref.clone().unwrap_or_default(),
            bucket_name: bucket,
        },
    );
    entry.metadata.labels =
        Some([(api::helpers::constants::LABEL_TECHNICAL_ID.to_string(), v.namespace().to_string())].into());
    Some(entry)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

    use super::*;

    fn osc(token: &str, ca: &str) -> OperatingSystemConfig {
        let file = |path: &str, data: &str| serde_json::json!({"path": path, "content": {"inline": {"encoding": "", "data": data}}});
        serde_json::from_value(serde_json::json!({
            "apiVersion": "extensions.gardener.cloud/v1alpha1",
            "kind": "OperatingSystemConfig",
            "metadata": {"name": "osc-p", "namespace": "shoot--dev--demo"},
            "spec": {
                "type": "local",
                "purpose": "provision",
                "files": [file(BOOTSTRAP_KUBECONFIG_PATH, &format!("token: {token}")), file("/var/lib/kubelet/ca.crt", ca)],
            },
        }))
        .unwrap()
    }

    #[test]
    fn a_new_bootstrap_token_keeps_the_pool_key_and_a_new_ca_bundle_changes_it() {
        let key = node_agent_secret_name("p", &osc("abcdef.0123456789abcdef", "CA1"));
        assert!(key.starts_with("gardener-node-agent-p-") && key.len() == "gardener-node-agent-p-".len() + 16, "{key}");
        assert_eq!(node_agent_secret_name("p", &osc("ghijkl.0123456789abcdef", "CA1")), key, "only the token changed");
        assert_ne!(node_agent_secret_name("p", &osc("abcdef.0123456789abcdef", "CA1\nCA2")), key, "the bundle changed");
        assert_ne!(node_agent_secret_name("q", &osc("abcdef.0123456789abcdef", "CA1")), key, "another pool");
    }

    #[test]
    fn ssh_access_adds_the_gardener_user_before_sshd() {
        let (units, files) = ssh_access("ssh-ed25519 NEW\nssh-ed25519 OLD\n");
        let names: Vec<_> = units.iter().map(|u| (u.name.as_str(), u.command)).collect();
        use api::extensions::operatingsystemconfig::UnitCommand;
        assert_eq!(names, [("gardener-user.service", Some(UnitCommand::Start)), ("sshd.service", None)]);
        assert!(units[1].content.as_deref().unwrap().contains("After=gardener-user.service"));
        let keys = files.iter().find(|(_, _, p)| p == "/var/lib/gardener-user/authorized_keys").unwrap();
        assert_eq!(keys.0, "ssh-ed25519 NEW\nssh-ed25519 OLD\n");
        let script = files.iter().find(|(_, _, p)| p == "/var/lib/gardener-user/run.sh").unwrap();
        assert_eq!(script.1, 0o755);
        assert!(script.0.contains("useradd -m -U -p '*' -s /bin/bash gardener"), "an unlocked account: {}", script.0);
        assert!(script.0.contains("chmod 0600 /home/gardener/.ssh/authorized_keys"));
        let syntax = std::process::Command::new("bash").args(["-n", "-c", &script.0]).status();
        assert!(syntax.is_ok_and(|s| s.success()), "bash -n: {}", script.0);
    }
}
