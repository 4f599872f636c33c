//! The scheduler against a real kube-apiserver: shoots land on the seeds they should (region,
//! taints, selectors, readiness, capacity with migrations counted twice, fewest shoots), refusals
//! are explained in the status and in Events, a burst of shoots never overbooks a seed, and
//! waiting shoots are placed as soon as a seed becomes ready or frees capacity.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use api::common::{LastOperationState, LastOperationType};
use api::core::Shoot;
use api::core::seed::TAINT_PROTECTED;
use futures::future::join_all;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use scheduler::config::BackoffConfig;
use scheduler::metrics::{RESULT_SCHEDULED, RESULT_UNSCHEDULABLE};
use serde_json::json;
use std::collections::BTreeMap;
use support::*;

#[tokio::test]
async fn shoots_land_where_they_should_and_refusals_are_explained() {
    let (env, client) = garden().await;
    // A shoot migrating from eu-0-source to eu-b holds a place on both. eu-0-source allows one
    // shoot, so it is full; without counting the migration it would win every tie by name.
    create_seed(&client, seed("eu-0-source", "eu-west-1"), true, Some(1)).await;
    create_seed(&client, seed("eu-a", "eu-west-1"), true, Some(10)).await;
    create_seed(&client, seed("eu-b", "eu-west-1"), true, Some(10)).await;
    create_seed(&client, seed("us-a", "us-east-1"), true, None).await;
    create_seed(
        &client,
        labelled(tainted(seed("eu-protected", "eu-west-1"), TAINT_PROTECTED), "role", "garden"),
        true,
        None,
    )
    .await;
    create_seed(&client, seed("eu-down", "eu-west-1"), false, None).await;
    let mut migrating = shoot("migrating", "eu-west-1");
    migrating.spec.seed_name = Some("eu-b".into());
    create_shoot(&client, &migrating).await;
    Api::<Shoot>::namespaced(client.clone(), NS)
        .patch_status(
            "migrating",
            &PatchParams::default(),
            &Patch::Merge(&json!({"status": {"seedName": "eu-0-source"}})),
        )
        .await
        .unwrap();

    let running = start_scheduler(&as_scheduler(&env).await, quick_config());
    let addr = running.addr;

    let mut garden_shoot = tolerating(shoot("garden-shoot", "eu-west-1"), TAINT_PROTECTED);
    garden_shoot.spec.seed_selector = Some(serde_json::from_value(json!({"matchLabels": {"role": "garden"}})).unwrap());
    let mut other_scheduler = shoot("other-scheduler", "eu-west-1");
    other_scheduler.spec.scheduler_name = Some("custom-scheduler".into());
    let mut no_profile = shoot("no-profile", "eu-west-1");
    no_profile.spec.cloud_profile_name = Some("missing".into());
    for s in [
        shoot("plain", "eu-west-1"),
        shoot("american", "us-east-1"),
        garden_shoot,
        shoot("lonely", "ap-south-1"),
        no_profile,
        other_scheduler,
    ] {
        create_shoot(&client, &s).await;
    }

    let expected = [("plain", "eu-a"), ("american", "us-a"), ("garden-shoot", "eu-protected")];
    let placed = eventually("the placeable shoots to get their seeds", || async {
        let shoots: BTreeMap<String, Option<String>> =
            list_shoots(&client).await.into_iter().map(|s| (s.name_any(), s.spec.seed_name)).collect();
        let done = expected.iter().all(|(shoot, _)| shoots.get(*shoot).is_some_and(Option::is_some));
        if done { Ok(shoots) } else { Err(format!("{shoots:?}")) }
    })
    .await;
    for (shoot, seed) in expected {
        assert_eq!(placed[shoot].as_deref(), Some(seed), "{shoot}");
    }

    // Refusals are in the status, where `kubectl describe` shows them, and in an Event.
    let refusals = [
        ("lonely", "0/6 seeds fit: 5 other region, 1 not ready"),
        ("no-profile", "CloudProfile \"missing\" does not exist"),
    ];
    for (name, text) in refusals {
        let op = eventually(&format!("the refusal of {name} in its status"), || async {
            let s = get_shoot(&client, name).await;
            last_operation(&s).cloned().ok_or_else(|| format!("{:?}", s.status))
        })
        .await;
        assert_eq!(
            (op.type_, op.state, op.description.as_str()),
            (LastOperationType::Create, LastOperationState::Pending, text)
        );
        assert!(seed_of(&get_shoot(&client, name).await).is_none());
        let event = eventually(&format!("a SchedulingFailed event for {name}"), || async {
            events(&client, name, "SchedulingFailed").await.pop().ok_or_else(|| "no event".to_string())
        })
        .await;
        assert_eq!(event.type_.as_deref(), Some("Warning"));
        assert_eq!(event.note.as_deref(), Some(text));
    }
    let success = eventually("a SchedulingSuccessful event for plain", || async {
        let events = events(&client, "plain", "SchedulingSuccessful").await;
        if events.is_empty() { Err("no event".to_string()) } else { Ok(events) }
    })
    .await;
    assert_eq!(success.len(), 1, "{success:?}");
    assert_eq!(success[0].type_.as_deref(), Some("Normal"));
    assert_eq!(success[0].note.as_deref(), Some("Scheduled to seed eu-a"));

    // The placement is written by the scheduler's own field manager.
    let plain = get_shoot(&client, "plain").await;
    let managers: Vec<_> = plain.managed_fields().iter().filter_map(|m| m.manager.as_deref()).collect();
    assert!(managers.contains(&"gardener-scheduler"), "{managers:?}");

    // A shoot meant for another scheduler is left alone.
    let other = get_shoot(&client, "other-scheduler").await;
    assert!(seed_of(&other).is_none() && last_operation(&other).is_none(), "{:?}", other.status);

    // Health, readiness and metrics.
    assert_eq!(http_get(addr, "/healthz").await, (200, "ok".to_string()));
    assert_eq!(http_get(addr, "/readyz").await, (200, "ok".to_string()));
    let (code, metrics) = http_get(addr, "/metrics").await;
    assert_eq!(code, 200);
    assert!(metrics.contains("scheduler_decisions_total{result=\"scheduled\"} 3"), "{metrics}");
    assert!(metrics.contains("scheduler_decision_duration_seconds_count"), "{metrics}");
    assert!(running.metrics.decisions_with(RESULT_UNSCHEDULABLE) >= 2);
}

#[tokio::test]
async fn a_burst_of_fifty_shoots_fills_forty_places_and_explains_the_other_ten() {
    let (env, client) = garden().await;
    let capacities = [("seed-a", 15u32), ("seed-b", 10), ("seed-c", 10), ("seed-d", 5)];
    for (name, capacity) in capacities {
        create_seed(&client, seed(name, "eu-west-1"), true, Some(capacity)).await;
    }
    let running = start_scheduler(&as_scheduler(&env).await, quick_config());
    eventually("the scheduler's caches to sync", || async {
        if running.readiness.is_ready() { Ok(()) } else { Err(format!("{:?}", running.readiness.pending())) }
    })
    .await;

    let shoots: Vec<Shoot> = (0..50).map(|i| shoot(&format!("burst-{i:02}"), "eu-west-1")).collect();
    join_all(shoots.iter().map(|s| create_shoot(&client, s))).await;

    let full =
        "0/4 seeds fit: 2 full (allocatable shoots 10), 1 full (allocatable shoots 15), 1 full (allocatable shoots 5)";
    let settled = |shoots: &[Shoot]| {
        let placed = shoots.iter().filter(|s| seed_of(s).is_some()).count();
        let refused = shoots
            .iter()
            .filter(|s| seed_of(s).is_none() && last_operation(s).is_some_and(|op| op.description == full))
            .count();
        (placed, refused)
    };
    let shoots = eventually("40 placements and 10 refusals", || async {
        let shoots = list_shoots(&client).await;
        match settled(&shoots) {
            (40, 10) => Ok(shoots),
            other => Err(format!("(placed, refused) = {other:?}")),
        }
    })
    .await;
    let mut per_seed: BTreeMap<&str, u32> = BTreeMap::new();
    for s in &shoots {
        if let Some(seed) = seed_of(s) {
            *per_seed.entry(seed).or_default() += 1;
        }
    }
    assert_eq!(per_seed, capacities.into_iter().collect::<BTreeMap<_, _>>());
    assert_eq!(running.metrics.decisions_with(RESULT_SCHEDULED), 40);

    // Make every waiting shoot be decided again (a seed change re-queues them): with the cache
    // caught up, they are refused again and nothing moves.
    let refused_before = running.metrics.decisions_with(RESULT_UNSCHEDULABLE);
    Api::<api::core::Seed>::all(client.clone())
        .patch("seed-a", &PatchParams::default(), &Patch::Merge(&json!({"metadata": {"labels": {"touched": "yes"}}})))
        .await
        .unwrap();
    eventually("the ten waiting shoots to be decided again", || async {
        let refused = running.metrics.decisions_with(RESULT_UNSCHEDULABLE);
        if refused >= refused_before + 10 {
            Ok(())
        } else {
            Err(format!("{refused} refusals, {refused_before} before"))
        }
    })
    .await;
    assert_eq!(settled(&list_shoots(&client).await), (40, 10));
    assert_eq!(running.metrics.decisions_with(RESULT_SCHEDULED), 40);
}

#[tokio::test]
async fn waiting_shoots_go_to_a_seed_that_becomes_ready_or_frees_capacity() {
    let (env, client) = garden().await;
    create_seed(&client, seed("late", "eu-west-1"), false, Some(3)).await;
    // Retries are so slow that only the re-queue on seed and capacity changes can place a shoot
    // within the test's time.
    let config = scheduler::Config {
        backoff: BackoffConfig { initial_seconds: 3600.0, max_seconds: 3600.0, jitter: 0.0 },
        ..quick_config()
    };
    let _running = start_scheduler(&as_scheduler(&env).await, config);
    let names = ["wait-1", "wait-2", "wait-3", "wait-4"];
    for name in names {
        create_shoot(&client, &shoot(name, "eu-west-1")).await;
    }
    for name in names {
        eventually(&format!("{name} to be refused while the seed is not ready"), || async {
            let s = get_shoot(&client, name).await;
            match last_operation(&s) {
                Some(op) if op.description == "0/1 seeds fit: 1 not ready" => Ok(()),
                other => Err(format!("{other:?}")),
            }
        })
        .await;
    }

    set_seed_ready(&client, "late", true).await;
    let placed = eventually("three shoots on the seed and one refused as full", || async {
        let shoots = list_shoots(&client).await;
        let placed: Vec<String> = shoots.iter().filter(|s| seed_of(s) == Some("late")).map(|s| s.name_any()).collect();
        let full = shoots.iter().any(|s| {
            last_operation(s).is_some_and(|op| op.description == "0/1 seeds fit: 1 full (allocatable shoots 3)")
        });
        if placed.len() == 3 && full { Ok(placed) } else { Err(format!("placed {placed:?}, one full: {full}")) }
    })
    .await;
    // A placed shoot's earlier refusal is replaced in its status (written right after the
    // binding, so it may lag the seedName the wait above saw).
    eventually("the placed shoot's refusal to be replaced", || async {
        let first = get_shoot(&client, &placed[0]).await;
        let description = last_operation(&first).map(|op| op.description.clone()).unwrap_or_default();
        if description.starts_with("Scheduled to seed late") { Ok(()) } else { Err(description) }
    })
    .await;

    // Deleting a placed shoot frees a place, and the waiting shoot takes it.
    let waiting = names.iter().find(|n| !placed.iter().any(|p| p == *n)).unwrap().to_string();
    Api::<Shoot>::namespaced(client.clone(), NS).delete(&placed[0], &DeleteParams::default()).await.unwrap();
    eventually(&format!("{waiting} to take the freed place"), || async {
        let s = get_shoot(&client, &waiting).await;
        if seed_of(&s) == Some("late") { Ok(()) } else { Err(format!("{:?}", last_operation(&s))) }
    })
    .await;
}
