//! Everything the local cluster changes on the host, and how it is put back: the snapshot of
//! the host taken before the first start ([`snapshot`]), the network pieces ([`network`]:
//! bridge, sysctls, egress guard, iptables chains) and the leftovers of the kubelet and
//! containerd ([`cleanup`]: mounts, cgroups, directories, stray processes).

pub mod cleanup;
pub mod network;
pub mod snapshot;
