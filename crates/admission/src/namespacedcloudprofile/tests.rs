//! NamespacedCloudProfile rules against the `local` fixture profile as parent, table-driven.

use super::*;
use crate::fixtures;
use api::core::NamespacedCloudProfileStatus;
use api::core::cloudprofile::{
    KubernetesSettings, MachineImageVersion, MachineType, VersionClassification, VolumeType,
};
use api::core::namespacedcloudprofile::NamespacedCloudProfileSpec;
use api::core::shoot::CloudProfileReference;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// After [`fixtures::now`].
fn future() -> Option<Time> {
    Some(Time(fixtures::now().checked_add(k8s_openapi::jiff::SignedDuration::from_hours(24 * 365)).unwrap()))
}

/// Before [`fixtures::now`].
fn past() -> Option<Time> {
    Some(Time(Timestamp::from_second(fixtures::EXPIRED_AT).unwrap()))
}

/// A machine type with valid quantities.
fn machine_type(name: &str) -> MachineType {
    MachineType {
        name: name.into(),
        cpu: Quantity("4".into()),
        gpu: Quantity("0".into()),
        memory: Quantity("8Gi".into()),
        ..Default::default()
    }
}

fn version(v: &str, expires: Option<Time>, class: Option<VersionClassification>) -> ExpirableVersion {
    ExpirableVersion { version: v.into(), expiration_date: expires, classification: class }
}

fn image_version(v: &str, expires: Option<Time>, class: Option<VersionClassification>) -> MachineImageVersion {
    MachineImageVersion { expirable: version(v, expires, class), ..Default::default() }
}

/// A valid profile: extends 1.20.2 and image local 1.0.0, adds image version 1.1.0 and an image
/// `team`, a machine type `xlarge` and a volume type `fast`.
fn profile() -> NamespacedCloudProfile {
    let mut p = NamespacedCloudProfile::new(
        "team",
        NamespacedCloudProfileSpec {
            parent: CloudProfileReference { kind: Some("CloudProfile".into()), name: "local".into() },
            kubernetes: Some(KubernetesSettings { versions: vec![version("1.20.2", future(), None)] }),
            machine_images: vec![
                MachineImage {
                    name: "local".into(),
                    versions: vec![
                        image_version("1.0.0", future(), None),
                        image_version("1.1.0", None, Some(VersionClassification::Preview)),
                    ],
                },
                MachineImage {
                    name: "team".into(),
                    versions: vec![image_version("2.0.0", None, Some(VersionClassification::Supported))],
                },
            ],
            machine_types: vec![machine_type("xlarge")],
            volume_types: vec![VolumeType { name: "fast".into(), class: "premium".into(), ..Default::default() }],
            ..Default::default()
        },
    );
    p.metadata.namespace = Some("garden-dev".into());
    p
}

fn check(p: &NamespacedCloudProfile, old: Option<&NamespacedCloudProfile>) -> ErrorList {
    validate(p, old, Some(&fixtures::cloud_profile_spec()), fixtures::now())
}

type Mutation = fn(&mut NamespacedCloudProfile);

fn k8s(p: &mut NamespacedCloudProfile) -> &mut Vec<ExpirableVersion> {
    &mut p.spec.kubernetes.as_mut().unwrap().versions
}

#[test]
fn create_rules() {
    let cases: Vec<(&str, Mutation, Option<&str>)> = vec![
        ("valid", |_| {}, None),
        (
            "nothing but the parent",
            |p| p.spec = NamespacedCloudProfileSpec { parent: p.spec.parent.clone(), ..Default::default() },
            None,
        ),
        ("an expired override on create", |p| k8s(p)[0].expiration_date = past(), None),
        (
            "parent of another kind",
            |p| p.spec.parent.kind = Some("NamespacedCloudProfile".into()),
            Some("spec.parent.kind: Invalid value: \"NamespacedCloudProfile\": kind must be CloudProfile"),
        ),
        (
            "parent without kind",
            |p| p.spec.parent.kind = None,
            Some("spec.parent.kind: Invalid value: \"\": kind must be CloudProfile"),
        ),
        ("parent without name", |p| p.spec.parent.name = String::new(), Some("spec.parent.name: Required value")),
        (
            "kubernetes version the parent lacks",
            |p| k8s(p)[0].version = "1.22.0".into(),
            Some(
                "spec.kubernetes.versions[0].version: Invalid value: \"1.22.0\": does not exist in the parent CloudProfile and thus cannot be overridden",
            ),
        ),
        (
            "kubernetes version added with a classification",
            |p| k8s(p)[0] = version("1.22.0", None, Some(VersionClassification::Preview)),
            Some(
                "spec.kubernetes.versions[0].version: Invalid value: \"1.22.0\": does not exist in the parent CloudProfile",
            ),
        ),
        (
            "kubernetes override without date",
            |p| k8s(p)[0].expiration_date = None,
            Some(
                "spec.kubernetes.versions[0].expirationDate: Required value: an override of version \"1.20.2\" must set its expiration date",
            ),
        ),
        (
            "kubernetes version twice",
            |p| {
                let v = k8s(p)[0].clone();
                k8s(p).push(v);
            },
            Some("spec.kubernetes.versions[1].version: Duplicate value: \"1.20.2\""),
        ),
        (
            "image override without date",
            |p| p.spec.machine_images[0].versions[0].expirable.expiration_date = None,
            Some("spec.machineImages[0].versions[0].expirationDate: Required value"),
        ),
        (
            "image override with a classification",
            |p| p.spec.machine_images[0].versions[0].expirable.classification = Some(VersionClassification::Supported),
            Some("spec.machineImages[0].versions[0].classification: Forbidden: must not provide a classification"),
        ),
        (
            "image override with architectures",
            |p| p.spec.machine_images[0].versions[0].architectures = vec!["arm64".into()],
            Some("spec.machineImages[0].versions[0].architectures: Forbidden"),
        ),
        (
            "image version added without classification",
            |p| p.spec.machine_images[0].versions[1].expirable.classification = None,
            Some(
                "spec.machineImages[0].versions[1].classification: Required value: version \"1.1.0\" is not in the parent CloudProfile",
            ),
        ),
        (
            "new image version without classification",
            |p| p.spec.machine_images[1].versions[0].expirable.classification = None,
            Some("spec.machineImages[1].versions[0].classification: Required value"),
        ),
        (
            "new image version not semantic",
            |p| p.spec.machine_images[1].versions[0].expirable.version = "two".into(),
            Some("spec.machineImages[1].versions[0].version: Invalid value: \"two\": must be a semantic version"),
        ),
        (
            "new image without versions",
            |p| p.spec.machine_images[1].versions.clear(),
            Some("spec.machineImages[1].versions: Required value"),
        ),
        (
            "image twice",
            |p| p.spec.machine_images[1].name = "local".into(),
            Some("spec.machineImages[1].name: Duplicate value: \"local\""),
        ),
        (
            "machine type of the parent",
            |p| p.spec.machine_types[0].name = "large".into(),
            Some(
                "spec.machineTypes[0].name: Invalid value: \"large\": the parent CloudProfile already offers a machine type of this name",
            ),
        ),
        (
            "volume type of the parent",
            |p| p.spec.volume_types[0].name = "default".into(),
            Some(
                "spec.volumeTypes[0].name: Invalid value: \"default\": the parent CloudProfile already offers a volume type",
            ),
        ),
        (
            "machine type twice",
            |p| p.spec.machine_types.push(p.spec.machine_types[0].clone()),
            Some("spec.machineTypes[1].name: Duplicate value: \"xlarge\""),
        ),
        (
            "machine type without name",
            |p| p.spec.machine_types[0].name = String::new(),
            Some("spec.machineTypes[0].name: Required value"),
        ),
        (
            "not a certificate",
            |p| p.spec.ca_bundle = Some("-----BEGIN CERTIFICATE-----\nbm9wZQ==\n-----END CERTIFICATE-----\n".into()),
            Some("spec.caBundle: Invalid value: \"<bundle>\": caBundle is not a valid PEM-encoded certificate"),
        ),
        ("no PEM at all", |p| p.spec.ca_bundle = Some("hello".into()), Some("spec.caBundle: Invalid value")),
        (
            "negative machine type cpu",
            |p| p.spec.machine_types[0].cpu = Quantity("-64".into()),
            Some("spec.machineTypes[0].cpu: Invalid value: \"-64\": must be a non-negative quantity"),
        ),
        (
            "unparsable machine type memory",
            |p| p.spec.machine_types[0].memory = Quantity("much".into()),
            Some("spec.machineTypes[0].memory: Invalid value: \"much\": must be a quantity (for example 100Mi)"),
        ),
        (
            "negative volume type minSize",
            |p| p.spec.volume_types[0].min_size = Some(Quantity("-1Pi".into())),
            Some("spec.volumeTypes[0].minSize: Invalid value: \"-1Pi\": must be a non-negative quantity"),
        ),
    ];
    for (name, mutate, want) in cases {
        let mut p = profile();
        mutate(&mut p);
        let errs = check(&p, None);
        match want {
            None => assert!(errs.is_empty(), "{name}: {errs}"),
            Some(w) => assert!(errs.iter().any(|e| e.to_string().starts_with(w)), "{name}: want {w:?}, got {errs}"),
        }
    }
}

#[test]
fn a_real_certificate_is_accepted() {
    let ca = crate::server::certs::issue(
        &["127.0.0.1".to_string()],
        time::OffsetDateTime::now_utc(),
        std::time::Duration::from_secs(3600),
    )
    .unwrap();
    let mut p = profile();
    p.spec.ca_bundle = Some(format!("{}{}", ca.ca_pem, ca.cert_pem));
    assert!(check(&p, None).is_empty(), "{}", check(&p, None));
}

#[test]
fn missing_parent() {
    let errs = validate(&profile(), None, None, fixtures::now());
    assert_eq!(errs.to_string(), "spec.parent.name: Not found: \"local\": parent CloudProfile could not be found");
    // A metadata-only update of a profile whose parent has gone passes (so it can be deleted).
    let mut labelled = profile();
    labelled.metadata.labels = Some([("a".to_string(), "b".to_string())].into());
    assert!(validate(&labelled, Some(&profile()), None, fixtures::now()).is_empty());
}

#[test]
fn update_rules() {
    // (name, change to the old object, change to the new object, want)
    let cases: Vec<(&str, Mutation, Mutation, Option<&str>)> = vec![
        ("unchanged", |_| {}, |_| {}, None),
        ("a machine type added", |_| {}, |p| p.spec.machine_types.push(machine_type("huge")), None),
        ("parent changed", |_| {}, |p| p.spec.parent.name = "other".into(), Some("spec.parent: Invalid value")),
        (
            "a past date set",
            |_| {},
            |p| k8s(p)[0].expiration_date = past(),
            Some(
                "spec.kubernetes.versions[0].expirationDate: Invalid value: \"1.20.2\": expiration date for version \"1.20.2\" is in the past",
            ),
        ),
        (
            "a past date kept",
            |p| k8s(p)[0].expiration_date = past(),
            |p| {
                k8s(p)[0].expiration_date = past();
                p.spec.machine_types.clear();
            },
            None,
        ),
        (
            "a past date kept from the merged status",
            |p| {
                let mut merged = fixtures::cloud_profile_spec();
                merged.kubernetes.versions[1].expiration_date = past();
                p.status =
                    Some(NamespacedCloudProfileStatus { cloud_profile_spec: Some(merged), observed_generation: None });
                p.spec.kubernetes = None;
            },
            |p| p.spec.kubernetes = Some(KubernetesSettings { versions: vec![version("1.20.2", past(), None)] }),
            None,
        ),
        (
            "a past image date set",
            |_| {},
            |p| p.spec.machine_images[0].versions[0].expirable.expiration_date = past(),
            Some(
                "spec.machineImages[0].versions[0].expirationDate: Invalid value: \"1.0.0\": expiration date for version \"1.0.0\" is in the past",
            ),
        ),
        (
            "a machine type the parent gained later stays",
            |p| p.spec.machine_types[0].name = "large".into(),
            |p| {
                p.spec.machine_types[0].name = "large".into();
                p.spec.volume_types.clear();
            },
            None,
        ),
    ];
    for (name, change_old, change_new, want) in cases {
        let mut old = profile();
        change_old(&mut old);
        let mut new = old.clone();
        change_new(&mut new);
        let errs = check(&new, Some(&old));
        match want {
            None => assert!(errs.is_empty(), "{name}: {errs}"),
            Some(w) => assert!(errs.iter().any(|e| e.to_string().starts_with(w)), "{name}: want {w:?}, got {errs}"),
        }
    }
}
