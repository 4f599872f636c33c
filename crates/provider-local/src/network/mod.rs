//! Network: local mode installs no CNI. The machines are Pods of the seed and use the seed's
//! own pod network, so there is nothing to configure; reconcile validates the CIDRs and records
//! them in `providerStatus`, and its `lastOperation.description` says that no networking was
//! set up.

use crate::common::describe;
use crate::error::Error;
use extension_sdk::api::extensions::Network;
use extension_sdk::api::extensions::network::IpFamily;
use extension_sdk::{Actuator, ActuatorError, ClusterContext, Outcome};
use serde_json::json;

/// What the description in `providerStatus` says.
pub const DESCRIPTION: &str =
    "local mode has no CNI to install: the pod and service CIDRs are recorded only, no networking was configured";

/// Validates the CIDRs and builds the `providerStatus`.
pub fn provider_status(network: &Network) -> Result<serde_json::Value, Error> {
    for (field, cidr) in [("spec.podCIDR", &network.spec.pod_cidr), ("spec.serviceCIDR", &network.spec.service_cidr)] {
        cidr.parse::<ipnet::IpNet>()
            .map_err(|e| Error::config(describe(network), field, format!("{cidr:?} is not a CIDR: {e}")))?;
    }
    let families: Vec<&str> = if network.spec.ip_families.is_empty() {
        vec!["IPv4"]
    } else {
        network.spec.ip_families.iter().map(|f| if *f == IpFamily::Ipv4 { "IPv4" } else { "IPv6" }).collect()
    };
    Ok(json!({
        "podCIDR": network.spec.pod_cidr,
        "serviceCIDR": network.spec.service_cidr,
        "ipFamilies": families,
        "cni": "none",
        "description": DESCRIPTION,
    }))
}

/// The Network actuator.
#[derive(Clone, Debug, Default)]
pub struct LocalNetwork;

impl Actuator<Network> for LocalNetwork {
    async fn reconcile(&self, network: &Network, _: &ClusterContext) -> Result<Outcome<Network>, ActuatorError> {
        Ok(Outcome::done().with_provider_status(provider_status(network)?).with_description(DESCRIPTION))
    }

    async fn delete(&self, _: &Network, _: &ClusterContext) -> Result<(), ActuatorError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use extension_sdk::api::extensions::NetworkSpec;

    #[test]
    fn records_cidrs_and_rejects_invalid_ones() {
        let mut n = Network::new(
            "n",
            NetworkSpec { pod_cidr: "10.1.0.0/16".into(), service_cidr: "fd00::/108".into(), ..Default::default() },
        );
        let s = provider_status(&n).unwrap_or_default();
        assert_eq!(s["podCIDR"], "10.1.0.0/16");
        assert_eq!(s["cni"], "none");
        assert_eq!(s["ipFamilies"], json!(["IPv4"]));
        n.spec.pod_cidr = "10.1.0.0".into();
        let e = provider_status(&n).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains("spec.podCIDR"), "{e}");
    }
}
