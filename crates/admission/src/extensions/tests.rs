#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use super::*;
use api::core::shoot::provider::{ContainerRuntime, Cri, ShootMachineImage};
use api::core::shoot::settings::{Dns, DnsProvider};
use api::core::{Extension, Seed, Shoot};
use serde_json::json;

fn registration(name: &str, resources: serde_json::Value) -> ControllerRegistration {
    serde_json::from_value(json!({
        "apiVersion": "core.gardener.cloud/v1beta1", "kind": "ControllerRegistration",
        "metadata": {"name": name}, "spec": {"resources": resources}
    }))
    .unwrap()
}

/// provider-local's kinds of type `local`, Network `local`, ContainerRuntime `gvisor`,
/// Extension `audit` (workerless) and `shoot-dns` (not workerless), and a secondary (not
/// primary) Network `calico`, which does not count.
fn registered() -> Registered {
    let local: Vec<_> = [
        "Infrastructure",
        "ControlPlane",
        "Worker",
        "Network",
        "OperatingSystemConfig",
        "DNSRecord",
        "BackupBucket",
        "BackupEntry",
    ]
    .iter()
    .map(|k| json!({"kind": k, "type": "local"}))
    .collect();
    Registered::new(&[
        registration("provider-local", json!(local)),
        registration("gvisor", json!([{"kind": "ContainerRuntime", "type": "gvisor"}])),
        registration(
            "extensions",
            json!([{"kind": "Extension", "type": "audit", "workerlessSupported": true},
                   {"kind": "Extension", "type": "shoot-dns"}]),
        ),
        registration("secondary", json!([{"kind": "Network", "type": "calico", "primary": false}])),
    ])
}

/// A shoot naming only registered types: provider, network and image `local`, runtime
/// `gvisor`, a primary DNS provider `local` and an unmanaged one, extension `shoot-dns`.
fn shoot() -> ShootSpec {
    let mut s = crate::fixtures::shoot().spec;
    s.networking.as_mut().unwrap().type_ = Some("local".into());
    let w = &mut s.provider.workers[0];
    w.machine.image = Some(ShootMachineImage { name: "local".into(), ..Default::default() });
    w.cri = Some(Cri {
        container_runtimes: vec![ContainerRuntime { type_: "gvisor".into(), ..Default::default() }],
        ..Default::default()
    });
    s.dns = Some(Dns {
        providers: vec![
            DnsProvider { type_: Some("local".into()), primary: Some(true), ..Default::default() },
            DnsProvider { type_: Some("unmanaged".into()), primary: Some(true), ..Default::default() },
            DnsProvider { type_: Some("aws-route53".into()), ..Default::default() },
        ],
        ..Default::default()
    });
    s.extensions = vec![Extension { type_: "shoot-dns".into(), ..Default::default() }];
    s
}

fn seed() -> SeedSpec {
    let seed: Seed = serde_json::from_value(json!({
        "apiVersion": "core.gardener.cloud/v1beta1", "kind": "Seed", "metadata": {"name": "s"},
        "spec": {"provider": {"type": "local", "region": "local"},
                 "backup": {"provider": "local"},
                 "ingress": {"domain": "ingress.local", "controller": {"kind": "nginx"}},
                 "dns": {"provider": {"type": "local", "secretRef": {"name": "n", "namespace": "garden"}}},
                 "networks": {"pods": "10.1.0.0/16", "services": "10.2.0.0/16"}}
    }))
    .unwrap();
    seed.spec
}

#[test]
fn a_shoot_naming_registered_types_is_admitted() {
    assert_eq!(validate_shoot(&shoot(), None, &registered()).to_string(), "");
}

#[test]
fn each_shoot_field_is_refused_naming_field_kind_and_type() {
    type Mutation = fn(&mut ShootSpec);
    let cases: Vec<(Mutation, &str)> = vec![
        (
            |s| s.provider.type_ = "aws".into(),
            "spec.provider.type: Unsupported value: \"aws\": no ControllerRegistration serves Infrastructure, ControlPlane or Worker type \"aws\"; registered: \"local\"",
        ),
        (
            |s| s.networking.as_mut().unwrap().type_ = Some("calico".into()),
            "spec.networking.type: Unsupported value: \"calico\": no ControllerRegistration serves Network type \"calico\"; registered: \"local\"",
        ),
        (
            |s| s.provider.workers[0].machine.image.as_mut().unwrap().name = "gardenlinux".into(),
            "spec.provider.workers[0].machine.image.name: Unsupported value: \"gardenlinux\": no ControllerRegistration serves OperatingSystemConfig type \"gardenlinux\"; registered: \"local\"",
        ),
        (
            |s| s.provider.workers[0].cri.as_mut().unwrap().container_runtimes[0].type_ = "kata".into(),
            "spec.provider.workers[0].cri.containerRuntimes[0].type: Unsupported value: \"kata\": no ControllerRegistration serves ContainerRuntime type \"kata\"; registered: \"gvisor\"",
        ),
        (
            |s| s.dns.as_mut().unwrap().providers[0].type_ = Some("aws-route53".into()),
            "spec.dns.providers[0].type: Unsupported value: \"aws-route53\": no ControllerRegistration serves DNSRecord type \"aws-route53\"; registered: \"local\"",
        ),
        (
            |s| s.extensions.push(Extension { type_: "shoot-cert-service".into(), ..Default::default() }),
            "spec.extensions[1].type: Unsupported value: \"shoot-cert-service\": no ControllerRegistration serves Extension type \"shoot-cert-service\"; registered: \"audit\", \"shoot-dns\"",
        ),
    ];
    for (mutate, want) in cases {
        let mut s = shoot();
        mutate(&mut s);
        assert_eq!(validate_shoot(&s, None, &registered()).to_string(), want);
    }
}

#[test]
fn secondary_registrations_and_empty_gardens_serve_nothing() {
    let mut s = shoot();
    s.networking.as_mut().unwrap().type_ = Some("calico".into());
    assert!(validate_shoot(&s, None, &registered()).has("spec.networking.type"), "calico is only secondary");
    let errs = validate_shoot(&crate::fixtures::shoot().spec, None, &Registered::default());
    assert!(
        errs.to_string().contains("no ControllerRegistration serves Network type \"calico\"; registered: none"),
        "{errs}"
    );
    assert!(errs.has("spec.provider.type"), "{errs}");
}

#[test]
fn updates_judge_only_what_they_add() {
    let r = registered();
    // The garden lost the registration of the shoot's network: other changes are still allowed.
    let mut old = shoot();
    old.networking.as_mut().unwrap().type_ = Some("calico".into());
    let mut new = old.clone();
    new.hibernation = Some(Default::default());
    new.provider.workers[0].maximum = 5;
    assert_eq!(validate_shoot(&new, Some(&old), &r).to_string(), "");
    // A type named anew is judged.
    let old = shoot();
    let mut new = old.clone();
    new.networking.as_mut().unwrap().type_ = Some("calico".into());
    assert!(validate_shoot(&new, Some(&old), &r).has("spec.networking.type"));
    // A pool added with an unregistered image is judged; the existing ones are not.
    let mut old = shoot();
    old.provider.workers[0].machine.image.as_mut().unwrap().name = "legacy".into();
    let mut new = old.clone();
    let mut pool = new.provider.workers[0].clone();
    pool.name = "second".into();
    pool.machine.image.as_mut().unwrap().name = "gardenlinux".into();
    new.provider.workers.push(pool);
    let errs = validate_shoot(&new, Some(&old), &r);
    assert_eq!(errs.len(), 1, "{errs}");
    assert!(errs.has("spec.provider.workers[1].machine.image.name"), "{errs}");
}

#[test]
fn workerless_shoots_need_only_workerless_extensions() {
    let r = registered();
    let mut s = shoot();
    s.provider.workers.clear();
    s.provider.type_ = "aws".into();
    s.networking = None;
    s.extensions = vec![
        Extension { type_: "audit".into(), ..Default::default() },
        Extension { type_: "shoot-dns".into(), ..Default::default() },
    ];
    let errs = validate_shoot(&s, None, &r);
    assert_eq!(errs.len(), 1, "provider and network are not needed without workers: {errs}");
    assert!(
        errs.to_string()
            .starts_with("spec.extensions[1].type: Unsupported value: \"shoot-dns\": the shoot has no workers"),
        "{errs}"
    );
}

#[test]
fn seeds_need_control_plane_backup_and_dns_types() {
    let r = registered();
    assert_eq!(validate_seed(&seed(), None, &r).to_string(), "");
    let mut s = seed();
    s.provider.type_ = "aws".into();
    s.backup.as_mut().unwrap().provider = Some("s3".into());
    if let Some(api::core::seed::SeedDnsProviderRef::Provider(p)) = s.dns.provider.as_mut() {
        p.type_ = "aws-route53".into();
    }
    assert_eq!(
        validate_seed(&s, None, &r).to_string(),
        "[spec.provider.type: Unsupported value: \"aws\": no ControllerRegistration serves ControlPlane type \"aws\"; registered: \"local\", \
         spec.backup.provider: Unsupported value: \"s3\": no ControllerRegistration serves BackupBucket or BackupEntry type \"s3\"; registered: \"local\", \
         spec.dns.provider.type: Unsupported value: \"aws-route53\": no ControllerRegistration serves DNSRecord type \"aws-route53\"; registered: \"local\"]"
    );
    // Without an ingress, the DNS provider makes no DNSRecords.
    let mut no_ingress = s.clone();
    no_ingress.ingress = None;
    assert!(!validate_seed(&no_ingress, None, &r).has("spec.dns.provider.type"));
    // An update that keeps the unregistered types is allowed; one that changes them is not.
    let mut updated = s.clone();
    updated.taints = vec![];
    updated.backup.as_mut().unwrap().region = Some("elsewhere".into());
    assert_eq!(validate_seed(&updated, Some(&s), &r).to_string(), "");
    let mut changed = s.clone();
    changed.provider.type_ = "gcp".into();
    let errs = validate_seed(&changed, Some(&s), &r);
    assert_eq!(errs.len(), 1, "{errs}");
    assert!(errs.has("spec.provider.type"), "{errs}");
}

#[test]
fn the_fixture_registrations_serve_the_fixture_shoot() {
    let registrations = crate::fixtures::controller_registrations();
    let r = Registered::new(&registrations);
    let mut shoot: Shoot = crate::fixtures::shoot();
    let profile = crate::fixtures::cloud_profile_spec();
    let ctx = crate::shoot::DefaultingContext { profile: Some(&profile), seed: None, now: crate::fixtures::now() };
    crate::shoot::default_shoot(&mut shoot, ctx);
    assert_eq!(validate_shoot(&shoot.spec, None, &r).to_string(), "");
}
