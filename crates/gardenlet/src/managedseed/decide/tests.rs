#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use super::*;
use api::common::{Condition, LastOperation};
use api::core::{SeedStatus, ShootStatus};
use api::seedmanagement::{Gardenlet, ManagedSeedSpec, ShootReference};
use k8s_openapi::jiff::Timestamp;
use serde_json::json;

fn at(s: i64) -> Time {
    Time(Timestamp::from_second(s).unwrap())
}

fn parent() -> GardenletConfig {
    serde_yaml::from_str(
        "seed:\n  name: local\n  capacityShoots: 40\n  spec:\n    provider: {type: local, region: local}\n    networks: {pods: 10.1.0.0/16, services: 10.2.0.0/16}\ncontrolPlaneRequestsPercent: 20\nmanagedSeeds:\n  gardenClusterAddress: https://10.250.0.1:6443\n",
    )
    .unwrap()
}

fn managed_seed(config: serde_json::Value) -> ManagedSeed {
    let mut ms = ManagedSeed::new(
        "ms1",
        ManagedSeedSpec {
            shoot: Some(ShootReference { name: "s1".into() }),
            seed_template: None,
            gardenlet: Some(Gardenlet { config: Some(api::opaque::Opaque(config)), ..Default::default() }),
        },
    );
    ms.metadata.namespace = Some("garden".into());
    ms
}

fn seed_config() -> serde_json::Value {
    json!({
        "apiVersion": "gardenlet.config.gardener.cloud/v1alpha1", "kind": "GardenletConfiguration",
        "seedConfig": {"metadata": {"labels": {"tier": "managed"}},
                       "spec": {"provider": {"type": "local", "region": "local"},
                                "networks": {"pods": "10.3.0.0/16", "services": "10.4.0.0/16"}}},
    })
}

fn shoot(op: Option<(LastOperationType, LastOperationState)>) -> Shoot {
    let mut s = Shoot::new("s1", Default::default());
    s.metadata.namespace = Some("garden".into());
    s.metadata.generation = Some(3);
    s.spec.seed_name = Some("local".into());
    s.status = Some(ShootStatus {
        observed_generation: Some(3),
        seed_name: Some("local".into()),
        last_operation: op.map(|(type_, state)| LastOperation {
            description: "d".into(),
            last_update_time: at(1),
            progress: 100,
            state,
            type_,
        }),
        ..Default::default()
    });
    s
}

#[test]
fn the_config_is_the_parents_with_the_seed_of_the_managed_seed() {
    let config = gardenlet_config(&parent(), &managed_seed(seed_config())).unwrap();
    assert_eq!(config.seed.name, "ms1", "the Seed is named like the ManagedSeed");
    assert_eq!(config.seed.labels["tier"], "managed");
    assert_eq!(config.seed.spec.networks.pods, "10.3.0.0/16");
    assert_eq!(config.seed.capacity_shoots, 40, "merged with the parent");
    assert_eq!(config.control_plane_requests_percent, 20, "merged with the parent");
    assert_eq!(config.garden_kubeconfig, None, "the garden identity is bootstrapped by CSR");
    let connection = config.garden_client_connection.as_ref().unwrap();
    assert_eq!(connection.bootstrap_kubeconfig, std::path::Path::new(GARDEN_KUBECONFIG_PATH));
    assert_eq!(
        connection.kubeconfig_secret,
        crate::config::SecretRef { namespace: "garden".into(), name: "gardenlet-kubeconfig".into() }
    );
    assert_eq!(
        config.seed_kubeconfig.as_deref(),
        Some(std::path::Path::new(SEED_KUBECONFIG_PATH)),
        "the seed is the shoot gardenlet runs in"
    );
    assert_eq!(config.managed_seeds, Default::default(), "the parent's garden address is not inherited");
}

#[test]
fn own_keys_override_and_merge_can_be_switched_off() {
    let mut c = seed_config();
    c["controlPlaneRequestsPercent"] = json!(50);
    c["controllers"] = json!({"shootConcurrentSyncs": 2});
    let config = gardenlet_config(&parent(), &managed_seed(c.clone())).unwrap();
    assert_eq!(config.control_plane_requests_percent, 50);
    assert_eq!(config.controllers.shoot_concurrent_syncs, 2);
    assert_eq!(config.controllers.seed_heartbeat_seconds, 30, "the rest of controllers stays");
    let mut ms = managed_seed(seed_config());
    ms.spec.gardenlet.as_mut().unwrap().merge_with_parent = Some(false);
    let config = gardenlet_config(&parent(), &ms).unwrap();
    assert_eq!(config.control_plane_requests_percent, 100, "the default, not the parent's 20");
    assert_eq!(config.seed.capacity_shoots, 250);
}

#[test]
fn bad_configs_name_the_managed_seed_and_field() {
    let cases = [
        (json!({}), "spec.gardenlet.config.seedConfig.spec", "is required"),
        (
            json!({"seedConfig": {"spec": {"provider": 1}}}),
            "spec.gardenlet.config.seedConfig.spec",
            "is not a Seed spec",
        ),
        (json!(["x"]), "spec.gardenlet.config", "must be an object"),
        (
            {
                let mut c = seed_config();
                c["gardenKubeconfig"] = json!("/x");
                c
            },
            "spec.gardenlet.config.gardenKubeconfig",
            "must not be given",
        ),
        (
            {
                let mut c = seed_config();
                c["gardenClientConnection"] = json!({"bootstrapKubeconfig": "/x"});
                c
            },
            "spec.gardenlet.config.gardenClientConnection",
            "must not be given",
        ),
        (
            {
                let mut c = seed_config();
                c["controlPlaneRequestsPercent"] = json!(0);
                c
            },
            "spec.gardenlet.config.controlPlaneRequestsPercent",
            "between 1 and 100",
        ),
        (
            {
                let mut c = seed_config();
                c["typo"] = json!(1);
                c
            },
            "spec.gardenlet.config",
            "typo",
        ),
    ];
    for (config, field, problem) in cases {
        let err = gardenlet_config(&parent(), &managed_seed(config)).unwrap_err();
        assert_eq!(err.managed_seed, "ms1");
        assert_eq!(err.field, field, "{err}");
        assert!(err.problem.contains(problem), "{err}");
    }
    let mut ms = managed_seed(seed_config());
    ms.spec.gardenlet = None;
    assert_eq!(gardenlet_config(&parent(), &ms).unwrap_err().field, "spec.gardenlet");
}

#[test]
fn a_shoot_hosts_a_seed_once_reconciled() {
    use LastOperationState::*;
    use LastOperationType::*;
    assert!(shoot_reconciled(&shoot(Some((Create, Succeeded)))).is_ok());
    assert!(shoot_reconciled(&shoot(Some((Reconcile, Succeeded)))).is_ok());
    assert!(shoot_reconciled(&shoot(Some((Restore, Succeeded)))).is_ok());
    assert!(shoot_reconciled(&shoot(None)).unwrap_err().contains("not been reconciled"));
    assert!(shoot_reconciled(&shoot(Some((Create, Processing)))).unwrap_err().contains("Create Processing"));
    assert!(shoot_reconciled(&shoot(Some((Delete, Succeeded)))).is_err());
    assert!(shoot_reconciled(&shoot(Some((Migrate, Succeeded)))).is_err());
    let mut newer = shoot(Some((Reconcile, Succeeded)));
    newer.metadata.generation = Some(4);
    assert!(shoot_reconciled(&newer).unwrap_err().contains("latest generation"));
    let mut asleep = shoot(Some((Reconcile, Succeeded)));
    asleep.status.as_mut().unwrap().hibernated = true;
    assert!(shoot_reconciled(&asleep).unwrap_err().contains("hibernated"));
}

#[test]
fn hosting_seed_prefers_the_status() {
    let mut s = shoot(None);
    assert_eq!(hosting_seed(&s), Some("local"));
    s.spec.seed_name = Some("other".into());
    assert_eq!(hosting_seed(&s), Some("local"), "a migration is the source's until it hands over");
    s.status = None;
    assert_eq!(hosting_seed(&s), Some("other"));
}

#[test]
fn registered_means_gardenlet_ready() {
    assert!(seed_registered("ms1", None).unwrap_err().contains("waiting for gardenlet to register Seed ms1"));
    let mut seed = Seed::new("ms1", Default::default());
    assert!(seed_registered("ms1", Some(&seed)).is_err());
    let ready = |status| Condition {
        type_: GARDENLET_READY.into(),
        status,
        last_transition_time: at(1),
        last_update_time: at(1),
        reason: "r".into(),
        message: "m".into(),
        codes: vec![],
    };
    seed.status = Some(SeedStatus { conditions: vec![ready(ConditionStatus::Unknown)], ..Default::default() });
    assert!(seed_registered("ms1", Some(&seed)).unwrap_err().contains("Unknown"));
    seed.status = Some(SeedStatus { conditions: vec![ready(ConditionStatus::True)], ..Default::default() });
    assert!(seed_registered("ms1", Some(&seed)).is_ok());
}

#[test]
fn users_are_shoots_scheduled_to_or_running_on_the_seed() {
    let mut a = shoot(None);
    a.metadata.name = Some("a".into());
    a.spec.seed_name = Some("ms1".into());
    let mut b = shoot(None);
    b.metadata.name = Some("b".into());
    b.status.as_mut().unwrap().seed_name = Some("ms1".into());
    let c = shoot(None);
    assert_eq!(seed_users("ms1", &[b, c, a]), vec!["garden/a", "garden/b"]);
}

#[test]
fn status_is_written_only_on_change() {
    let observed = Observed { shoot: Ok(()), seed: Some(Err(("SeedNotReady", "waiting".into()))) };
    let first = status(None, Some(2), &observed, &at(1)).unwrap();
    assert_eq!(first.observed_generation, 2);
    assert_eq!(first.conditions.len(), 2);
    assert_eq!(status(Some(&first), Some(2), &observed, &at(9)), None);
    let done = Observed { shoot: Ok(()), seed: Some(Ok(())) };
    let next = status(Some(&first), Some(2), &done, &at(9)).unwrap();
    let registered = next.conditions.iter().find(|c| c.type_ == SEED_REGISTERED).unwrap();
    assert_eq!(registered.status, ConditionStatus::True);
    assert_eq!(registered.last_transition_time, at(9));
    let waiting = Observed { shoot: Err("busy".into()), seed: None };
    let kept = status(Some(&next), Some(2), &waiting, &at(10)).unwrap();
    let registered = kept.conditions.iter().find(|c| c.type_ == SEED_REGISTERED).unwrap();
    assert_eq!(registered.status, ConditionStatus::True, "left as it is while the shoot is busy");
}

#[test]
fn a_parent_with_its_own_garden_kubeconfig_still_gives_the_child_the_bootstrap() {
    let mut parent = parent();
    parent.garden_kubeconfig = Some("/etc/parent/garden".into());
    let config = gardenlet_config(&parent, &managed_seed(seed_config())).unwrap();
    assert_eq!(config.garden_kubeconfig, None);
    assert!(config.garden_client_connection.is_some());
}
