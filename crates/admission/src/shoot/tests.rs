//! Table-driven tests of every Shoot rule: each case mutates the valid fixture and names the
//! exact error it must produce (or none).

use super::*;
use crate::fixtures;
use api::core::shoot::ShootPurpose;
use api::core::shoot::provider::{DataVolume, ShootMachineImage, Volume, WorkerKubernetes};
use api::core::shoot::settings::{Dns, Hibernation, HibernationSchedule, Maintenance, MaintenanceTimeWindow};
use api::core::{ShootStatus, Toleration};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

fn defaulted(mut s: Shoot) -> Shoot {
    let profile = fixtures::cloud_profile_spec();
    default_shoot(&mut s, DefaultingContext { profile: Some(&profile), seed: None, now: fixtures::now() });
    s
}

fn create_errors(s: &Shoot, user: &UserInfo) -> ErrorList {
    let profile = fixtures::cloud_profile_spec();
    let ids = Identities::default_seed_assigners();
    validate_create(s, ShootContext::with_profile(Some(&profile), fixtures::now(), user, &ids))
}

fn update_errors(new: &Shoot, old: &Shoot, user: &UserInfo) -> ErrorList {
    let profile = fixtures::cloud_profile_spec();
    let ids = Identities::default_seed_assigners();
    validate_update(new, old, ShootContext::with_profile(Some(&profile), fixtures::now(), user, &ids))
}

fn alice() -> UserInfo {
    UserInfo::new("alice", &["system:authenticated"])
}

type Mutation = fn(&mut Shoot);

#[test]
fn the_fixture_is_valid() {
    let errs = create_errors(&defaulted(fixtures::shoot()), &alice());
    assert!(errs.is_empty(), "{errs}");
}

#[test]
fn create_rules() {
    let cases: Vec<(&str, Mutation, &str)> = vec![
        ("bad name", |s| s.metadata.name = Some("Demo".into()), "metadata.name: Invalid value: \"Demo\": a DNS label"),
        (
            "double dash name",
            |s| s.metadata.name = Some("a--b".into()),
            "metadata.name: Invalid value: \"a--b\": shoot name",
        ),
        ("no profile name", |s| s.spec.cloud_profile_name = None, "spec.cloudProfileName: Required value"),
        (
            "unknown profile type",
            |s| s.spec.provider.type_ = "aws".into(),
            "spec.provider.type: Unsupported value: \"aws\": supported values: \"local\"",
        ),
        ("no provider type", |s| s.spec.provider.type_ = String::new(), "spec.provider.type: Required value"),
        ("no region", |s| s.spec.region = String::new(), "spec.region: Required value"),
        (
            "unknown region",
            |s| s.spec.region = "mars".into(),
            "spec.region: Unsupported value: \"mars\": supported values: \"local\"",
        ),
        ("no secret binding", |s| s.spec.secret_binding_name = None, "spec.secretBindingName: Required value"),
        (
            "two bindings",
            |s| s.spec.credentials_binding_name = Some("local".into()),
            "spec.credentialsBindingName: Forbidden: credentialsBindingName must not be set together with secretBindingName",
        ),
        (
            "unknown version",
            |s| s.spec.kubernetes.version = "1.18.0".into(),
            "spec.kubernetes.version: Unsupported value: \"1.18.0\": supported values: \"1.21.0\", \"1.20.2\"",
        ),
        (
            "expired version",
            |s| s.spec.kubernetes.version = "1.19.7".into(),
            "spec.kubernetes.version: Unsupported value: \"1.19.7\"",
        ),
        (
            "partial version without match",
            |s| s.spec.kubernetes.version = "1.17".into(),
            "spec.kubernetes.version: Invalid value: \"1.17\"",
        ),
        (
            "no network type",
            |s| s.spec.networking.as_mut().unwrap().type_ = None,
            "spec.networking.type: Required value",
        ),
        (
            "bad pods cidr",
            |s| s.spec.networking.as_mut().unwrap().pods = Some("100.96.0.1/11".into()),
            "spec.networking.pods: Invalid value: \"100.96.0.1/11\": must be a network address",
        ),
        (
            "garbage services cidr",
            |s| s.spec.networking.as_mut().unwrap().services = Some("nope".into()),
            "spec.networking.services: Invalid value: \"nope\": must be a valid CIDR",
        ),
        (
            "overlapping nodes",
            |s| s.spec.networking.as_mut().unwrap().nodes = Some("100.96.0.0/16".into()),
            "spec.networking.nodes: Invalid value: \"100.96.0.0/16\": must not overlap with spec.networking.pods (100.96.0.0/11)",
        ),
        (
            "worker name",
            |s| s.spec.provider.workers[0].name = "Pool".into(),
            "spec.provider.workers[0].name: Invalid value: \"Pool\"",
        ),
        (
            "worker name too long",
            |s| s.spec.provider.workers[0].name = "a-very-long-pool-name".into(),
            "spec.provider.workers[0].name: Invalid value: \"a-very-long-pool-name\": must be no more than 15 characters",
        ),
        (
            "duplicate worker",
            |s| {
                let w = s.spec.provider.workers[0].clone();
                s.spec.provider.workers.push(w)
            },
            "spec.provider.workers[1].name: Duplicate value: \"pool\"",
        ),
        (
            "min > max",
            |s| s.spec.provider.workers[0].minimum = 3,
            "spec.provider.workers[0].maximum: Forbidden: maximum value must not be less than minimum value",
        ),
        (
            "negative min",
            |s| s.spec.provider.workers[0].minimum = -1,
            "spec.provider.workers[0].minimum: Invalid value: \"-1\"",
        ),
        (
            "unknown machine type",
            |s| s.spec.provider.workers[0].machine.type_ = "huge".into(),
            "spec.provider.workers[0].machine.type: Unsupported value: \"huge\": supported values: \"local\", \"large\"",
        ),
        (
            "no machine type",
            |s| s.spec.provider.workers[0].machine.type_ = String::new(),
            "spec.provider.workers[0].machine.type: Required value",
        ),
        (
            "unknown zone",
            |s| s.spec.provider.workers[0].zones = vec!["9".into()],
            "spec.provider.workers[0].zones[0]: Unsupported value: \"9\"",
        ),
        (
            "duplicate zone",
            |s| {
                s.spec.provider.workers[0].zones = vec!["0".into(), "0".into()];
                s.spec.provider.workers[0].maximum = 2
            },
            "spec.provider.workers[0].zones[1]: Duplicate value: \"0\"",
        ),
        (
            "fewer max than zones",
            |s| {
                s.spec.provider.workers[0].zones = vec!["0".into(), "1".into(), "2".into()];
            },
            "spec.provider.workers[0].maximum: Forbidden: maximum value must not be less than number of zones",
        ),
        (
            "unknown image",
            |s| {
                s.spec.provider.workers[0].machine.image = Some(ShootMachineImage {
                    name: "ubuntu".into(),
                    version: Some("1.0.0".into()),
                    provider_config: None,
                })
            },
            "spec.provider.workers[0].machine.image.name: Unsupported value: \"ubuntu\": supported values: \"local\"",
        ),
        (
            "expired image",
            |s| {
                s.spec.provider.workers[0].machine.image = Some(ShootMachineImage {
                    name: "local".into(),
                    version: Some("0.9.0".into()),
                    provider_config: None,
                })
            },
            "spec.provider.workers[0].machine.image.version: Unsupported value: \"0.9.0\": supported values: \"1.0.0\"",
        ),
        (
            "unknown volume type",
            |s| {
                s.spec.provider.workers[0].volume =
                    Some(Volume { type_: Some("ssd".into()), size: "20Gi".into(), ..Default::default() })
            },
            "spec.provider.workers[0].volume.type: Unsupported value: \"ssd\"",
        ),
        (
            "empty volume size",
            |s| s.spec.provider.workers[0].volume = Some(Volume::default()),
            "spec.provider.workers[0].volume.size: Required value",
        ),
        (
            "negative volume size",
            |s| {
                s.spec.provider.workers[0].volume = Some(Volume { size: "-1Pi".into(), ..Default::default() });
            },
            "spec.provider.workers[0].volume.size: Invalid value: \"-1Pi\": must be a non-negative quantity",
        ),
        (
            "unparsable volume size",
            |s| {
                s.spec.provider.workers[0].volume = Some(Volume { size: "lots".into(), ..Default::default() });
            },
            "spec.provider.workers[0].volume.size: Invalid value: \"lots\": must be a quantity (for example 100Mi)",
        ),
        (
            "negative data volume size",
            |s| {
                s.spec.provider.workers[0].data_volumes = vec![
                    DataVolume { name: "a".into(), size: "1Gi".into(), ..Default::default() },
                    DataVolume { name: "b".into(), size: "-5Gi".into(), ..Default::default() },
                ];
            },
            "spec.provider.workers[0].dataVolumes[1].size: Invalid value: \"-5Gi\": must be a non-negative quantity",
        ),
        (
            "unparsable data volume size",
            |s| {
                s.spec.provider.workers[0].data_volumes =
                    vec![DataVolume { name: "a".into(), size: "1Gi!".into(), ..Default::default() }];
            },
            "spec.provider.workers[0].dataVolumes[0].size: Invalid value: \"1Gi!\": must be a quantity",
        ),
        (
            "pool newer than shoot",
            |s| {
                s.spec.provider.workers[0].kubernetes =
                    Some(WorkerKubernetes { version: Some("1.21.0".into()), kubelet: None })
            },
            "spec.provider.workers[0].kubernetes.version: Forbidden",
        ),
        (
            "zero surge and unavailable",
            |s| {
                s.spec.provider.workers[0].max_surge = Some(IntOrString::Int(0));
                s.spec.provider.workers[0].max_unavailable = Some(IntOrString::String("0%".into()))
            },
            "spec.provider.workers[0].maxUnavailable: Invalid value: \"0\": may not be 0",
        ),
        (
            "bad surge",
            |s| s.spec.provider.workers[0].max_surge = Some(IntOrString::String("lots".into())),
            "spec.provider.workers[0].maxSurge: Invalid value",
        ),
        (
            "drain timeout not a duration",
            |s| {
                s.spec.provider.workers[0].machine_controller_manager_settings =
                    Some(api::core::shoot::provider::MachineControllerManagerSettings {
                        machine_drain_timeout: Some("soon".into()),
                        ..Default::default()
                    })
            },
            "spec.provider.workers[0].machineControllerManager.machineDrainTimeout: Invalid value: \"soon\": not a duration",
        ),
        (
            "bad window",
            |s| {
                s.spec.maintenance = Some(Maintenance {
                    time_window: Some(MaintenanceTimeWindow { begin: "25".into(), end: "230000+0000".into() }),
                    ..Default::default()
                })
            },
            "spec.maintenance.timeWindow.begin: Invalid value: \"25\"",
        ),
        (
            "short window",
            |s| {
                s.spec.maintenance = Some(Maintenance {
                    time_window: Some(MaintenanceTimeWindow { begin: "220000+0000".into(), end: "221000+0000".into() }),
                    ..Default::default()
                })
            },
            "spec.maintenance.timeWindow: Invalid value: \"220000+0000-221000+0000\": the time window must be at least 30 minutes long",
        ),
        (
            "empty schedule",
            |s| {
                s.spec.hibernation =
                    Some(Hibernation { enabled: None, schedules: vec![HibernationSchedule::default()] })
            },
            "spec.hibernation.schedules[0]: Required value",
        ),
        (
            "bad cron",
            |s| {
                s.spec.hibernation = Some(Hibernation {
                    enabled: None,
                    schedules: vec![HibernationSchedule { start: Some("0 0 * *".into()), ..Default::default() }],
                })
            },
            "spec.hibernation.schedules[0].start: Invalid value: \"0 0 * *\"",
        ),
        ("infrastructure purpose", |s| s.spec.purpose = Some(ShootPurpose::Infrastructure), "spec.purpose: Forbidden"),
        (
            "bad domain",
            |s| s.spec.dns = Some(Dns { domain: Some("-x.example.com".into()), providers: vec![] }),
            "spec.dns.domain: Invalid value: \"-x.example.com\"",
        ),
        (
            "duplicate toleration",
            |s| {
                s.spec.tolerations =
                    vec![Toleration { key: "a".into(), value: None }, Toleration { key: "a".into(), value: None }]
            },
            "spec.tolerations[1].key: Duplicate value: \"a\"",
        ),
        (
            "seed by user",
            |s| s.spec.seed_name = Some("seed-a".into()),
            "spec.seedName: Forbidden: user \"alice\" may not set spec.seedName",
        ),
    ];
    for (name, mutate, want) in cases {
        let mut s = fixtures::shoot();
        mutate(&mut s);
        let s = defaulted(s);
        let errs = create_errors(&s, &alice());
        assert!(errs.iter().any(|e| e.to_string().starts_with(want)), "{name}: want {want:?}, got {errs}");
    }
}

#[test]
fn create_allows_what_it_should() {
    let cases: Vec<(&str, Mutation, UserInfo)> = vec![
        ("preview version", |s| s.spec.kubernetes.version = "1.21.0".into(), alice()),
        ("partial version defaulted", |s| s.spec.kubernetes.version = "1.20".into(), alice()),
        ("no version defaulted", |s| s.spec.kubernetes.version = String::new(), alice()),
        (
            "image name only",
            |s| {
                s.spec.provider.workers[0].machine.image =
                    Some(ShootMachineImage { name: "local".into(), version: None, provider_config: None })
            },
            alice(),
        ),
        (
            "workerless",
            |s| {
                s.spec.provider.workers.clear();
                s.spec.secret_binding_name = None;
                s.spec.networking = None
            },
            alice(),
        ),
        (
            "scheduler sets seed",
            |s| s.spec.seed_name = Some("seed-a".into()),
            UserInfo::new("system:serviceaccount:garden:gardener-scheduler", &[]),
        ),
        ("admin sets seed", |s| s.spec.seed_name = Some("seed-a".into()), UserInfo::new("admin", &["system:masters"])),
        (
            "window across midnight",
            |s| {
                s.spec.maintenance = Some(Maintenance {
                    time_window: Some(MaintenanceTimeWindow { begin: "233000+0100".into(), end: "010000+0100".into() }),
                    ..Default::default()
                })
            },
            alice(),
        ),
        (
            "cron with names",
            |s| {
                s.spec.hibernation = Some(Hibernation {
                    enabled: Some(true),
                    schedules: vec![HibernationSchedule {
                        start: Some("00 17 * * MON-FRI".into()),
                        end: Some("0 8 * * 1-5".into()),
                        location: Some("Europe/Berlin".into()),
                    }],
                })
            },
            alice(),
        ),
    ];
    for (name, mutate, user) in cases {
        let mut s = fixtures::shoot();
        mutate(&mut s);
        let errs = create_errors(&defaulted(s), &user);
        assert!(errs.is_empty(), "{name}: {errs}");
    }
}

#[test]
fn unknown_profile_is_not_found() {
    let ids = Identities::default();
    let shoot = defaulted(fixtures::shoot());
    let lookup = crate::review::StaticLookup::default();
    let missing = crate::review::profiles::resolve(&lookup, "garden-dev", &shoot.spec).unwrap_err();
    let user = alice();
    let ctx = ShootContext {
        profile_error: Some(&missing),
        ..ShootContext::with_profile(None, fixtures::now(), &user, &ids)
    };
    assert_eq!(validate_create(&shoot, ctx).to_string(), "spec.cloudProfileName: Not found: \"local\"");
}

#[test]
fn exposure_class_must_exist_on_create() {
    let ids = Identities::default_seed_assigners();
    let profile = fixtures::cloud_profile_spec();
    let mut shoot = defaulted(fixtures::shoot());
    shoot.spec.exposure_class_name = Some("internet".into());
    let user = alice();
    let ctx = ShootContext::with_profile(Some(&profile), fixtures::now(), &user, &ids);
    assert_eq!(
        validate_create(&shoot, ctx).to_string(),
        "spec.exposureClassName: Not found: \"internet\": no such ExposureClass"
    );
    let class = ExposureClass::new("internet", Default::default());
    assert!(validate_create(&shoot, ShootContext { exposure_class: Some(&class), ..ctx }).is_empty());
    // An update keeping the name does not look again (the class may have gone since).
    assert!(validate_update(&shoot, &shoot, ctx).is_empty());
}

#[test]
fn update_rules() {
    let scheduler = UserInfo::new("system:serviceaccount:garden:gardener-scheduler", &[]);
    let cases: Vec<(&str, Mutation, Mutation, UserInfo, Option<&str>)> = vec![
        ("unchanged", |_| {}, |_| {}, alice(), None),
        (
            "region",
            |_| {},
            |s| s.spec.region = "other".into(),
            alice(),
            Some("spec.region: Invalid value: \"other\": field is immutable"),
        ),
        (
            "provider type",
            |_| {},
            |s| s.spec.provider.type_ = "aws".into(),
            alice(),
            Some("spec.provider.type: Invalid value: \"aws\": field is immutable"),
        ),
        (
            "pods",
            |_| {},
            |s| s.spec.networking.as_mut().unwrap().pods = Some("10.96.0.0/11".into()),
            alice(),
            Some("spec.networking.pods: Invalid value: \"10.96.0.0/11\": field is immutable"),
        ),
        (
            "services",
            |_| {},
            |s| s.spec.networking.as_mut().unwrap().services = Some("10.64.0.0/13".into()),
            alice(),
            Some("spec.networking.services: Invalid value: \"10.64.0.0/13\": field is immutable"),
        ),
        (
            "nodes",
            |_| {},
            |s| s.spec.networking.as_mut().unwrap().nodes = Some("10.1.0.0/16".into()),
            alice(),
            Some("spec.networking.nodes: Invalid value: \"10.1.0.0/16\": field is immutable"),
        ),
        (
            "profile",
            |_| {},
            |s| s.spec.cloud_profile_name = Some("other".into()),
            alice(),
            Some(
                "spec.cloudProfileName: Invalid value: \"other\": must name the same CloudProfile as spec.cloudProfile.name (\"local\")",
            ),
        ),
        (
            "profile reference, both fields",
            |_| {},
            |s| {
                s.spec.cloud_profile_name = Some("other".into());
                s.spec.cloud_profile.as_mut().unwrap().name = "other".into();
            },
            alice(),
            Some(
                "spec.cloudProfileName: Forbidden: the profile may only change between a CloudProfile and the NamespacedCloudProfiles whose parent it is",
            ),
        ),
        (
            "secret binding",
            |_| {},
            |s| s.spec.secret_binding_name = Some("other".into()),
            alice(),
            Some("spec.secretBindingName: Invalid value: \"other\": field is immutable"),
        ),
        (
            "secret binding to credentials binding",
            |_| {},
            |s| {
                s.spec.secret_binding_name = None;
                s.spec.credentials_binding_name = Some("local".into());
            },
            alice(),
            None,
        ),
        (
            "secret binding removed",
            |_| {},
            |s| s.spec.secret_binding_name = None,
            alice(),
            Some("spec.secretBindingName: Invalid value: null: field is immutable"),
        ),
        (
            "credentials binding",
            |s| {
                s.spec.secret_binding_name = None;
                s.spec.credentials_binding_name = Some("local".into());
            },
            |s| {
                s.spec.secret_binding_name = None;
                s.spec.credentials_binding_name = Some("other".into());
            },
            alice(),
            Some("spec.credentialsBindingName: Invalid value: \"other\": field is immutable"),
        ),
        (
            "downgrade",
            |s| s.spec.kubernetes.version = "1.21.0".into(),
            |s| s.spec.kubernetes.version = "1.20.2".into(),
            alice(),
            Some("spec.kubernetes.version: Forbidden: kubernetes version downgrade"),
        ),
        (
            "expired kept",
            |s| s.spec.kubernetes.version = "1.19.7".into(),
            |s| s.spec.kubernetes.version = "1.19.7".into(),
            alice(),
            None,
        ),
        (
            "expired image kept",
            |s| {
                s.spec.provider.workers[0].machine.image = Some(ShootMachineImage {
                    name: "local".into(),
                    version: Some("0.9.0".into()),
                    provider_config: None,
                })
            },
            |_| {},
            alice(),
            None,
        ),
        (
            "to expired image",
            |_| {},
            |s| {
                s.spec.provider.workers[0].machine.image = Some(ShootMachineImage {
                    name: "local".into(),
                    version: Some("0.9.0".into()),
                    provider_config: None,
                })
            },
            alice(),
            Some("spec.provider.workers[0].machine.image.version: Unsupported value: \"0.9.0\""),
        ),
        (
            "minor upgrade",
            |s| s.spec.kubernetes.version = "1.19.7".into(),
            |s| s.spec.kubernetes.version = "1.20.2".into(),
            alice(),
            None,
        ),
        (
            "skip minor",
            |s| s.spec.kubernetes.version = "1.19.7".into(),
            |s| s.spec.kubernetes.version = "1.21.0".into(),
            alice(),
            Some(
                "spec.kubernetes.version: Forbidden: kubernetes version upgrade from 1.19.7 to 1.21.0 skips a minor version",
            ),
        ),
        (
            "user schedules",
            |_| {},
            |s| s.spec.seed_name = Some("seed-a".into()),
            alice(),
            Some("spec.seedName: Forbidden: user \"alice\" may not set spec.seedName"),
        ),
        ("scheduler schedules", |_| {}, |s| s.spec.seed_name = Some("seed-a".into()), scheduler.clone(), None),
        (
            "seed removed",
            |s| s.spec.seed_name = Some("seed-a".into()),
            |s| s.spec.seed_name = None,
            scheduler.clone(),
            Some("spec.seedName: Forbidden: spec.seedName cannot be removed"),
        ),
        (
            "user migrates",
            |s| s.spec.seed_name = Some("seed-a".into()),
            |s| s.spec.seed_name = Some("seed-b".into()),
            alice(),
            Some("spec.seedName: Forbidden: user \"alice\""),
        ),
        (
            "operator migrates",
            |s| {
                s.spec.seed_name = Some("seed-a".into());
                s.status = Some(ShootStatus { seed_name: Some("seed-a".into()), ..Default::default() })
            },
            |s| s.spec.seed_name = Some("seed-b".into()),
            UserInfo::new("ops", &["system:masters"]),
            None,
        ),
        (
            "migration in flight",
            |s| {
                s.spec.seed_name = Some("seed-b".into());
                s.status = Some(ShootStatus { seed_name: Some("seed-a".into()), ..Default::default() })
            },
            |s| s.spec.seed_name = Some("seed-c".into()),
            UserInfo::new("ops", &["system:masters"]),
            Some(
                "spec.seedName: Forbidden: cannot change the seed to \"seed-c\" while a migration to \"seed-b\" is still in progress",
            ),
        ),
    ];
    for (name, before, after, user, want) in cases {
        let mut old = fixtures::shoot();
        before(&mut old);
        let old = defaulted(old);
        let mut new = old.clone();
        new.status = None;
        after(&mut new);
        let new = defaulted(new);
        let errs = update_errors(&new, &old, &user);
        match want {
            None => assert!(errs.is_empty(), "{name}: {errs}"),
            Some(want) => {
                assert!(errs.iter().any(|e| e.to_string().starts_with(want)), "{name}: want {want:?}, got {errs}")
            }
        }
    }
}

#[test]
fn deletion_needs_confirmation() {
    let mut s = fixtures::shoot();
    assert_eq!(
        validate_delete(&s, None).to_string(),
        "metadata.annotations[confirmation.gardener.cloud/deletion]: Forbidden: shoot must be annotated with confirmation.gardener.cloud/deletion=true before it can be deleted"
    );
    s.metadata.annotations = Some([("confirmation.gardener.cloud/deletion".to_string(), "false".to_string())].into());
    assert!(!validate_delete(&s, None).is_empty());
    s.metadata.annotations = Some([("confirmation.gardener.cloud/deletion".to_string(), "true".to_string())].into());
    assert!(validate_delete(&s, None).is_empty());
    assert_eq!(
        validate_delete(&s, Some("garden/managed")).to_string(),
        "metadata.name: Forbidden: shoot is registered as a seed by ManagedSeed garden/managed; delete the ManagedSeed first"
    );
}

#[test]
fn window_times_parse() {
    let cases = [
        ("220000+0000", Some(79_200)),
        ("230000+0100", Some(79_200)),
        ("010000+0200", Some(82_800)),
        ("000000-0100", Some(3_600)),
        ("240000+0000", None),
        ("22000+00000", None),
        ("220000 0000", None),
        ("ééééé+0000", None),
        ("", None),
    ];
    for (input, want) in cases {
        assert_eq!(spec::parse_window_time(input), want, "{input}");
    }
}

#[test]
fn a_field_refused_by_a_specific_rule_is_not_refused_again_by_the_contract() {
    let mut s = crate::fixtures::shoot();
    s.spec.kubernetes.kube_proxy =
        Some(serde_json::from_value(serde_json::json!({"mode": "IPVS", "enabled": true})).unwrap());
    let user = UserInfo::default();
    let ids = Identities::default();
    let errs =
        validate_create(&s, ShootContext::with_profile(None, k8s_openapi::jiff::Timestamp::UNIX_EPOCH, &user, &ids));
    let ipvs: Vec<String> = errs
        .0
        .iter()
        .filter(|e| e.path.as_str() == "spec.kubernetes.kubeProxy.mode")
        .map(ToString::to_string)
        .collect();
    assert_eq!(ipvs.len(), 1, "{ipvs:?}");
    assert!(ipvs[0].contains("IPVS"), "{ipvs:?}");
}
