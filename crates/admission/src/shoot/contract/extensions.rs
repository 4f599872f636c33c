//! The contract of what runs beside the cluster's own components: the deprecated addons, the
//! shoot's extensions and the resources copied for them.

use super::{Field, honoured, only_as, refused};

const NO_ADDONS: &str =
    "this system deploys no addons (Gardener deprecated them); install them into the shoot yourself";

/// The addons (deprecated in Gardener): none is deployed.
pub const ADDONS: &[Field] = &[
    only_as(
        "spec.addons.kubernetesDashboard.enabled",
        &["false"],
        "no dashboard is deployed",
        "the_contract_accepts_what_the_system_does_anyway",
        NO_ADDONS,
    ),
    only_as(
        "spec.addons.kubernetes-dashboard.enabled",
        &["false"],
        "no dashboard is deployed",
        "the_contract_accepts_what_the_system_does_anyway",
        NO_ADDONS,
    ),
    only_as(
        "spec.addons.nginxIngress.enabled",
        &["false"],
        "no ingress controller is deployed",
        "the_contract_accepts_what_the_system_does_anyway",
        NO_ADDONS,
    ),
    only_as(
        "spec.addons.nginx-ingress.enabled",
        &["false"],
        "no ingress controller is deployed",
        "the_contract_accepts_what_the_system_does_anyway",
        NO_ADDONS,
    ),
    refused("spec.addons.kubernetesDashboard.authenticationMode", NO_ADDONS),
    refused("spec.addons.kubernetes-dashboard.authenticationMode", NO_ADDONS),
    refused("spec.addons.nginxIngress.config", NO_ADDONS),
    refused("spec.addons.nginxIngress.externalTrafficPolicy", NO_ADDONS),
    refused("spec.addons.nginxIngress.loadBalancerSourceRanges", NO_ADDONS),
    refused("spec.addons.nginx-ingress.config", NO_ADDONS),
    refused("spec.addons.nginx-ingress.externalTrafficPolicy", NO_ADDONS),
    refused("spec.addons.nginx-ingress.loadBalancerSourceRanges", NO_ADDONS),
];

/// The shoot's extensions.
pub const EXTENSIONS: &[Field] = &[
    honoured(
        "spec.extensions[].type",
        "an Extension object of that type is created in the control plane namespace",
        "an_extension_error_lands_in_last_errors_and_clears_on_success",
    ),
    honoured(
        "spec.extensions[].providerConfig",
        "passed unchanged to the Extension object",
        "an_extension_error_lands_in_last_errors_and_clears_on_success",
    ),
    honoured(
        "spec.extensions[].disabled",
        "a disabled extension gets no Extension object, also when its registration is globally enabled",
        "an_extension_error_lands_in_last_errors_and_clears_on_success",
    ),
];

/// Referenced resources, copied for extensions.
pub const RESOURCES: &[Field] = &[honoured(
    "spec.resources",
    "the referenced Secrets and ConfigMaps are copied into the control plane namespace for extensions",
    "osc_output_is_deterministic_and_reads_referenced_secrets",
)];
