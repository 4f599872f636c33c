use super::*;
use std::collections::BTreeMap;

fn machines(hash: &str, indices: &[u32]) -> Vec<Existing> {
    indices.iter().map(|&i| Existing { name: machine_name("p", hash, i), hash: hash.into(), index: i }).collect()
}

/// Replays the steps and returns the machine count after every create and after every delete.
fn counts(existing: &[Existing], steps: &[Step]) -> Vec<usize> {
    let mut n = existing.len();
    let mut out = Vec::new();
    for s in steps {
        n += s.create.len();
        out.push(n);
        n -= s.delete.len();
        out.push(n);
    }
    out
}

#[test]
fn scale_up_from_nothing_is_one_step() {
    let steps = rollout(3, "p", "h1", &[], 1, 0);
    assert_eq!(steps, vec![Step { create: vec![0, 1, 2], delete: vec![] }]);
}

#[test]
fn scale_down_removes_the_highest_indices_and_zero_removes_all() {
    let steps = rollout(1, "p", "h1", &machines("h1", &[0, 1, 2]), 1, 0);
    assert_eq!(steps, vec![Step { create: vec![], delete: vec!["p-h1-1".into(), "p-h1-2".into()] }]);
    let steps = rollout(0, "p", "h1", &[machines("h1", &[0]), machines("h0", &[0, 1])].concat(), 1, 0);
    assert_eq!(steps.len(), 1);
    assert_eq!(steps[0].delete.len(), 3);
}

#[test]
fn nothing_to_do_when_converged() {
    assert!(rollout(2, "p", "h1", &machines("h1", &[0, 1]), 1, 0).is_empty());
    assert!(rollout(0, "p", "h1", &[], 1, 0).is_empty());
}

#[test]
fn rolling_replacement_creates_before_it_deletes_within_the_limits() {
    let old = machines("h0", &[0, 1, 2]);
    for (surge, unavailable) in [(1, 0), (2, 0), (0, 1), (1, 1), (3, 0)] {
        let steps = rollout(3, "p", "h1", &old, surge, unavailable);
        let c = counts(&old, &steps);
        assert!(c.iter().all(|&n| n <= 3 + surge as usize), "surge {surge}: {c:?}");
        assert!(c.iter().all(|&n| n + unavailable as usize >= 3), "unavailable {unavailable}: {c:?}");
        // The end state: exactly the new class.
        let mut m = old.clone();
        for s in &steps {
            m.extend(machines("h1", &s.create));
            m.retain(|x| !s.delete.contains(&x.name));
        }
        let mut names: Vec<_> = m.iter().map(|x| x.name.clone()).collect();
        names.sort();
        assert_eq!(names, vec!["p-h1-0", "p-h1-1", "p-h1-2"], "surge {surge} unavailable {unavailable}");
    }
    let steps = rollout(3, "p", "h1", &old, 1, 0);
    assert_eq!(steps[0], Step { create: vec![0], delete: vec!["p-h0-2".into()] });
    assert_eq!(steps.len(), 3);
}

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
    assert_ne!(class_hash(&relabelled, "img:1"), h);
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
