//! The Bastion controller against a real kube-apiserver, on a manual clock: a new Bastion gets
//! its heartbeat and expiration; a keep-alive moves the expiration and is removed; a silent
//! Bastion expires; none outlives its maximum lifetime; and Bastions go with their Shoot.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use api::common::LocalObjectReference;
use api::core::Shoot;
use api::operations::{Bastion, BastionIngressPolicy, BastionSpec};
use controller_manager::config::BastionConfig;
use k8s_openapi::api::networking::v1::IPBlock;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;
use support::*;

const NS: &str = "garden-dev";

fn bastion(name: &str, shoot: &str) -> Bastion {
    let mut b = Bastion::new(
        name,
        BastionSpec {
            shoot_ref: LocalObjectReference { name: shoot.into() },
            seed_name: Some("a".into()),
            ssh_public_key: "c3NoLWVkMjU1MTkgQUFBQUMzTnphQzFsWkRJMU5URTVBQUFBSU12UmpSMXpQWjBjTFVTMXBHRTRtRzRFL1pmWTRVcTBiazhyT2wzVEl3Q3ogdXNlckBob3N0".into(),
            ingress: vec![BastionIngressPolicy { ip_block: IPBlock { cidr: "1.2.3.4/32".into(), except: None } }],
            ..Default::default()
        },
    );
    b.metadata.namespace = Some(NS.into());
    b
}

async fn create(api: &Api<Bastion>, b: &Bastion) -> Timestamp {
    api.create(&PostParams::default(), b).await.unwrap().metadata.creation_timestamp.unwrap().0
}

fn at(t: Timestamp, secs: i64) -> Timestamp {
    t.checked_add(SignedDuration::from_secs(secs)).unwrap()
}

async fn times(api: &Api<Bastion>, name: &str) -> Result<(Timestamp, Timestamp), String> {
    let b = api.get_opt(name).await.map_err(|e| e.to_string())?.ok_or("gone")?;
    let s = b.status.ok_or("no status")?;
    match (s.last_heartbeat_timestamp, s.expiration_timestamp) {
        (Some(h), Some(e)) => Ok((h.0, e.0)),
        other => Err(format!("{other:?}")),
    }
}

async fn gone(api: &Api<Bastion>, name: &str) -> Result<(), String> {
    match api.get_opt(name).await.map_err(|e| e.to_string())? {
        None => Ok(()),
        Some(b) => Err(format!("still there: {:?}", b.status)),
    }
}

async fn keepalive(api: &Api<Bastion>, name: &str) {
    let patch = json!({"metadata": {"annotations": {"gardener.cloud/operation": "keepalive"}}});
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
}

#[tokio::test]
async fn bastions_expire_without_keepalive_never_outlive_their_lifetime_and_go_with_their_shoot() {
    let (env, client) = garden().await;
    namespace(&client, NS).await;
    let mut app = shoot("app", NS);
    app.spec.seed_name = Some("a".into());
    create_shoot(&client, &app).await;
    let mut config = controller_manager::Config::default();
    config.controllers.bastion =
        BastionConfig { max_lifetime_seconds: 1000, heartbeat_timeout_seconds: 100, ..Default::default() };
    let running = start(&env, config).await;
    let bastions: Api<Bastion> = Api::namespaced(client.clone(), NS);

    // A new bastion: heartbeat at its creation, expiring one timeout later.
    let created = create(&bastions, &bastion("keep", "app")).await;
    let (heartbeat, expiration) = eventually("the first heartbeat", || times(&bastions, "keep")).await;
    assert_eq!((heartbeat, expiration), (created, at(created, 100)));

    // A keep-alive at +90 s moves the expiration to +190 s and is removed.
    running.clock.set(at(created, 90));
    keepalive(&bastions, "keep").await;
    eventually("the keep-alive to be recorded and removed", || async {
        let (h, e) = times(&bastions, "keep").await?;
        let b = bastions.get("keep").await.map_err(|e| e.to_string())?;
        let annotated = b.annotations().contains_key("gardener.cloud/operation");
        if h == at(created, 90) && e == at(created, 190) && !annotated {
            Ok(())
        } else {
            Err(format!("{h} {e} {annotated}"))
        }
    })
    .await;

    // Past the first expiration it lives on; past the second it goes.
    let seen = running.metrics.reconciliations("bastion");
    running.clock.set(at(created, 150));
    eventually("a look after the clock moved", || async {
        let n = running.metrics.reconciliations("bastion");
        if n > seen { Ok(()) } else { Err(format!("{n}")) }
    })
    .await;
    assert!(bastions.get_opt("keep").await.unwrap().is_some(), "kept alive");
    running.clock.set(at(created, 191));
    eventually("the silent bastion to be deleted", || gone(&bastions, "keep")).await;
    let notes = event_notes(&client, NS, "keep", "Expired").await;
    assert!(notes.iter().any(|n| n.contains("expired")), "{notes:?}");

    // However often it is kept alive, a bastion goes at its maximum lifetime.
    running.clock.set(Timestamp::now());
    let created = create(&bastions, &bastion("old", "app")).await;
    eventually("the first heartbeat", || times(&bastions, "old")).await;
    for step in [90, 180, 270] {
        running.clock.set(at(created, step));
        keepalive(&bastions, "old").await;
        eventually("the keep-alive to be recorded and removed", || async {
            let (h, _) = times(&bastions, "old").await?;
            let b = bastions.get("old").await.map_err(|e| e.to_string())?;
            let annotated = b.annotations().contains_key("gardener.cloud/operation");
            if h == at(created, step) && !annotated { Ok(()) } else { Err(format!("{h} {annotated}")) }
        })
        .await;
    }
    running.clock.set(at(created, 1000));
    eventually("the old bastion to be deleted", || gone(&bastions, "old")).await;
    assert!(!event_notes(&client, NS, "old", "MaxLifetimeReached").await.is_empty());

    // Bastions go with their shoot, and a bastion of a missing shoot goes at once.
    running.clock.set(Timestamp::now());
    create(&bastions, &bastion("orphan", "missing")).await;
    eventually("the orphan to be deleted", || gone(&bastions, "orphan")).await;
    create(&bastions, &bastion("follower", "app")).await;
    eventually("the first heartbeat", || times(&bastions, "follower")).await;
    Api::<Shoot>::namespaced(client.clone(), NS).delete("app", &DeleteParams::default()).await.unwrap();
    eventually("the follower to go with its shoot", || gone(&bastions, "follower")).await;
    assert!(!event_notes(&client, NS, "follower", "ShootGone").await.is_empty());
    assert_eq!(running.metrics.all_errors("bastion"), 0, "{}", running.metrics.render());
}
