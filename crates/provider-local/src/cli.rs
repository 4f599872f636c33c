//! Command-line flags of `gardener-extension-provider-local` (clap), turned into [`Settings`].
//! The flags every binary shares come from the SDK's [`CommonArgs`].

use crate::{CONTROLLERS, Settings};
use extension_sdk::cli::{CommonArgs, LeaderElectionArgs};
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
    #[command(flatten)]
    pub leader_election: LeaderElectionArgs,
    #[command(flatten)]
    pub common: CommonArgs,
    #[command(subcommand)]
    pub command: Option<Command>,
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
    },
}

impl Cli {
    /// The controllers' settings.
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
        ] {
            let e = parse(args).expect_err("refused").to_string();
            assert!(e.contains(want), "{args:?}: {e}");
        }
    }
}
