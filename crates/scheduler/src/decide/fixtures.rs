//! Small builders for the decision's tests (unit tests, the integration tests and the benchmark,
//! with the `testing` feature). The default seed is a ready `local` seed in `eu-west-1` with
//! networks 10.0/16 (nodes), 10.1/16 (pods), 10.2/16 (services) and no capacity limit; the
//! default shoot is a `local` shoot in `eu-west-1` with one worker pool, whose networks are
//! disjoint from it.

use api::common::{Condition, ConditionStatus};
use api::core::seed::{
    SeedBackup, SeedNetworks, SeedProvider, SeedSettingScheduling, SeedSettings, SeedTaint, ShootNetworks,
};
use api::core::shoot::provider::Machine;
use api::core::shoot::{Networking, Provider, Worker};
use api::core::{CloudProfile, Seed, SeedSpec, SeedStatus, Shoot, ShootSpec};
use api::helpers::constants::conditions::{BACKUP_BUCKETS_READY, GARDENLET_READY};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;

pub fn condition(type_: &str, status: ConditionStatus) -> Condition {
    Condition {
        type_: type_.into(),
        status,
        last_transition_time: Time(Timestamp::UNIX_EPOCH),
        last_update_time: Time(Timestamp::UNIX_EPOCH),
        reason: String::new(),
        message: String::new(),
        codes: Vec::new(),
    }
}

fn set_condition(seed: &mut Seed, type_: &str, status: ConditionStatus) {
    let conditions = &mut seed.status.get_or_insert_default().conditions;
    conditions.retain(|c| c.type_ != type_);
    conditions.push(condition(type_, status));
}

pub fn seed(name: &str) -> Seed {
    Seed {
        metadata: ObjectMeta { name: Some(name.into()), ..Default::default() },
        spec: SeedSpec {
            provider: SeedProvider { type_: "local".into(), region: "eu-west-1".into(), ..Default::default() },
            networks: SeedNetworks {
                nodes: Some("10.0.0.0/16".into()),
                pods: "10.1.0.0/16".into(),
                services: "10.2.0.0/16".into(),
                ..Default::default()
            },
            ..Default::default()
        },
        status: Some(SeedStatus {
            conditions: vec![condition(GARDENLET_READY, ConditionStatus::True)],
            ..Default::default()
        }),
    }
}

pub fn deleting(mut s: Seed) -> Seed {
    s.metadata.deletion_timestamp = Some(Time(Timestamp::UNIX_EPOCH));
    s
}

pub fn invisible(mut s: Seed) -> Seed {
    s.spec.settings =
        Some(SeedSettings { scheduling: Some(SeedSettingScheduling { visible: false }), ..Default::default() });
    s
}

pub fn taint(key: &str, value: Option<&str>) -> SeedTaint {
    SeedTaint { key: key.into(), value: value.map(Into::into) }
}

pub fn tainted(mut s: Seed, key: &str, value: Option<&str>) -> Seed {
    s.spec.taints.push(taint(key, value));
    s
}

pub fn ready(mut s: Seed, status: ConditionStatus) -> Seed {
    set_condition(&mut s, GARDENLET_READY, status);
    s
}

pub fn with_backup(mut s: Seed, bucket: Option<ConditionStatus>) -> Seed {
    s.spec.backup = Some(SeedBackup { provider: Some("local".into()), ..Default::default() });
    if let Some(status) = bucket {
        set_condition(&mut s, BACKUP_BUCKETS_READY, status);
    }
    s
}

pub fn labelled(mut s: Seed, labels: &[(&str, &str)]) -> Seed {
    let map = s.metadata.labels.get_or_insert_default();
    for (k, v) in labels {
        map.insert(k.to_string(), v.to_string());
    }
    s
}

pub fn shoot_defaults(mut s: Seed, pods: &str, services: &str) -> Seed {
    s.spec.networks.shoot_defaults = Some(ShootNetworks { pods: Some(pods.into()), services: Some(services.into()) });
    s
}

pub fn allocatable(mut s: Seed, shoots: &str) -> Seed {
    s.status.get_or_insert_default().allocatable.insert("shoots".into(), Quantity(shoots.into()));
    s
}

pub fn capacity_only(mut s: Seed, shoots: &str) -> Seed {
    s.status.get_or_insert_default().capacity.insert("shoots".into(), Quantity(shoots.into()));
    s
}

pub fn in_region(mut s: Seed, region: &str) -> Seed {
    s.spec.provider.region = region.into();
    s
}

pub fn of_type(mut s: Seed, provider_type: &str) -> Seed {
    s.spec.provider.type_ = provider_type.into();
    s
}

pub fn shoot(name: &str) -> Shoot {
    Shoot {
        metadata: ObjectMeta { name: Some(name.into()), namespace: Some("garden-dev".into()), ..Default::default() },
        spec: ShootSpec {
            cloud_profile_name: Some("local".into()),
            region: "eu-west-1".into(),
            provider: Provider {
                type_: "local".into(),
                workers: vec![Worker {
                    name: "pool".into(),
                    machine: Machine { type_: "local".into(), ..Default::default() },
                    minimum: 1,
                    maximum: 2,
                    ..Default::default()
                }],
                ..Default::default()
            },
            networking: Some(Networking {
                type_: Some("calico".into()),
                nodes: Some("10.250.0.0/16".into()),
                pods: Some("100.96.0.0/11".into()),
                services: Some("100.64.0.0/13".into()),
                ..Default::default()
            }),
            ..Default::default()
        },
        status: None,
    }
}

pub fn profile() -> CloudProfile {
    let mut p = CloudProfile::new("local", Default::default());
    p.spec.type_ = "local".into();
    p
}
