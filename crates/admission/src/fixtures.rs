//! Valid example objects: a `local` CloudProfile, the ControllerRegistrations serving the
//! extension types the example objects name, and a Shoot that passes every rule against them.
//! The unit tests, the integration tests and the fuzz benchmark mutate these.

use api::core::cloudprofile::{
    AvailabilityZone, CloudProfileSpec, ExpirableVersion, KubernetesSettings, MachineImage, MachineImageVersion,
    MachineType, Region, VersionClassification, VolumeType,
};
use api::core::controller::ControllerResource;
use api::core::shoot::provider::Machine;
use api::core::shoot::{Networking, Provider, Worker};
use api::core::{CloudProfile, ControllerRegistration, ControllerRegistrationSpec, Shoot, ShootSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;

/// 2020-01-01T00:00:00Z: the expiry of the profile's expired versions.
pub const EXPIRED_AT: i64 = 1_577_836_800;

fn version(v: &str, class: Option<VersionClassification>, expired: bool) -> ExpirableVersion {
    ExpirableVersion {
        version: v.into(),
        classification: class,
        expiration_date: if expired { Timestamp::from_second(EXPIRED_AT).ok().map(Time) } else { None },
    }
}

/// The `local` profile: Kubernetes 1.20.2 (supported), 1.21.0 (preview), 1.19.7 (expired);
/// image `local` 1.0.0 and 0.9.0 (expired); machine types `local` and `large`; region `local`
/// with zone `0`; volume type `default`.
pub fn cloud_profile_spec() -> CloudProfileSpec {
    CloudProfileSpec {
        type_: "local".into(),
        kubernetes: KubernetesSettings {
            versions: vec![
                version("1.21.0", Some(VersionClassification::Preview), false),
                version("1.20.2", Some(VersionClassification::Supported), false),
                version("1.19.7", Some(VersionClassification::Deprecated), true),
            ],
        },
        machine_images: vec![MachineImage {
            name: "local".into(),
            versions: vec![
                MachineImageVersion { expirable: version("1.0.0", None, false), ..Default::default() },
                MachineImageVersion { expirable: version("0.9.0", None, true), ..Default::default() },
            ],
        }],
        machine_types: ["local", "large"]
            .iter()
            .map(|n| MachineType {
                name: (*n).into(),
                cpu: Quantity("1".into()),
                gpu: Quantity("0".into()),
                memory: Quantity("1Gi".into()),
                usable: Some(true),
                ..Default::default()
            })
            .collect(),
        regions: vec![Region {
            name: "local".into(),
            zones: vec![AvailabilityZone { name: "0".into(), ..Default::default() }],
            ..Default::default()
        }],
        volume_types: vec![VolumeType {
            name: "default".into(),
            class: "standard".into(),
            usable: Some(true),
            min_size: None,
        }],
        ..Default::default()
    }
}

/// The `local` CloudProfile object.
pub fn cloud_profile() -> CloudProfile {
    CloudProfile::new("local", cloud_profile_spec())
}

/// The ControllerRegistrations of the example garden: `provider-local` (every provider kind of
/// type `local`: Infrastructure, ControlPlane, Worker, Network, OperatingSystemConfig, DNSRecord,
/// BackupBucket, BackupEntry) and `networking-calico` (Network `calico`, the example shoot's).
pub fn controller_registrations() -> Vec<ControllerRegistration> {
    let resources = |kinds: &[&str], type_: &str| -> Vec<ControllerResource> {
        kinds
            .iter()
            .map(|k| ControllerResource { kind: (*k).into(), type_: type_.into(), ..Default::default() })
            .collect()
    };
    let local = [
        "Infrastructure",
        "ControlPlane",
        "Worker",
        "Network",
        "OperatingSystemConfig",
        "DNSRecord",
        "BackupBucket",
        "BackupEntry",
    ];
    vec![
        ControllerRegistration::new(
            "provider-local",
            ControllerRegistrationSpec { resources: resources(&local, "local"), ..Default::default() },
        ),
        ControllerRegistration::new(
            "networking-calico",
            ControllerRegistrationSpec { resources: resources(&["Network"], "calico"), ..Default::default() },
        ),
    ]
}

/// A valid shoot `demo` in `garden-dev` with one worker pool, before defaulting.
pub fn shoot() -> Shoot {
    Shoot {
        metadata: ObjectMeta { name: Some("demo".into()), namespace: Some("garden-dev".into()), ..Default::default() },
        spec: ShootSpec {
            cloud_profile_name: Some("local".into()),
            region: "local".into(),
            secret_binding_name: Some("local".into()),
            kubernetes: api::core::shoot::Kubernetes { version: "1.20.2".into(), ..Default::default() },
            networking: Some(Networking { type_: Some("calico".into()), ..Default::default() }),
            provider: Provider {
                type_: "local".into(),
                workers: vec![Worker {
                    name: "pool".into(),
                    minimum: 1,
                    maximum: 2,
                    machine: Machine { type_: "local".into(), ..Default::default() },
                    zones: vec!["0".into()],
                    ..Default::default()
                }],
                ..Default::default()
            },
            ..Default::default()
        },
        status: None,
    }
}

/// A time after [`EXPIRED_AT`] ("now" in tests).
pub fn now() -> Timestamp {
    Timestamp::from_second(EXPIRED_AT + 86_400 * 365).unwrap_or(Timestamp::UNIX_EPOCH)
}
