//! The contract of where and how the shoot is placed: its profile, credentials, region, seed,
//! purpose and control plane availability.

use super::{Field, honoured, refused};

/// The profile, the credentials and the placement: where the shoot runs and against what.
pub const PLACEMENT: &[Field] = &[
    honoured(
        "spec.cloudProfileName",
        "selects the CloudProfile whose versions, images and machine types the shoot may use",
        "a_shoot_is_maintained_against_the_profile_it_names",
    ),
    honoured(
        "spec.cloudProfile",
        "selects the CloudProfile or NamespacedCloudProfile (newer spelling of cloudProfileName)",
        "namespaced_cloud_profiles_and_exposure_classes_steer_the_decision",
    ),
    honoured(
        "spec.credentialsBindingName",
        "names the CredentialsBinding whose Secret becomes the control plane's cloudprovider secret",
        "credentials_and_quotas_named_by_credentials_bindings_are_protected",
    ),
    honoured(
        "spec.secretBindingName",
        "names the SecretBinding whose Secret becomes the control plane's cloudprovider secret",
        "a_shoot_gets_a_real_node_runs_workloads_and_is_deleted_without_leftovers",
    ),
    honoured(
        "spec.region",
        "the provider region; the scheduler places the shoot on a seed of that region",
        "shoots_land_where_they_should_and_refusals_are_explained",
    ),
    honoured(
        "spec.seedName",
        "the seed that runs the control plane; changing it migrates the control plane",
        "a_shoot_migrates_with_its_secrets_states_and_etcd_data",
    ),
    honoured(
        "spec.seedSelector",
        "the scheduler only picks seeds matching the labels and provider types",
        "shoots_land_where_they_should_and_refusals_are_explained",
    ),
    honoured(
        "spec.tolerations",
        "the scheduler only picks seeds whose taints are tolerated",
        "shoots_land_where_they_should_and_refusals_are_explained",
    ),
    honoured(
        "spec.schedulerName",
        "only the named scheduler places the shoot",
        "a_scheduled_shoot_gets_its_seed_label_once",
    ),
    honoured(
        "spec.exposureClassName",
        "the ExposureClass narrows the seeds and labels the API server's Service for its handler",
        "exposure_class_narrows_seeds_and_adds_tolerations",
    ),
    honoured(
        "spec.purpose",
        "`infrastructure` only in the garden namespace; `testing` shoots get no health monitoring of their system components; the purpose is passed to extensions in the Cluster",
        "deploys_only_for_the_normal_purpose_of_awake_shoots_with_workers_and_an_image",
    ),
];

/// The control plane's availability.
pub const CONTROL_PLANE: &[Field] = &[refused(
    "spec.controlPlane.highAvailability",
    "highly available control planes need a seed whose nodes span three zones, and no seed offers that yet (the local seed has one node); docs/ha.md",
)];
