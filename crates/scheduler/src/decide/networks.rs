//! The network filter: a shoot's node, pod and service networks must not overlap the seed's own
//! networks, because the shoot's control plane runs inside the seed and must reach both. Shoot
//! CIDRs are parsed once per decision; seed CIDRs per seed, with [`NetworkMemo`] skipping the
//! work for a seed set up like the previous one.

pub use super::network_set::{NetworkKind, NetworkSet};
use super::refusal::{DropReason, Refusal};
use api::core::Seed;
use api::core::Shoot;
use api::core::seed::SeedNetworks;
use ipnet::IpNet;

/// The shoot's own networks, parsed once per decision. Pods and services left unset are taken
/// from each seed's `networks.shootDefaults`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ShootNetworks {
    pub nodes: Option<IpNet>,
    pub pods: Option<IpNet>,
    pub services: Option<IpNet>,
    /// A shoot without worker pools has no node or pod network to place.
    pub workerless: bool,
}

impl ShootNetworks {
    /// Parses `spec.networking`; an unparsable CIDR refuses the shoot outright.
    pub fn of(shoot: &Shoot) -> Result<Self, Refusal> {
        let parse = |field: &'static str, value: Option<&String>| -> Result<Option<IpNet>, Refusal> {
            value
                .map(|v| {
                    v.trim().parse::<IpNet>().map_err(|_| Refusal::InvalidShootNetwork { field, value: v.clone() })
                })
                .transpose()
        };
        let n = shoot.spec.networking.as_ref();
        Ok(Self {
            nodes: parse("nodes", n.and_then(|n| n.nodes.as_ref()))?,
            pods: parse("pods", n.and_then(|n| n.pods.as_ref()))?,
            services: parse("services", n.and_then(|n| n.services.as_ref()))?,
            workerless: shoot.spec.provider.workers.is_empty(),
        })
    }
}

/// Two networks overlap when they agree on the shorter of their two prefixes. (Bit arithmetic
/// rather than `IpNet::contains`, which dominated the decision's profile.)
fn overlap(a: &IpNet, b: &IpNet) -> bool {
    let (x, y, bits) = match (a, b) {
        (IpNet::V4(a), IpNet::V4(b)) => (u128::from(u32::from(a.addr())), u128::from(u32::from(b.addr())), 32),
        (IpNet::V6(a), IpNet::V6(b)) => (u128::from(a.addr()), u128::from(b.addr()), 128),
        _ => return false,
    };
    let prefix = u32::from(a.prefix_len().min(b.prefix_len()));
    (x ^ y).checked_shr(bits - prefix).unwrap_or(0) == 0
}

/// The shoot's node, pod and service networks (pods and services defaulting to the seed's
/// `shootDefaults`) overlap none of the seed's own networks.
pub fn networks_disjoint(seed: &Seed, shoot: &ShootNetworks) -> Result<(), DropReason> {
    let n = &seed.spec.networks;
    let parse = |s: &str| s.trim().parse::<IpNet>().map_err(|_| DropReason::InvalidSeedNetworks);
    let seed_nets = [n.nodes.as_deref().map(parse).transpose()?, Some(parse(&n.pods)?), Some(parse(&n.services)?)];
    let defaults = n.shoot_defaults.as_ref();

    let mut missing = NetworkSet::default();
    let mut effective = |kind: NetworkKind, own: Option<IpNet>, default: Option<&String>| -> Result<_, DropReason> {
        match (own, default) {
            (Some(net), _) => Ok(Some(net)),
            (None, Some(d)) => parse(d).map(Some),
            (None, None) => {
                missing.insert(kind);
                Ok(None)
            }
        }
    };
    let pods = if shoot.workerless {
        None
    } else {
        effective(NetworkKind::Pods, shoot.pods, defaults.and_then(|d| d.pods.as_ref()))?
    };
    let services = effective(NetworkKind::Services, shoot.services, defaults.and_then(|d| d.services.as_ref()))?;
    if !missing.is_empty() {
        return Err(DropReason::NoDefaultNetworks(missing));
    }
    let nodes = if shoot.workerless { None } else { shoot.nodes };

    let mut overlapping = NetworkSet::default();
    for (kind, net) in [(NetworkKind::Nodes, nodes), (NetworkKind::Pods, pods), (NetworkKind::Services, services)] {
        if let Some(net) = net
            && seed_nets.iter().flatten().any(|s| overlap(&net, s))
        {
            overlapping.insert(kind);
        }
    }
    if overlapping.is_empty() { Ok(()) } else { Err(DropReason::NetworksOverlap(overlapping)) }
}

/// Remembers the network verdict for the previous seed: fleets are usually set up alike, and
/// comparing the network strings is much cheaper than parsing and checking them again.
#[derive(Debug, Default)]
pub struct NetworkMemo<'a> {
    last: Option<(&'a SeedNetworks, Result<(), DropReason>)>,
}

impl<'a> NetworkMemo<'a> {
    /// [`networks_disjoint`], reusing the previous verdict when the seed's networks are identical.
    pub fn networks_disjoint(&mut self, seed: &'a Seed, shoot: &ShootNetworks) -> Result<(), DropReason> {
        if let Some((networks, verdict)) = &self.last
            && **networks == seed.spec.networks
        {
            return verdict.clone();
        }
        let verdict = networks_disjoint(seed, shoot);
        self.last = Some((&seed.spec.networks, verdict.clone()));
        verdict
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::fixtures::*;

    #[test]
    fn networks() {
        let nets = |nodes: Option<&str>, pods: Option<&str>, services: Option<&str>| ShootNetworks {
            nodes: nodes.map(|n| n.parse().unwrap()),
            pods: pods.map(|n| n.parse().unwrap()),
            services: services.map(|n| n.parse().unwrap()),
            workerless: false,
        };
        let overlap = |kinds: &[NetworkKind]| Err(DropReason::NetworksOverlap(NetworkSet::of(kinds)));
        // The fixture seed: nodes 10.0.0.0/16, pods 10.1.0.0/16, services 10.2.0.0/16, no defaults.
        let with_defaults = shoot_defaults(seed("a"), "100.96.0.0/11", "100.64.0.0/13");
        let cases: Vec<(&str, Seed, ShootNetworks, Result<(), DropReason>)> = vec![
            ("disjoint", seed("a"), nets(Some("10.250.0.0/16"), Some("100.96.0.0/11"), Some("100.64.0.0/13")), Ok(())),
            (
                "pods inside seed pods",
                seed("a"),
                nets(None, Some("10.1.8.0/24"), Some("100.64.0.0/13")),
                overlap(&[NetworkKind::Pods]),
            ),
            (
                "services contain seed nodes",
                seed("a"),
                nets(None, Some("100.96.0.0/11"), Some("10.0.0.0/8")),
                overlap(&[NetworkKind::Services]),
            ),
            (
                "nodes and pods overlap",
                seed("a"),
                nets(Some("10.0.5.0/24"), Some("10.2.0.0/16"), Some("100.64.0.0/13")),
                overlap(&[NetworkKind::Nodes, NetworkKind::Pods]),
            ),
            (
                "no defaults for unset networks",
                seed("a"),
                nets(None, None, None),
                Err(DropReason::NoDefaultNetworks(NetworkSet::of(&[NetworkKind::Pods, NetworkKind::Services]))),
            ),
            ("unset networks take the seed's defaults", with_defaults.clone(), nets(None, None, None), Ok(())),
            (
                "defaults still checked against the seed",
                shoot_defaults(seed("a"), "10.1.0.0/20", "100.64.0.0/13"),
                nets(None, None, None),
                overlap(&[NetworkKind::Pods]),
            ),
            (
                "ipv6 never overlaps ipv4",
                seed("a"),
                nets(Some("fd00::/64"), Some("fd01::/48"), Some("fd02::/108")),
                Ok(()),
            ),
            (
                "invalid seed network",
                {
                    let mut s = seed("a");
                    s.spec.networks.pods = "10.1.0.0/33".into();
                    s
                },
                nets(None, Some("100.96.0.0/11"), Some("100.64.0.0/13")),
                Err(DropReason::InvalidSeedNetworks),
            ),
            (
                "workerless shoots need only services",
                seed("a"),
                ShootNetworks { workerless: true, ..nets(Some("10.0.0.0/16"), None, Some("100.64.0.0/13")) },
                Ok(()),
            ),
        ];
        for (name, s, shoot_nets, want) in cases {
            assert_eq!(networks_disjoint(&s, &shoot_nets), want, "{name}");
        }
        assert_eq!(
            DropReason::NoDefaultNetworks(NetworkSet::of(&[NetworkKind::Services, NetworkKind::Pods])).to_string(),
            "no default shoot networks (pods, services)"
        );
    }

    #[test]
    fn overlap_by_prefix() {
        let cases = [
            ("10.0.0.0/8", "10.255.0.0/16", true),
            ("10.255.0.0/16", "10.0.0.0/8", true),
            ("10.1.0.0/16", "10.2.0.0/16", false),
            ("10.1.2.3/16", "10.1.200.0/24", true),
            ("0.0.0.0/0", "192.168.0.0/16", true),
            ("192.168.0.1/32", "192.168.0.1/32", true),
            ("192.168.0.1/32", "192.168.0.2/32", false),
            ("fd00::/8", "fd12:3456::/32", true),
            ("fd00::/16", "fd01::/16", false),
            ("::/0", "2001:db8::/32", true),
            ("10.0.0.0/8", "::/0", false),
        ];
        for (a, b, want) in cases {
            assert_eq!(overlap(&a.parse().unwrap(), &b.parse().unwrap()), want, "{a} / {b}");
        }
    }

    #[test]
    fn invalid_shoot_networks_refuse_the_shoot() {
        let mut s = shoot("s");
        s.spec.networking.get_or_insert_default().services = Some("100.64.0.0".into());
        assert_eq!(
            ShootNetworks::of(&s).unwrap_err().to_string(),
            "spec.networking.services \"100.64.0.0\" is not a valid CIDR"
        );
    }
}
