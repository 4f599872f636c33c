//! The garden control-plane chart on a real API server: it lints clean, installs with Helm
//! (CRDs included), and the RBAC it gives gardener-scheduler's ServiceAccount is what the
//! scheduler needs: the scheduler, running as that ServiceAccount (impersonated), takes its
//! leader Lease and places a shoot; with one rule taken away it is refused with `forbidden`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use api::core::Shoot;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::events::v1::Event as K8sEvent;
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::json;
use support::*;
use testenv::TestEnv;

const RELEASE_NS: &str = "garden";
const SA: &str = "gardener-scheduler";
const ROLE: &str = "gardener.cloud:system:scheduler";

/// A control plane where Helm installed the chart (and with it every garden CRD).
async fn garden_from_chart() -> (TestEnv, Client) {
    let env = TestEnv::start().await.unwrap_or_else(|e| panic!("starting the test control plane: {e}"));
    let admin = env.client().await.unwrap();
    let chart = testenv::helm::chart("gardener/controlplane");
    testenv::helm::lint(&chart).await.unwrap_or_else(|e| panic!("{e}"));
    testenv::helm::install(
        &env,
        "gardener-controlplane",
        &chart,
        RELEASE_NS,
        &json!({"scheduler": {"replicas": 1}}),
        false,
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let garden_crds: Vec<String> = api::crds::all()
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .filter(|n| !n.ends_with(".extensions.gardener.cloud"))
        .collect();
    testenv::wait_established(&admin, &garden_crds).await.unwrap_or_else(|e| panic!("{e}"));
    let ns = Namespace {
        metadata: kube::api::ObjectMeta { name: Some(NS.into()), ..Default::default() },
        ..Default::default()
    };
    Api::<Namespace>::all(admin.clone()).create(&PostParams::default(), &ns).await.unwrap();
    let mut profile = api::core::CloudProfile::new("local", Default::default());
    profile.spec.type_ = "local".into();
    Api::<api::core::CloudProfile>::all(admin.clone()).create(&PostParams::default(), &profile).await.unwrap();
    (env, admin)
}

/// The scheduler as its binary runs it (leader election in the release namespace), as `client`.
fn start_as(client: &Client) -> tokio::task::JoinHandle<()> {
    let mut config = runtime::RunnerConfig::new("gardener-scheduler", RELEASE_NS);
    config.heartbeat_interval = None;
    config = config.leader_election(runtime::LeaderElectionConfig::new(
        "gardener-scheduler-leader-election",
        RELEASE_NS,
        "rbac-test",
    ));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let listener = tokio::net::TcpListener::from_std(listener).unwrap();
    let mut runner = runtime::Runner::new(client.clone(), config).unwrap().with_listener(listener);
    scheduler::app::add_to(&mut runner, client.clone(), quick_config()).unwrap();
    tokio::spawn(async move { runner.run(std::future::pending()).await.unwrap() })
}

#[tokio::test]
async fn the_chart_rbac_is_what_the_scheduler_needs_and_no_rule_can_go() {
    let (env, admin) = garden_from_chart().await;
    create_seed(&admin, seed("local-1", "local"), true, None).await;
    let as_scheduler = env.client_as_service_account(RELEASE_NS, SA).await.unwrap();
    let running = start_as(&as_scheduler);

    // With the chart's rules: the Lease is taken, the shoot placed, its event recorded.
    create_shoot(&admin, &shoot("first", "local")).await;
    eventually("the shoot placed by the scheduler's ServiceAccount", || async {
        let s = get_shoot(&admin, "first").await;
        seed_of(&s).map(|_| ()).ok_or_else(|| format!("{:?}", last_operation(&s)))
    })
    .await;
    assert_eq!(seed_of(&get_shoot(&admin, "first").await), Some("local-1"));
    let lease =
        Api::<Lease>::namespaced(admin.clone(), RELEASE_NS).get("gardener-scheduler-leader-election").await.unwrap();
    assert_eq!(lease.spec.and_then(|s| s.holder_identity).as_deref(), Some("rbac-test"));
    eventually("the SchedulingSuccessful event", || async {
        let n = events(&admin, "first", scheduler::controller::reconcile::REASON_SCHEDULED).await.len();
        if n > 0 { Ok(()) } else { Err("no SchedulingSuccessful event".into()) }
    })
    .await;

    // Take away `patch` on shoots: placing is refused with `forbidden`, and the refusal is
    // reported on the shoot.
    let roles = Api::<ClusterRole>::all(admin.clone());
    let mut role = roles.get(ROLE).await.unwrap();
    let rules = role.rules.as_mut().unwrap();
    let shoots = rules.iter_mut().find(|r| r.resources.as_deref() == Some(&["shoots".to_string()][..])).unwrap();
    shoots.verbs.retain(|v| v != "patch");
    role.metadata.managed_fields = None;
    roles.patch(ROLE, &PatchParams::apply("rbac-test").force(), &Patch::Apply(&role)).await.unwrap();
    create_shoot(&admin, &shoot("second", "local")).await;
    let note = eventually("a Warning event saying the placement was forbidden", || async {
        let all = Api::<K8sEvent>::namespaced(admin.clone(), NS).list(&Default::default()).await.unwrap().items;
        all.into_iter()
            .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("second"))
            .filter_map(|e| e.note)
            .find(|n| n.contains("forbidden"))
            .ok_or_else(|| "no event mentions forbidden yet".to_string())
    })
    .await;
    assert!(note.contains("system:serviceaccount:garden:gardener-scheduler"), "{note}");
    assert_eq!(seed_of(&Api::<Shoot>::namespaced(admin.clone(), NS).get("second").await.unwrap()), None);
    running.abort();
}
