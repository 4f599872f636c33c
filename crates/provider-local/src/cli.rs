//! Command-line flags of `gardener-extension-provider-local`: a small parser for `--name=value`
//! and `--name value`, no dependency.

use crate::{CONTROLLERS, Settings};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// The usage text.
pub const USAGE: &str = "\
gardener-extension-provider-local: the `local` provider for every extension kind

Flags (--name=value or --name value):
  --controllers=LIST               controllers to run, comma-separated (default: all):
                                   infrastructure,dnsrecord,backupbucket,backupentry,
                                   operatingsystemconfig,worker,controlplane,network,bastion,extension
  --concurrency=N                  objects reconciled at once per controller (default 5)
  --backup-root=DIR                directory holding backup buckets (default /var/lib/provider-local/backup)
  --backup-deletion-grace=SECONDS  keep a deleted BackupEntry this long (default 0)
  --backup-secret-namespace=NS     namespace of generated bucket Secrets (default garden)
  --dns-namespace=NS               namespace of DNS zone ConfigMaps (default provider-local-dns)
  --machine-image=IMAGE            machine image for pools whose provider config names none
  --bastion-image=IMAGE            image of bastion Pods (needs sh and sshd)
  --bastion-service-type=TYPE      ClusterIP (default) or LoadBalancer
  --leader-election=BOOL           run only while holding the leader Lease (default true)
  --leader-election-namespace=NS   namespace of the Leases (default $NAMESPACE, else garden)
  --leader-election-id=NAME        name of the leader Lease (default provider-local-leader-election)
  --health-port=PORT               port of /healthz, /readyz and /metrics (default 8080; 0 disables)
  --help                           this text
";

/// Flags that take a value.
const FLAGS: [&str; 13] = [
    "controllers",
    "concurrency",
    "backup-root",
    "backup-deletion-grace",
    "backup-secret-namespace",
    "dns-namespace",
    "machine-image",
    "bastion-image",
    "bastion-service-type",
    "leader-election",
    "leader-election-namespace",
    "leader-election-id",
    "health-port",
];

/// Parsed flags.
#[derive(Clone, Debug)]
pub struct Options {
    pub settings: Settings,
    pub leader_election: bool,
    pub namespace: String,
    pub leader_election_id: String,
    pub http_addr: Option<SocketAddr>,
    pub help: bool,
}

/// Parses the arguments after the program name. `namespace` is the default Lease namespace.
pub fn parse(args: impl IntoIterator<Item = String>, namespace: Option<String>) -> Result<Options, String> {
    let mut o = Options {
        settings: Settings::default(),
        leader_election: true,
        namespace: namespace.unwrap_or_else(|| "garden".into()),
        leader_election_id: "provider-local-leader-election".into(),
        http_addr: Some(SocketAddr::from(([0, 0, 0, 0], 8080))),
        help: false,
    };
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let Some(flag) = arg.strip_prefix("--") else { return Err(format!("unexpected argument {arg:?}")) };
        if flag == "help" {
            o.help = true;
            continue;
        }
        let (name, value) = match flag.split_once('=') {
            Some((n, v)) => (n.to_string(), v.to_string()),
            None if !FLAGS.contains(&flag) => return Err(format!("unknown flag --{flag}")),
            None => {
                let v = args.next().ok_or_else(|| format!("--{flag} needs a value"))?;
                (flag.to_string(), v)
            }
        };
        let bad = |what: &str| format!("--{name}={value}: {what}");
        match name.as_str() {
            "controllers" => {
                let list: std::collections::BTreeSet<String> =
                    value.split(',').map(|c| c.trim().to_string()).filter(|c| !c.is_empty()).collect();
                if let Some(unknown) = list.iter().find(|c| !CONTROLLERS.contains(&c.as_str())) {
                    return Err(bad(&format!("unknown controller {unknown:?}")));
                }
                o.settings.controllers = list;
            }
            "concurrency" => {
                o.settings.concurrency =
                    value.parse().ok().filter(|n| *n > 0).ok_or_else(|| bad("want a positive number"))?
            }
            "backup-root" => o.settings.backup.root = PathBuf::from(&value),
            "backup-deletion-grace" => {
                o.settings.backup.deletion_grace =
                    Duration::from_secs(value.parse().map_err(|_| bad("want whole seconds"))?)
            }
            "backup-secret-namespace" => o.settings.backup.secret_namespace = value,
            "dns-namespace" => o.settings.dns_namespace = value,
            "machine-image" => o.settings.machine_image = Some(value).filter(|v| !v.is_empty()),
            "bastion-image" => o.settings.bastion.image = value,
            "bastion-service-type" => match value.as_str() {
                "ClusterIP" | "LoadBalancer" | "NodePort" => o.settings.bastion.service_type = value,
                _ => return Err(bad("want ClusterIP, NodePort or LoadBalancer")),
            },
            "leader-election" => o.leader_election = value.parse().map_err(|_| bad("want true or false"))?,
            "leader-election-namespace" => o.namespace = value,
            "leader-election-id" => o.leader_election_id = value,
            "health-port" => {
                let port: u16 = value.parse().map_err(|_| bad("want a port number"))?;
                o.http_addr = (port != 0).then(|| SocketAddr::from(([0, 0, 0, 0], port)));
            }
            _ => return Err(format!("unknown flag --{name}")),
        }
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn defaults() {
        let o = parse(Vec::new(), None).unwrap_or_else(|e| panic!("{e}"));
        assert!(o.leader_election);
        assert_eq!(o.namespace, "garden");
        assert_eq!(o.settings.controllers.len(), CONTROLLERS.len());
        assert_eq!(o.http_addr.map(|a| a.port()), Some(8080));
    }

    #[test]
    fn both_flag_forms() {
        let o = parse(
            args(&[
                "--controllers=worker,dnsrecord",
                "--concurrency",
                "2",
                "--backup-root=/srv/backup",
                "--backup-deletion-grace=30",
                "--leader-election=false",
                "--health-port=0",
                "--machine-image",
                "kindest/node:v1.33.0",
            ]),
            Some("extension-provider-local".into()),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(o.settings.controllers.iter().map(String::as_str).collect::<Vec<_>>(), ["dnsrecord", "worker"]);
        assert_eq!(o.settings.concurrency, 2);
        assert_eq!(o.settings.backup.root, PathBuf::from("/srv/backup"));
        assert_eq!(o.settings.backup.deletion_grace, Duration::from_secs(30));
        assert!(!o.leader_election);
        assert_eq!(o.http_addr, None);
        assert_eq!(o.namespace, "extension-provider-local");
        assert_eq!(o.settings.machine_image.as_deref(), Some("kindest/node:v1.33.0"));
    }

    #[test]
    fn errors_name_the_flag() {
        for (a, want) in [
            (args(&["--controllers=worker,nope"]), "unknown controller \"nope\""),
            (args(&["--concurrency=0"]), "--concurrency=0"),
            (args(&["--frobnicate=1"]), "unknown flag --frobnicate"),
            (args(&["--backup-root"]), "--backup-root needs a value"),
            (args(&["stray"]), "unexpected argument"),
            (args(&["--bogus"]), "unknown flag --bogus"),
        ] {
            let e = parse(a, None).err().unwrap_or_default();
            assert!(e.contains(want), "{e}");
        }
    }
}
