//! Worker on a real kube-apiserver, calling the actuator directly: hibernation scales to zero
//! and back, a spec change rolls the machines, and a migrate/restore round-trip adopts the
//! existing machines (same Pod UIDs) instead of recreating them.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use extension_sdk::api::extensions::Worker;
use extension_sdk::api::helpers::constants::LABEL_TECHNICAL_ID;
use extension_sdk::k8s_openapi::api::core::v1::{Pod, Secret};
use extension_sdk::kube::api::ListParams;
use extension_sdk::kube::{Api, Client, ResourceExt};
use extension_sdk::testing::TestCluster;
use extension_sdk::{Actuator, Outcome};
use provider_local::LocalWorker;
use provider_local::infrastructure::machine_namespace;
use provider_local::worker::{LABEL_POOL, WorkerState};
use std::collections::BTreeMap;
use support::*;

/// Machine Pods by name → (UID, image).
async fn machines(client: &Client) -> BTreeMap<String, (String, String)> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), &machine_namespace(NS));
    let list = pods.list(&ListParams::default().labels(&format!("{LABEL_TECHNICAL_ID}={NS}"))).await.unwrap();
    list.items
        .iter()
        .map(|p| {
            let image = p.spec.as_ref().and_then(|s| s.containers[0].image.clone()).unwrap_or_default();
            (p.name_any(), (p.uid().unwrap_or_default(), image))
        })
        .collect()
}

fn state_of(outcome: &Outcome<Worker>) -> WorkerState {
    serde_json::from_value(outcome.state.clone().expect("the outcome carries a state")).unwrap()
}

#[tokio::test]
async fn worker_scales_to_zero_on_hibernation_and_back() {
    bounded(async {
        let tc = TestCluster::start().await.unwrap();
        let actuator = LocalWorker::new(as_provider_local(&tc).await.unwrap(), None);
        let w = worker(vec![pool("a", 2, "machine:1"), pool("b", 1, "machine:1")]);

        let awake = actuator.reconcile(&w, &cluster(false)).await.unwrap();
        let running = machines(&tc.client).await;
        assert_eq!(running.len(), 3, "{running:?}");
        assert_eq!(state_of(&awake).machines.len(), 3);
        assert!(running.values().all(|(_, image)| image == "machine:1"));

        let asleep = actuator.reconcile(&w, &cluster(true)).await.unwrap();
        assert!(machines(&tc.client).await.is_empty(), "machines left while hibernated");
        assert!(state_of(&asleep).machines.is_empty());
        assert_eq!(asleep.provider_status.as_ref().unwrap()["hibernated"], true);

        actuator.reconcile(&w, &cluster(false)).await.unwrap();
        let woken = machines(&tc.client).await;
        assert_eq!(woken.keys().collect::<Vec<_>>(), running.keys().collect::<Vec<_>>(), "same names after waking up");

        actuator.delete(&w, &cluster(false)).await.unwrap();
        assert!(machines(&tc.client).await.is_empty(), "machines left after delete");
        let secrets: Api<Secret> = Api::namespaced(tc.client.clone(), &machine_namespace(NS));
        let classes = secrets.list(&ListParams::default().labels(&format!("{LABEL_TECHNICAL_ID}={NS}"))).await.unwrap();
        assert!(classes.items.is_empty(), "machine classes left after delete");
    })
    .await;
}

#[tokio::test]
async fn a_changed_machine_spec_replaces_the_machines() {
    bounded(async {
        let tc = TestCluster::start().await.unwrap();
        let actuator = LocalWorker::new(as_provider_local(&tc).await.unwrap(), None);
        actuator.reconcile(&worker(vec![pool("a", 3, "machine:1")]), &cluster(false)).await.unwrap();
        let before = machines(&tc.client).await;
        assert_eq!(before.len(), 3);

        // Scaling bounds alone do not replace machines.
        let mut scaled = pool("a", 3, "machine:1");
        scaled.maximum = 10;
        actuator.reconcile(&worker(vec![scaled]), &cluster(false)).await.unwrap();
        assert_eq!(machines(&tc.client).await, before);

        let outcome = actuator.reconcile(&worker(vec![pool("a", 3, "machine:2")]), &cluster(false)).await.unwrap();
        let after = machines(&tc.client).await;
        assert_eq!(after.len(), 3, "{after:?}");
        assert!(after.values().all(|(_, image)| image == "machine:2"), "{after:?}");
        assert!(after.keys().all(|n| !before.contains_key(n)), "old machines survived: {after:?}");
        assert_eq!(
            state_of(&outcome).machines.iter().map(|m| m.name.clone()).collect::<Vec<_>>(),
            after.keys().cloned().collect::<Vec<_>>()
        );

        // A pool that leaves the spec takes its machines with it.
        actuator.reconcile(&worker(vec![pool("b", 1, "machine:2")]), &cluster(false)).await.unwrap();
        let pods: Api<Pod> = Api::namespaced(tc.client.clone(), &machine_namespace(NS));
        let pools: Vec<String> = pods
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .iter()
            .map(|p| p.labels().get(LABEL_POOL).cloned().unwrap_or_default())
            .collect();
        assert_eq!(pools, vec!["b".to_string()]);
    })
    .await;
}

#[tokio::test]
async fn migrate_and_restore_adopt_the_machines_without_recreating_them() {
    bounded(async {
        let tc = TestCluster::start().await.unwrap();
        let sa = as_provider_local(&tc).await.unwrap();
        let source = LocalWorker::new(sa.clone(), None);
        let w = worker(vec![pool("a", 2, "machine:1")]);
        source.reconcile(&w, &cluster(false)).await.unwrap();
        let before = machines(&tc.client).await;
        assert_eq!(before.len(), 2);

        let migrated = source.migrate(&w, &cluster(false)).await.unwrap();
        assert_eq!(machines(&tc.client).await, before, "migrate touched the machines");
        let state = state_of(&migrated);
        let recorded: BTreeMap<String, String> =
            state.machines.iter().map(|m| (m.name.clone(), m.uid.clone())).collect();
        let expected: BTreeMap<String, String> = before.iter().map(|(n, (uid, _))| (n.clone(), uid.clone())).collect();
        assert_eq!(recorded, expected, "the state lists every machine with its UID");

        // The destination: a fresh actuator and the object as gardenlet restores it.
        let destination = LocalWorker::new(sa, None);
        let mut restored = w.clone();
        restored.status.get_or_insert_with(Default::default).default.state = migrated.state.clone().map(Into::into);
        let outcome = destination.restore(&restored, &cluster(false)).await.unwrap();
        assert_eq!(machines(&tc.client).await, before, "restore recreated machines (UIDs changed)");
        assert_eq!(state_of(&outcome), state);
    })
    .await;
}
