//! The isolation rules, as `iptables-restore --noflush` input for the seed node's filter table.
//! Pure: who is where in, the rules out.
//!
//! Machines are Pods on the seed's bridge, so a packet between two of them, or between a machine
//! and a seed Pod, is bridged and passes the node's FORWARD chain (`br_netfilter`) with the bridge
//! ports it came in and goes out on (`-m physdev`). A machine is known by its bridge port (its
//! host-side veth), which nothing inside the machine can change; its address only as a
//! destination. Per shoot two chains decide everything that concerns its machines:
//!
//! * `…-F` (from a machine): to a machine of the same shoot, to the seed's entry point (ports 443
//!   and 8132, by the address the packet was sent to, before the Service's DNAT), to the seed's
//!   DNS Service, and to the
//!   shoot's own kube-apiserver (its Service, and its Pods, where the shoot's `kubernetes`
//!   Service leads: in-cluster clients send no server name the entry point could route by) —
//!   accepted; anything else on the seed's Pod bridge rejected and counted. What leaves through
//!   another interface (the node's uplink) is not the seed's: the node's own egress rules decide
//!   (on the local host its egress guard; in a managed seed, the outer seed's guard).
//! * `…-T` (to a machine): from a machine of the same shoot, and SSH from the shoot's bastion —
//!   accepted; anything else (seed Pods, other shoots' machines) rejected and counted.
//!
//! `PROVIDER-LOCAL-IN` (INPUT) lets machines reach only the host services a machine of a real
//! provider has too (DNS, the registry, the garden's API); `PROVIDER-LOCAL-OUT` (OUTPUT) refuses
//! the host's own connections to machines and to the shoots' networks. Replies of accepted
//! connections pass as `ESTABLISHED`.

use ipnet::Ipv4Net;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::net::{Ipv4Addr, SocketAddrV4};

/// Every chain's name starts with this (the local cluster's teardown removes what is left).
pub const PREFIX: &str = "PROVIDER-LOCAL-";
pub const FORWARD_CHAIN: &str = "PROVIDER-LOCAL-FWD";
pub const INPUT_CHAIN: &str = "PROVIDER-LOCAL-IN";
pub const OUTPUT_CHAIN: &str = "PROVIDER-LOCAL-OUT";
pub const HOST_CHAIN: &str = "PROVIDER-LOCAL-HOST";
/// The built-in chains and the chain each jumps to, first.
pub const HOOKS: [(&str, &str); 3] = [("FORWARD", FORWARD_CHAIN), ("INPUT", INPUT_CHAIN), ("OUTPUT", OUTPUT_CHAIN)];
/// The entry point's ports: the API and the tunnel.
pub const ENTRY_PORTS: [u16; 2] = [443, 8132];
const SSH_PORT: u16 = 22;

/// A Pod on the seed's bridge that belongs to a shoot: a machine or a bastion.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Member {
    /// The shoot's technical ID.
    pub shoot: String,
    /// The Pod's bridge port: its host-side veth.
    pub veth: String,
    pub ip: Ipv4Addr,
}

/// What the rules are made of.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Inputs {
    pub machines: Vec<Member>,
    pub bastions: Vec<Member>,
    /// The seed's entry point (its Service address), when there is one.
    pub entry: Option<Ipv4Addr>,
    /// Each shoot's kube-apiserver addresses: its Service (443) and its Pods (their port),
    /// which the shoot's `kubernetes` Service leads to.
    pub apiservers: BTreeMap<String, Vec<SocketAddrV4>>,
    /// The seed's DNS Service address: machines resolve the API server's name there.
    pub dns: Option<Ipv4Addr>,
    /// The bridge the seed's Pods are on: a machine's packet out of it (to a seed Pod) is refused
    /// unless allowed; one routed out of another interface leaves the seed's networks (the
    /// uplink, where the node's own egress rules apply).
    pub bridge: String,
    /// Each shoot's pod and service networks (never routed in the seed).
    pub shoot_networks: BTreeMap<String, Vec<Ipv4Net>>,
    /// Host ports machines may reach: (protocol, port).
    pub host_ports: Vec<(Protocol, u16)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Protocol {
    Tcp,
    Udp,
}

impl Protocol {
    fn name(self) -> &'static str {
        match self {
            Protocol::Tcp => "tcp",
            Protocol::Udp => "udp",
        }
    }
}

/// The host services a machine may use by default: DNS, the image registry, the garden's API.
pub fn default_host_ports() -> Vec<(Protocol, u16)> {
    vec![(Protocol::Udp, 53), (Protocol::Tcp, 53), (Protocol::Tcp, 5000), (Protocol::Tcp, 6443)]
}

/// A `--host-port` value: `tcp/PORT` or `udp/PORT`.
pub fn parse_host_port(value: &str) -> Result<(Protocol, u16), String> {
    let bad = || format!("--host-port {value:?}: not tcp/PORT or udp/PORT");
    let (protocol, port) = value.split_once('/').ok_or_else(bad)?;
    let protocol = match protocol {
        "tcp" => Protocol::Tcp,
        "udp" => Protocol::Udp,
        _ => return Err(bad()),
    };
    Ok((protocol, port.parse().map_err(|_| bad())?))
}

/// The chains of one shoot: from its machines, to its machines.
pub fn shoot_chains(shoot: &str) -> (String, String) {
    let hash = crate::common::sha256_hex(shoot.as_bytes());
    let short = &hash[..10];
    (format!("{PREFIX}{short}-F"), format!("{PREFIX}{short}-T"))
}

/// The rules, and the names of every chain they declare.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ruleset {
    pub restore: String,
    pub chains: BTreeSet<String>,
}

/// Builds the ruleset. Members without a veth name are left out (they are not attached yet).
pub fn ruleset(inputs: &Inputs) -> Ruleset {
    let mut by_shoot: BTreeMap<&str, Vec<&Member>> = BTreeMap::new();
    for m in inputs.machines.iter().filter(|m| !m.veth.is_empty()) {
        by_shoot.entry(m.shoot.as_str()).or_default().push(m);
    }
    let mut chains: BTreeSet<String> =
        [FORWARD_CHAIN, INPUT_CHAIN, OUTPUT_CHAIN, HOST_CHAIN].iter().map(|c| c.to_string()).collect();
    for shoot in by_shoot.keys() {
        let (from, to) = shoot_chains(shoot);
        chains.insert(from);
        chains.insert(to);
    }
    let mut out = String::from("*filter\n");
    for chain in &chains {
        let _ = writeln!(out, ":{chain} - [0:0]");
    }
    let established = "-m conntrack --ctstate ESTABLISHED,RELATED -j RETURN";
    // FORWARD: dispatch by bridge port (from / to a machine), then by address.
    let _ = writeln!(out, "-A {FORWARD_CHAIN} {established}");
    for (shoot, members) in &by_shoot {
        let (from, to) = shoot_chains(shoot);
        for m in members {
            let _ = writeln!(out, "-A {FORWARD_CHAIN} -m physdev --physdev-in {} -j {from}", m.veth);
        }
        for m in members {
            let _ = writeln!(out, "-A {FORWARD_CHAIN} -m physdev --physdev-out {} -j {to}", m.veth);
            let _ = writeln!(out, "-A {FORWARD_CHAIN} -d {}/32 -j {to}", m.ip);
        }
    }
    for network in shoot_networks(inputs) {
        let _ = writeln!(out, "-A {FORWARD_CHAIN} -d {network} -j REJECT");
    }
    for (shoot, members) in &by_shoot {
        let (from, to) = shoot_chains(shoot);
        for m in members {
            let _ = writeln!(out, "-A {from} -m physdev --physdev-out {} -j ACCEPT", m.veth);
        }
        if let Some(entry) = inputs.entry {
            for port in ENTRY_PORTS {
                let _ = writeln!(
                    out,
                    "-A {from} -p tcp -m conntrack --ctorigdst {entry}/32 --ctorigdstport {port} -j ACCEPT"
                );
            }
        }
        for apiserver in inputs.apiservers.get(*shoot).into_iter().flatten() {
            let _ = writeln!(
                out,
                "-A {from} -p tcp -m conntrack --ctorigdst {}/32 --ctorigdstport {} -j ACCEPT",
                apiserver.ip(),
                apiserver.port()
            );
        }
        if let Some(dns) = inputs.dns {
            for protocol in ["udp", "tcp"] {
                let _ = writeln!(
                    out,
                    "-A {from} -p {protocol} -m conntrack --ctorigdst {dns}/32 --ctorigdstport 53 -j ACCEPT"
                );
            }
        }
        if inputs.bridge.is_empty() {
            let _ = writeln!(out, "-A {from} -j REJECT");
        } else {
            let _ = writeln!(out, "-A {from} -o {} -j REJECT", inputs.bridge);
        }
        for m in members {
            let _ = writeln!(out, "-A {to} -m physdev --physdev-in {} -j ACCEPT", m.veth);
        }
        for b in inputs.bastions.iter().filter(|b| b.shoot == *shoot && !b.veth.is_empty()) {
            let _ = writeln!(out, "-A {to} -p tcp --dport {SSH_PORT} -m physdev --physdev-in {} -j ACCEPT", b.veth);
        }
        let _ = writeln!(out, "-A {to} -j REJECT");
    }
    // INPUT: machines reach only the allowed host services.
    let _ = writeln!(out, "-A {INPUT_CHAIN} {established}");
    for members in by_shoot.values() {
        for m in members {
            let _ = writeln!(out, "-A {INPUT_CHAIN} -m physdev --physdev-in {} -j {HOST_CHAIN}", m.veth);
        }
    }
    let mut ports = inputs.host_ports.clone();
    ports.sort();
    ports.dedup();
    for (protocol, port) in ports {
        let _ = writeln!(out, "-A {HOST_CHAIN} -p {} --dport {port} -j RETURN", protocol.name());
    }
    let _ = writeln!(out, "-A {HOST_CHAIN} -j REJECT");
    // OUTPUT: the host opens nothing to machines or shoot networks.
    let _ = writeln!(out, "-A {OUTPUT_CHAIN} {established}");
    for members in by_shoot.values() {
        for m in members {
            let _ = writeln!(out, "-A {OUTPUT_CHAIN} -d {}/32 -j REJECT", m.ip);
        }
    }
    for network in shoot_networks(inputs) {
        let _ = writeln!(out, "-A {OUTPUT_CHAIN} -d {network} -j REJECT");
    }
    out.push_str("COMMIT\n");
    Ruleset { restore: out, chains }
}

/// The shoots' networks, each once (shoots may share ranges).
fn shoot_networks(inputs: &Inputs) -> BTreeSet<Ipv4Net> {
    inputs.shoot_networks.values().flatten().map(|n| n.trunc()).collect()
}

/// Chains of ours in `iptables -S` output that `wanted` no longer declares: to delete once no
/// rule jumps to them.
pub fn stale_chains(listing: &str, wanted: &BTreeSet<String>) -> Vec<String> {
    listing
        .lines()
        .filter_map(|l| l.strip_prefix("-N "))
        .map(str::trim)
        .filter(|c| c.starts_with(PREFIX) && !wanted.contains(*c))
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(shoot: &str, veth: &str, ip: &str) -> Member {
        Member { shoot: shoot.into(), veth: veth.into(), ip: ip.parse().unwrap() }
    }

    fn inputs() -> Inputs {
        Inputs {
            machines: vec![
                member("shoot--p--a", "vetha0", "10.244.0.10"),
                member("shoot--p--a", "vetha1", "10.244.0.11"),
                member("shoot--p--b", "vethb0", "10.244.0.20"),
                member("shoot--p--c", "", "10.244.0.30"),
            ],
            bastions: vec![member("shoot--p--a", "vethbastion", "10.244.0.40")],
            entry: Some("10.96.5.5".parse().unwrap()),
            apiservers: BTreeMap::from([(
                "shoot--p--a".to_string(),
                vec!["10.96.1.1:443".parse().unwrap(), "10.244.0.50:8443".parse().unwrap()],
            )]),
            shoot_networks: BTreeMap::from([
                ("shoot--p--a".to_string(), vec!["100.96.0.0/11".parse().unwrap(), "100.64.0.0/13".parse().unwrap()]),
                ("shoot--p--b".to_string(), vec!["100.96.0.0/11".parse().unwrap()]),
            ]),
            host_ports: default_host_ports(),
            dns: Some("10.96.0.10".parse().unwrap()),
            bridge: "lcni0".into(),
        }
    }

    fn lines_of<'a>(restore: &'a str, chain: &str) -> Vec<&'a str> {
        restore.lines().filter(|l| l.starts_with(&format!("-A {chain} "))).collect()
    }

    #[test]
    fn a_machine_talks_to_its_own_shoot_the_entry_point_and_its_api_server_only() {
        let r = ruleset(&inputs());
        let (from_a, to_a) = shoot_chains("shoot--p--a");
        let from = lines_of(&r.restore, &from_a);
        assert_eq!(
            from,
            [
                format!("-A {from_a} -m physdev --physdev-out vetha0 -j ACCEPT"),
                format!("-A {from_a} -m physdev --physdev-out vetha1 -j ACCEPT"),
                format!("-A {from_a} -p tcp -m conntrack --ctorigdst 10.96.5.5/32 --ctorigdstport 443 -j ACCEPT"),
                format!("-A {from_a} -p tcp -m conntrack --ctorigdst 10.96.5.5/32 --ctorigdstport 8132 -j ACCEPT"),
                format!("-A {from_a} -p tcp -m conntrack --ctorigdst 10.96.1.1/32 --ctorigdstport 443 -j ACCEPT"),
                format!("-A {from_a} -p tcp -m conntrack --ctorigdst 10.244.0.50/32 --ctorigdstport 8443 -j ACCEPT"),
                format!("-A {from_a} -p udp -m conntrack --ctorigdst 10.96.0.10/32 --ctorigdstport 53 -j ACCEPT"),
                format!("-A {from_a} -p tcp -m conntrack --ctorigdst 10.96.0.10/32 --ctorigdstport 53 -j ACCEPT"),
                format!("-A {from_a} -o lcni0 -j REJECT"),
            ]
        );
        let to = lines_of(&r.restore, &to_a);
        assert!(
            to.contains(&format!("-A {to_a} -p tcp --dport 22 -m physdev --physdev-in vethbastion -j ACCEPT").as_str())
        );
        assert_eq!(to.last(), Some(&format!("-A {to_a} -j REJECT").as_str()));
        // b's machines are not a's: b's chains never accept a's ports.
        let (from_b, to_b) = shoot_chains("shoot--p--b");
        assert!(!lines_of(&r.restore, &from_b).iter().any(|l| l.contains("vetha")), "{}", r.restore);
        assert!(!lines_of(&r.restore, &to_b).iter().any(|l| l.contains("vetha") || l.contains("bastion")));
        // b has no API server address yet: only its own machines and the entry point.
        assert!(!lines_of(&r.restore, &from_b).iter().any(|l| l.contains("10.96.1.1")));
    }

    #[test]
    fn dispatch_seed_side_rules_and_the_host() {
        let r = ruleset(&inputs());
        let fwd = lines_of(&r.restore, FORWARD_CHAIN);
        assert_eq!(fwd[0], format!("-A {FORWARD_CHAIN} -m conntrack --ctstate ESTABLISHED,RELATED -j RETURN"));
        // A machine not attached yet (no veth) is left out until it is.
        assert!(!r.restore.contains("10.244.0.30"), "{}", r.restore);
        assert!(!r.chains.contains(&shoot_chains("shoot--p--c").0));
        // Each shoot network once, after the machines' dispatch.
        let rejects: Vec<&&str> = fwd.iter().filter(|l| l.contains("100.")).collect();
        assert_eq!(rejects.len(), 2, "{fwd:?}");
        let out = lines_of(&r.restore, OUTPUT_CHAIN);
        assert!(out.contains(&format!("-A {OUTPUT_CHAIN} -d 10.244.0.20/32 -j REJECT").as_str()));
        assert!(out.contains(&format!("-A {OUTPUT_CHAIN} -d 100.64.0.0/13 -j REJECT").as_str()));
        let host = lines_of(&r.restore, HOST_CHAIN);
        assert_eq!(host.len(), 5, "{host:?}");
        assert_eq!(host[4], format!("-A {HOST_CHAIN} -j REJECT"));
        assert!(r.restore.starts_with("*filter\n") && r.restore.ends_with("COMMIT\n"));
        for chain in &r.chains {
            assert!(chain.len() <= 28 && chain.starts_with(PREFIX), "{chain}");
            assert!(r.restore.contains(&format!(":{chain} - [0:0]\n")));
        }
    }

    #[test]
    fn without_an_entry_point_machines_reach_only_their_api_server() {
        let mut i = inputs();
        i.entry = None;
        let r = ruleset(&i);
        assert!(!r.restore.contains("10.96.5.5"));
        assert!(r.restore.contains("--ctorigdst 10.96.1.1/32"));
    }

    #[test]
    fn without_a_known_bridge_a_machine_reaches_nothing_else() {
        let mut i = inputs();
        i.bridge.clear();
        let (from_a, _) = shoot_chains("shoot--p--a");
        assert_eq!(lines_of(&ruleset(&i).restore, &from_a).last(), Some(&format!("-A {from_a} -j REJECT").as_str()));
    }

    #[test]
    fn host_ports() {
        assert_eq!(parse_host_port("udp/53"), Ok((Protocol::Udp, 53)));
        assert_eq!(parse_host_port("tcp/5000"), Ok((Protocol::Tcp, 5000)));
        for bad in ["53", "sctp/1", "tcp/x", "tcp/70000"] {
            assert!(parse_host_port(bad).unwrap_err().contains(bad), "{bad}");
        }
    }

    #[test]
    fn stale_chains_are_ours_and_unwanted() {
        let wanted = ruleset(&inputs()).chains;
        let listing = format!(
            "-P FORWARD ACCEPT\n-N KUBE-FORWARD\n-N {FORWARD_CHAIN}\n-N PROVIDER-LOCAL-0123456789-F\n-N {}\n",
            shoot_chains("shoot--p--a").0
        );
        assert_eq!(stale_chains(&listing, &wanted), ["PROVIDER-LOCAL-0123456789-F"]);
    }
}
