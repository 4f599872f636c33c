//! Command-line flags of `gardener-extension-provider-local` (clap), turned into [`Settings`].
//! The flags every binary shares come from the SDK's [`CommonArgs`].

use crate::registry::RegistryMirror;
use crate::{CONTROLLERS, Settings};
use runtime::cli::{CommonArgs, LeaderElectionArgs};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

/// The `local` provider for every extension kind.
#[derive(clap::Parser, Debug)]
#[command(name = "gardener-extension-provider-local", version)]
pub struct Cli {
    /// Controllers to run, comma-separated [default: all]
    #[arg(long, value_delimiter = ',', value_parser = clap::builder::PossibleValuesParser::new(CONTROLLERS))]
    pub controllers: Vec<String>,
    /// Objects reconciled at once per controller.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u16).range(1..))]
    pub concurrency: u16,
    /// Directory holding backup buckets.
    #[arg(long, value_name = "DIR", default_value = "/var/lib/provider-local/backup")]
    pub backup_root: PathBuf,
    /// Keep a deleted BackupEntry this many seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 0)]
    pub backup_deletion_grace: u64,
    /// Namespace of generated bucket Secrets.
    #[arg(long, value_name = "NS", default_value = "garden")]
    pub backup_secret_namespace: String,
    /// Namespace of the DNS zone ConfigMaps.
    #[arg(long, value_name = "NS", default_value = crate::dns::DEFAULT_DNS_NAMESPACE)]
    pub dns_namespace: String,
    /// Machine image for pools whose provider config names none.
    #[arg(long, value_name = "IMAGE")]
    pub machine_image: Option<String>,
    /// Image of bastion Pods (needs sh and sshd).
    #[arg(long, value_name = "IMAGE", default_value = crate::bastion::DEFAULT_IMAGE)]
    pub bastion_image: String,
    /// Service type of bastions.
    #[arg(long, default_value = "ClusterIP", value_parser = ["ClusterIP", "NodePort", "LoadBalancer"])]
    pub bastion_service_type: String,
    /// provider-local's own image: ControlPlane deploys it into every shoot with workers as the
    /// volume provisioner of the shoot's default StorageClass, and Network as the pod routes
    /// agent of every node. Unset: neither deploys anything, so claims in shoots stay Pending and
    /// pods reach only pods on their own node.
    #[arg(long, value_name = "IMAGE")]
    pub volume_provisioner_image: Option<String>,
    #[command(flatten)]
    pub registry: RegistryArgs,
    #[command(flatten)]
    pub leader_election: LeaderElectionArgs,
    #[command(flatten)]
    pub common: CommonArgs,
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// The registry the machines pull `gardener-rs.local/*` and `registry.k8s.io/*` from.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct RegistryArgs {
    /// Registry mirror for the machines' containerd, https://<host>[:<port>]; it holds each image
    /// under /<registry host>/<path> (the local cluster's registry). Unset: machines pull nothing.
    #[arg(long, value_name = "URL", requires = "registry_ca_file")]
    pub registry_mirror: Option<String>,
    /// PEM file of the CA that issued the mirror's certificate (machines trust only it for the
    /// mirror).
    #[arg(long, value_name = "FILE", requires = "registry_mirror")]
    pub registry_ca_file: Option<PathBuf>,
}

impl RegistryArgs {
    /// The mirror, with its CA read from the file; `None` without `--registry-mirror`.
    pub fn mirror(&self) -> Result<Option<RegistryMirror>, String> {
        let (Some(url), Some(file)) = (&self.registry_mirror, &self.registry_ca_file) else { return Ok(None) };
        let ca = std::fs::read_to_string(file).map_err(|e| format!("--registry-ca-file {}: {e}", file.display()))?;
        RegistryMirror::new(url, &ca).map(Some).map_err(|e| format!("--registry-mirror: {e}"))
    }
}

/// What to do instead of running the controllers.
#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Print the ControllerRegistration and ControllerDeployment (type `manifest`) that install
    /// provider-local on the seeds that need it, as YAML for `kubectl apply -f -`.
    Registration {
        /// The controller's image.
        #[arg(long, value_name = "IMAGE")]
        image: String,
        /// Replicas per seed.
        #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(i32).range(1..))]
        replicas: i32,
        /// When a seed gets it: `OnDemand` (its shoots need it) or `Always`.
        #[arg(long, default_value = "OnDemand", value_parser = ["OnDemand", "Always", "AlwaysExceptNoShoots"])]
        policy: String,
        /// The machine image for pools whose provider config names none.
        #[arg(long, value_name = "IMAGE")]
        machine_image: Option<String>,
        /// The machines' registry mirror: the deployment gets it as `--registry-mirror`, and the
        /// CA as a ConfigMap mounted for `--registry-ca-file`.
        #[command(flatten)]
        registry: RegistryArgs,
        /// A directory of the seed's node that holds the backup store (instead of a directory in
        /// the pod); it must exist and be writable for UID 65532.
        #[arg(long, value_name = "DIR")]
        backup_host_path: Option<String>,
        /// Deploy the volume provisioner into shoots: the deployment gets
        /// `--volume-provisioner-image` set to `--image`.
        #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
        volume_provisioner: bool,
    },
    /// Run the volume provisioner of one node of a shoot (what the DaemonSet that ControlPlane
    /// deploys runs): claims of the default StorageClass placed on this node become host-path
    /// volumes in the volumes directory; released ones are deleted with their directories. Uses
    /// the in-cluster ServiceAccount unless --kubeconfig is given.
    VolumeProvisioner {
        /// The node this pod runs on (the downward API's spec.nodeName).
        #[arg(long, value_name = "NAME")]
        node_name: String,
        /// The node's directory holding the volumes, mounted at the same path.
        #[arg(long, value_name = "DIR", default_value = crate::volume_provisioner::VOLUMES_DIR)]
        volumes_dir: PathBuf,
    },
    /// Keep the routes of one node of a shoot to the other nodes' pod CIDRs (what the DaemonSet
    /// that Network deploys runs, in the node's network namespace). Uses the in-cluster
    /// ServiceAccount unless --kubeconfig is given.
    PodRoutes {
        /// The node this pod runs on (the downward API's spec.nodeName).
        #[arg(long, value_name = "NAME")]
        node_name: String,
    },
}

impl Cli {
    /// The controllers' settings; the registry mirror is read separately
    /// ([`RegistryArgs::mirror`]), since its CA is a file.
    pub fn settings(&self) -> Settings {
        let mut s = Settings::default();
        if !self.controllers.is_empty() {
            s.controllers = self.controllers.iter().cloned().collect::<BTreeSet<_>>();
        }
        s.concurrency = self.concurrency;
        s.backup.root = self.backup_root.clone();
        s.backup.deletion_grace = Duration::from_secs(self.backup_deletion_grace);
        s.backup.secret_namespace = self.backup_secret_namespace.clone();
        s.dns_namespace = self.dns_namespace.clone();
        s.machine_image = self.machine_image.clone().filter(|m| !m.is_empty());
        s.bastion.image = self.bastion_image.clone();
        s.bastion.service_type = self.bastion_service_type.clone();
        s.volume_provisioner_image = self.volume_provisioner_image.clone().filter(|i| !i.is_empty());
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("provider-local").chain(args.iter().copied()))
    }

    #[test]
    fn defaults() {
        let cli = parse(&[]).expect("defaults");
        assert!(cli.leader_election.enabled);
        let le = cli.leader_election.config("provider-local").expect("on by default");
        assert_eq!(le.lease_name, "provider-local-leader-election");
        assert_eq!(cli.settings().controllers.len(), CONTROLLERS.len());
        assert_eq!(cli.common.metrics_bind_address().port(), 8080);
    }

    #[test]
    fn flags_become_settings() {
        let cli = parse(&[
            "--controllers=worker,dnsrecord",
            "--concurrency",
            "2",
            "--backup-root=/srv/backup",
            "--backup-deletion-grace=30",
            "--leader-election=false",
            "--leader-election-namespace=extension-provider-local",
            "--metrics-bind-address=127.0.0.1:0",
            "--machine-image",
            "kindest/node:v1.33.0",
        ])
        .expect("flags");
        let s = cli.settings();
        assert_eq!(s.controllers.iter().map(String::as_str).collect::<Vec<_>>(), ["dnsrecord", "worker"]);
        assert_eq!(s.concurrency, 2);
        assert_eq!(s.backup.root, PathBuf::from("/srv/backup"));
        assert_eq!(s.backup.deletion_grace, Duration::from_secs(30));
        assert!(cli.leader_election.config("provider-local").is_none());
        assert_eq!(cli.leader_election.namespace, "extension-provider-local");
        assert_eq!(s.machine_image.as_deref(), Some("kindest/node:v1.33.0"));
        assert_eq!(s.volume_provisioner_image, None);
        let cli = parse(&["--volume-provisioner-image=gardener-rs.local/gardener-extension-provider-local:v1"])
            .expect("flags");
        assert_eq!(
            cli.settings().volume_provisioner_image.as_deref(),
            Some("gardener-rs.local/gardener-extension-provider-local:v1")
        );
    }

    #[test]
    fn the_volume_provisioner_subcommand_takes_its_node_and_directory() {
        let cli = parse(&["volume-provisioner", "--node-name=machine-0"]).expect("flags");
        match cli.command {
            Some(Command::VolumeProvisioner { node_name, volumes_dir }) => {
                assert_eq!(node_name, "machine-0");
                assert_eq!(volumes_dir, PathBuf::from("/var/lib/provider-local/volumes"));
            }
            other => panic!("not the provisioner: {other:?}"),
        }
        let cli = parse(&["volume-provisioner", "--node-name=n", "--volumes-dir=/srv/v"]).expect("flags");
        assert!(
            matches!(cli.command, Some(Command::VolumeProvisioner { volumes_dir, .. }) if volumes_dir == std::path::Path::new("/srv/v"))
        );
    }

    #[test]
    fn errors_name_the_flag() {
        for (args, want) in [
            (&["--controllers=worker,nope"][..], "nope"),
            (&["--concurrency=0"][..], "--concurrency"),
            (&["--frobnicate=1"][..], "--frobnicate"),
            (&["--backup-root"][..], "--backup-root"),
            (&["stray"][..], "stray"),
            (&["--bastion-service-type=Magic"][..], "--bastion-service-type"),
            (&["--registry-mirror=https://10.250.0.1:5000"][..], "--registry-ca-file"),
            (&["--registry-ca-file=/ca.crt"][..], "--registry-mirror"),
        ] {
            let e = parse(args).expect_err("refused").to_string();
            assert!(e.contains(want), "{args:?}: {e}");
        }
    }

    #[test]
    fn the_registry_mirror_is_read_with_its_ca() {
        assert_eq!(parse(&[]).expect("defaults").registry.mirror(), Ok(None));
        let dir = tempfile::tempdir().expect("a temporary directory");
        let ca = dir.path().join("ca.crt");
        std::fs::write(&ca, "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n").expect("written");
        let ca_flag = format!("--registry-ca-file={}", ca.display());
        let cli = parse(&["--registry-mirror=https://10.250.0.1:5000", &ca_flag]).expect("flags");
        let mirror = cli.registry.mirror().expect("valid").expect("set");
        assert_eq!(mirror.url(), "https://10.250.0.1:5000");
        let cli = parse(&["--registry-mirror=http://10.250.0.1:5000", &ca_flag]).expect("flags");
        assert!(cli.registry.mirror().unwrap_err().contains("https://"));
        let cli = parse(&["--registry-mirror=https://r", "--registry-ca-file=/nonexistent/ca.crt"]).expect("flags");
        assert!(cli.registry.mirror().unwrap_err().contains("/nonexistent/ca.crt"));
    }
}
