use super::*;
use std::collections::BTreeMap;

#[test]
fn limits_resolve_ints_and_percentages() {
    let pool = |s: Option<IntOrString>, u: Option<IntOrString>| WorkerPool {
        max_surge: s,
        max_unavailable: u,
        ..Default::default()
    };
    assert_eq!(rollout_limits(&pool(None, None), 4), (1, 0));
    assert_eq!(rollout_limits(&pool(Some(IntOrString::Int(0)), Some(IntOrString::Int(0))), 4), (1, 0));
    assert_eq!(
        rollout_limits(&pool(Some(IntOrString::String("25%".into())), Some(IntOrString::String("25%".into()))), 5),
        (2, 1)
    );
    assert_eq!(rollout_limits(&pool(Some(IntOrString::Int(-3)), Some(IntOrString::Int(2))), 5), (0, 2));
}

#[test]
fn class_hash_ignores_scaling_and_follows_the_machine_spec() {
    let base = WorkerPool {
        name: "p".into(),
        machine_type: "local".into(),
        user_data: "dXNlcg==".into(),
        minimum: 1,
        maximum: 2,
        ..Default::default()
    };
    let h = class_hash(&base, "img:1");
    assert_eq!(h.len(), HASH_LEN);
    assert_eq!(class_hash(&base, "img:1"), h);
    let scaled = WorkerPool { minimum: 5, maximum: 9, max_surge: Some(IntOrString::Int(3)), ..base.clone() };
    assert_eq!(class_hash(&scaled, "img:1"), h);
    assert_ne!(class_hash(&base, "img:2"), h);
    let relabelled = WorkerPool { labels: BTreeMap::from([("a".into(), "b".into())]), ..base.clone() };
    assert_eq!(class_hash(&relabelled, "img:1"), h, "labels reach the Nodes in place");
    let new_data = WorkerPool { user_data: "b3RoZXI=".into(), ..base };
    assert_ne!(class_hash(&new_data, "img:1"), h);
}

#[test]
fn with_a_node_agent_secret_name_the_user_data_alone_does_not_roll_the_pool() {
    let keyed = WorkerPool {
        name: "p".into(),
        user_data: "dXNlcg==".into(),
        node_agent_secret_name: Some("gardener-node-agent-p-0123456789abcdef".into()),
        ..Default::default()
    };
    let h = class_hash(&keyed, "img:1");
    let new_token = WorkerPool { user_data: "b3RoZXI=".into(), ..keyed.clone() };
    assert_eq!(class_hash(&new_token, "img:1"), h, "only the user data changed (a new bootstrap token)");
    let new_config =
        WorkerPool { node_agent_secret_name: Some("gardener-node-agent-p-fedcba9876543210".into()), ..keyed };
    assert_ne!(class_hash(&new_config, "img:1"), h, "the operating system config changed");
}

#[test]
fn image_resolution_order() {
    let pool = WorkerPool {
        machine_image: extension_sdk::api::extensions::worker::MachineImage {
            name: "local".into(),
            version: "1.0".into(),
            provider_config: None,
        },
        ..Default::default()
    };
    let some = |s: &str| PoolConfig { image: Some(s.into()), ..Default::default() };
    let mapping = WorkerConfig {
        machine_images: vec![
            MachineImageMapping { name: "local".into(), version: Some("2.0".into()), image: "two".into() },
            MachineImageMapping { name: "local".into(), version: None, image: "any".into() },
        ],
    };
    let none = PoolConfig::default();
    let empty = WorkerConfig::default();
    assert_eq!(resolve_image(&pool, &some("p"), &some("i"), &mapping, Some("d")).as_deref(), Some("p"));
    assert_eq!(resolve_image(&pool, &none, &some("i"), &mapping, Some("d")).as_deref(), Some("i"));
    assert_eq!(resolve_image(&pool, &none, &none, &mapping, Some("d")).as_deref(), Some("any"));
    assert_eq!(resolve_image(&pool, &none, &none, &empty, Some("d")).as_deref(), Some("d"));
    assert_eq!(resolve_image(&pool, &none, &none, &empty, None), None);
}

#[test]
fn the_cloud_profile_maps_machine_image_versions_to_images() {
    let config: CloudProfileConfig = serde_json::from_value(serde_json::json!({
        "apiVersion": "local.provider.extensions.gardener.cloud/v1alpha1",
        "kind": "CloudProfileConfig",
        "machineImages": [{"name": "local", "versions": [
            {"version": "1.0.0", "image": "machine:a"}, {"version": "1.1.0", "image": "machine:b"}]}]
    }))
    .unwrap();
    let mut pool = WorkerPool::default();
    pool.machine_image.name = "local".into();
    pool.machine_image.version = "1.1.0".into();
    let worker = WorkerConfig { machine_images: config.mappings().collect() };
    let none = PoolConfig::default();
    assert_eq!(resolve_image(&pool, &none, &none, &worker, Some("d")).as_deref(), Some("machine:b"));
    assert_eq!(config.check(&pool), Ok(()));
    pool.machine_image.version = "9.9.9".into();
    let err = config.check(&pool).unwrap_err();
    assert!(err.contains("9.9.9") && err.contains("1.0.0, 1.1.0"), "{err}");
    pool.machine_image.name = "other".into();
    assert_eq!(config.check(&pool), Ok(()), "an image the profile does not map falls back to the default");
}
