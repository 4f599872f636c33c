//! The generic controller against a real kube-apiserver: filtering, when to act, the
//! annotation protocol, the finalizer, status, errors and codes, events, timeouts, requeues,
//! restart safety, failed shoots and malformed objects.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use extension_sdk::api::common::{ErrorCode, LastOperationState as S, LastOperationType as T};
use extension_sdk::api::extensions::{
    ControlPlane, ControlPlaneSpec, DefaultSpec, ExtensionClass, ExtensionKind, Infrastructure,
};
use extension_sdk::k8s_openapi::api::events::v1::Event;
use extension_sdk::kinds::ExtensionResource;
use extension_sdk::kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use extension_sdk::kube::{Api, ResourceExt};
use extension_sdk::testing::sample_shoot;
use extension_sdk::{Deployer, Mode};
use serde_json::json;
use std::time::Duration;
use support::*;

fn infras(client: &extension_sdk::kube::Client) -> Api<Infrastructure> {
    Infrastructure::api(client.clone(), Some(NS))
}

/// Waits for an Event in the test namespace with this reason.
async fn event_with_reason(client: &extension_sdk::kube::Client, reason: &str) -> Event {
    let events: Api<Event> = Api::namespaced(client.clone(), NS);
    eventually(&format!("an event with reason {reason}"), || async {
        events.list(&ListParams::default()).await.ok()?.items.into_iter().find(|e| e.reason.as_deref() == Some(reason))
    })
    .await
}

#[tokio::test]
async fn only_objects_of_the_configured_type_and_class_are_handled() {
    bounded(async {
        let tc = cluster().await;
        let actuator = Scripted::new(tc.client.clone(), Script::Succeed);
        let running = start::<Infrastructure, _>(&tc.client, actuator.clone(), config());
        let api = infras(&tc.client);
        let mut other_type = infra("other-type");
        other_type.spec.default.type_ = "aws".into();
        let mut other_class = infra("other-class");
        other_class.spec.default.class = Some(ExtensionClass::Seed);
        for obj in [&other_type, &other_class, &infra("mine")] {
            api.create(&PostParams::default(), obj).await.unwrap();
        }
        wait_state(&api, "mine", T::Create, S::Succeeded).await;
        // All three were seen (three creations plus the controller's own writes on "mine").
        reconciled_since(&running.metrics, "Infrastructure", 2).await;
        assert_eq!(Counts::get(&actuator.counts.reconcile), 1);
        for name in ["other-type", "other-class"] {
            let obj = api.get(name).await.unwrap();
            assert!(obj.status.is_none() && obj.finalizers().is_empty(), "{name} was touched: {obj:?}");
        }
        running.stop().await;
    })
    .await
}

#[tokio::test]
async fn reconcile_protocol_processing_then_succeeded_with_finalizer_and_annotation_removed() {
    bounded(async {
        let tc = cluster().await;
        let actuator = Scripted::new(tc.client.clone(), Script::Succeed);
        let running = start::<Infrastructure, _>(&tc.client, actuator.clone(), config());
        let deployer = Deployer::new(tc.client.clone()).with_timeout(Duration::from_secs(30));
        let obj = deployer.deploy_and_wait(&infra("a")).await.unwrap();

        let seen = actuator.seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].annotation, None, "reconcile annotation must be gone before the actuator runs");
        assert!(
            seen[0].finalizers.contains(&Infrastructure::finalizer()),
            "finalizer must be there before the actuator runs"
        );
        assert_eq!(seen[0].last_operation, Some((T::Create, S::Processing, 1)));

        let status = obj.status.clone().unwrap().default;
        let last = status.last_operation.unwrap();
        assert_eq!((last.type_, last.state, last.progress), (T::Create, S::Succeeded, 100));
        assert_eq!(status.observed_generation, obj.metadata.generation);
        assert!(status.last_error.is_none());
        assert_eq!(status.state.map(|s| s.0), Some(json!({"seen": "a"})), "actuator state is stored");

        // Deleting calls delete and removes the finalizer.
        deployer.delete_and_wait::<Infrastructure>(Some(NS), "a").await.unwrap();
        assert_eq!(Counts::get(&actuator.counts.delete), 1);
        running.stop().await;
    })
    .await
}

#[tokio::test]
async fn ten_no_op_updates_of_a_succeeded_object_call_the_actuator_zero_times() {
    bounded(async {
        let tc = cluster().await;
        let actuator = Scripted::new(tc.client.clone(), Script::Succeed);
        let running = start::<Infrastructure, _>(&tc.client, actuator.clone(), config());
        let deployer = Deployer::new(tc.client.clone()).with_timeout(Duration::from_secs(30));
        deployer.deploy_and_wait(&infra("a")).await.unwrap();
        let api = infras(&tc.client);
        let before_calls = actuator.counts.total();
        let mut seen = running.metrics.reconciliations("Infrastructure");
        let first = seen;
        for i in 0..10 {
            let patch =
                json!({"metadata": {"labels": {"no-op": i.to_string()}, "annotations": {"unrelated": i.to_string()}}});
            api.patch("a", &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
            seen = reconciled_since(&running.metrics, "Infrastructure", seen).await;
        }
        let calls = actuator.counts.total() - before_calls;
        println!("no-op test: {} reconciles for 10 no-op updates, {calls} actuator calls", seen - first);
        assert_eq!(calls, 0);
        assert_eq!(Counts::get(&actuator.counts.reconcile), 1);
        running.stop().await;
    })
    .await
}

#[tokio::test]
async fn wait_for_state_means_nothing_is_done() {
    bounded(async {
        let tc = cluster().await;
        let actuator = Scripted::new(tc.client.clone(), Script::Succeed);
        let running = start::<Infrastructure, _>(&tc.client, actuator.clone(), config());
        let mut obj = infra("a");
        obj.metadata.annotations =
            Some([("gardener.cloud/operation".to_string(), "wait-for-state".to_string())].into());
        infras(&tc.client).create(&PostParams::default(), &obj).await.unwrap();
        reconciled_since(&running.metrics, "Infrastructure", 0).await;
        let obj = infras(&tc.client).get("a").await.unwrap();
        assert_eq!(actuator.counts.total(), 0);
        assert!(obj.status.is_none() && obj.finalizers().is_empty());
        assert_eq!(obj.annotations().get("gardener.cloud/operation").map(String::as_str), Some("wait-for-state"));
        running.stop().await;
    })
    .await
}

#[tokio::test]
async fn migrate_of_an_object_being_deleted_removes_the_finalizer_without_calling_delete() {
    bounded(async {
        let tc = cluster().await;
        let actuator = Scripted::new(tc.client.clone(), Script::Succeed);
        let running = start::<Infrastructure, _>(&tc.client, actuator.clone(), config());
        let deployer = Deployer::new(tc.client.clone()).with_timeout(Duration::from_secs(30));
        deployer.deploy_and_wait(&infra("a")).await.unwrap();
        let api = infras(&tc.client);
        // While no controller runs: ask for migrate and start deleting (another finalizer keeps
        // the object around), so that the controller sees both at once.
        running.stop().await;
        let hold = json!({"metadata": {"finalizers": [Infrastructure::finalizer(), "test/hold"]}});
        api.patch("a", &PatchParams::default(), &Patch::Merge(&hold)).await.unwrap();
        deployer.annotate::<Infrastructure>(Some(NS), "a", "migrate").await.unwrap();
        api.delete("a", &DeleteParams::default()).await.unwrap();
        let running = start::<Infrastructure, _>(&tc.client, actuator.clone(), config());
        let obj = eventually("our finalizer to be removed", || async {
            let o = api.get("a").await.ok()?;
            (!o.finalizers().contains(&Infrastructure::finalizer())).then_some(o)
        })
        .await;
        assert_eq!(Counts::get(&actuator.counts.migrate), 1);
        assert_eq!(Counts::get(&actuator.counts.delete), 0, "migrate must never call delete");
        assert!(!obj.annotations().contains_key("gardener.cloud/operation"));
        let last = obj.status.unwrap().default.last_operation.unwrap();
        assert_eq!((last.type_, last.state), (T::Migrate, S::Succeeded));
        running.stop().await;
    })
    .await
}

#[tokio::test]
async fn a_non_retryable_error_ends_up_in_last_error_codes_with_an_event_and_a_metric() {
    bounded(async {
        let tc = cluster().await;
        let secret = "-----BEGIN PRIVATE KEY-----\nTOPSECRET\n-----END PRIVATE KEY-----";
        let actuator =
            Scripted::new(tc.client.clone(), Script::Fail(format!("cloud said 403 Forbidden for key {secret}")));
        let running = start::<Infrastructure, _>(&tc.client, actuator.clone(), config());
        let deployer = Deployer::new(tc.client.clone()).with_timeout(Duration::from_secs(30));
        let err = deployer.deploy_and_wait(&infra("a")).await.expect_err("must fail");
        assert_eq!(err.codes(), &[ErrorCode::InfraUnauthorized]);
        assert!(err.to_string().contains(&format!("Infrastructure {NS}/a")), "{err}");

        let obj = infras(&tc.client).get("a").await.unwrap();
        let status = obj.status.unwrap().default;
        let last = status.last_operation.unwrap();
        assert_eq!((last.type_, last.state, last.progress), (T::Create, S::Error, 50));
        let last_error = status.last_error.unwrap();
        assert_eq!(last_error.codes, vec![ErrorCode::InfraUnauthorized]);
        assert!(!last_error.description.contains("TOPSECRET"));
        assert_eq!(status.observed_generation, obj.metadata.generation);
        assert!(running.metrics.errors("Infrastructure", "CreateFailed") >= 1);

        let event = event_with_reason(&tc.client, "CreateFailed").await;
        assert_eq!(event.type_.as_deref(), Some("Warning"));
        let note = event.note.unwrap_or_default();
        assert!(note.contains("403 Forbidden") && !note.contains("TOPSECRET"), "{note}");
        assert_eq!(event.regarding.and_then(|r| r.name).as_deref(), Some("a"));
        running.stop().await;
    })
    .await
}

#[tokio::test]
async fn success_after_failures_clears_last_error() {
    bounded(async {
        let tc = cluster().await;
        let actuator = Scripted::new(tc.client.clone(), Script::FailTimes(2, "rate limit exceeded".into()));
        let running = start::<Infrastructure, _>(&tc.client, actuator.clone(), config());
        infras(&tc.client).create(&PostParams::default(), &infra("a")).await.unwrap();
        let obj = wait_state(&infras(&tc.client), "a", T::Create, S::Succeeded).await;
        assert_eq!(Counts::get(&actuator.counts.reconcile), 3, "two retried failures, then success");
        assert!(obj.status.unwrap().default.last_error.is_none());
        assert_eq!(running.metrics.errors("Infrastructure", "CreateFailed"), 2);
        running.stop().await;
    })
    .await
}

#[tokio::test]
async fn a_requeue_is_not_a_failure() {
    bounded(async {
        let tc = cluster().await;
        let actuator = Scripted::new(tc.client.clone(), Script::RequeueTimes(2));
        let running = start::<ControlPlane, _>(&tc.client, actuator.clone(), config());
        let cp = {
            let mut cp = ControlPlane::new(
                "cp",
                ControlPlaneSpec {
                    default: DefaultSpec { type_: TYPE.into(), ..Default::default() },
                    region: "local".into(),
                    secret_ref: extension_sdk::api::common::SecretReference { name: "creds".into(), namespace: None },
                    ..Default::default()
                },
            );
            cp.metadata.namespace = Some(NS.into());
            cp
        };
        let api = ControlPlane::api(tc.client.clone(), Some(NS));
        api.create(&PostParams::default(), &cp).await.unwrap();
        let obj = wait_state(&api, "cp", T::Create, S::Succeeded).await;
        assert_eq!(Counts::get(&actuator.counts.reconcile), 3);
        assert!(obj.status.unwrap().default.last_error.is_none());
        assert_eq!(running.metrics.all_errors("ControlPlane"), 0, "requeues are not errors");
        let events: Api<Event> = Api::namespaced(tc.client.clone(), NS);
        assert!(events.list(&ListParams::default()).await.unwrap().items.is_empty(), "requeues raise no events");
        running.stop().await;
    })
    .await
}

#[tokio::test]
async fn an_actuator_exceeding_the_timeout_fails_the_operation() {
    bounded(async {
        let tc = cluster().await;
        let actuator = Scripted::new(tc.client.clone(), Script::Sleep(Duration::from_secs(60)));
        let running =
            start::<Infrastructure, _>(&tc.client, actuator.clone(), config().timeout(Duration::from_millis(500)));
        infras(&tc.client).create(&PostParams::default(), &infra("a")).await.unwrap();
        let obj = wait_state(&infras(&tc.client), "a", T::Create, S::Error).await;
        let err = obj.status.unwrap().default.last_error.unwrap();
        assert!(err.description.contains("did not finish within"), "{}", err.description);
        assert!(running.metrics.errors("Infrastructure", "CreateTimedOut") >= 1);
        running.stop().await;
    })
    .await
}

#[tokio::test]
async fn objects_of_a_failed_shoot_are_left_alone() {
    bounded(async {
        let tc = cluster().await;
        let mut failed = sample_shoot(TYPE);
        failed["status"]["lastOperation"]["state"] = json!("Failed");
        tc.cluster(NS, failed).await.unwrap();
        let actuator = Scripted::new(tc.client.clone(), Script::Succeed);
        let running = start::<Infrastructure, _>(&tc.client, actuator.clone(), config());
        infras(&tc.client).create(&PostParams::default(), &infra("a")).await.unwrap();
        reconciled_since(&running.metrics, "Infrastructure", 0).await;
        assert_eq!(actuator.counts.total(), 0);
        assert!(infras(&tc.client).get("a").await.unwrap().status.is_none());
        // Once the shoot is retried (no longer Failed), a reconcile request is served.
        tc.cluster(NS, sample_shoot(TYPE)).await.unwrap();
        Deployer::new(tc.client.clone())
            .with_timeout(Duration::from_secs(30))
            .deploy_and_wait(&infra("a"))
            .await
            .unwrap();
        assert_eq!(Counts::get(&actuator.counts.reconcile), 1);
        running.stop().await;
    })
    .await
}

#[tokio::test]
async fn a_new_controller_instance_picks_up_an_object_left_in_processing() {
    bounded(async {
        let tc = cluster().await;
        let stuck = Scripted::new(tc.client.clone(), Script::Sleep(Duration::from_secs(3600)));
        let first = start::<Infrastructure, _>(&tc.client, stuck.clone(), config());
        infras(&tc.client).create(&PostParams::default(), &infra("a")).await.unwrap();
        wait_state(&infras(&tc.client), "a", T::Create, S::Processing).await;
        eventually("the first actuator call", || async { (stuck.counts.total() == 1).then_some(()) }).await;
        // The first instance dies mid-reconcile.
        first.handle.abort();
        let _ = first.handle.await;

        let fresh = Scripted::new(tc.client.clone(), Script::Succeed);
        let second = start::<Infrastructure, _>(&tc.client, fresh.clone(), config());
        let obj = wait_state(&infras(&tc.client), "a", T::Create, S::Succeeded).await;
        assert_eq!(Counts::get(&fresh.counts.reconcile), 1);
        assert_eq!(obj.status.unwrap().default.observed_generation, obj.metadata.generation);
        second.stop().await;
    })
    .await
}

#[tokio::test]
async fn force_deletion_calls_force_delete() {
    bounded(async {
        let tc = cluster().await;
        let actuator = Scripted::new(tc.client.clone(), Script::Succeed);
        let running = start::<Infrastructure, _>(&tc.client, actuator.clone(), config());
        let deployer = Deployer::new(tc.client.clone()).with_timeout(Duration::from_secs(30));
        deployer.deploy_and_wait(&infra("a")).await.unwrap();
        let confirm = json!({"metadata": {"annotations": {"confirmation.gardener.cloud/force-deletion": "true"}}});
        infras(&tc.client).patch("a", &PatchParams::default(), &Patch::Merge(&confirm)).await.unwrap();
        deployer.delete_and_wait::<Infrastructure>(Some(NS), "a").await.unwrap();
        assert_eq!(Counts::get(&actuator.counts.force_delete), 1);
        assert_eq!(Counts::get(&actuator.counts.delete), 0);
        running.stop().await;
    })
    .await
}

#[tokio::test]
async fn generation_mode_reacts_to_spec_and_cluster_changes_not_to_the_annotation() {
    bounded(async {
        let tc = cluster().await;
        let actuator = Scripted::new(tc.client.clone(), Script::Succeed);
        let running = start::<Infrastructure, _>(&tc.client, actuator.clone(), config().mode(Mode::Generation));
        let api = infras(&tc.client);
        api.create(&PostParams::default(), &infra("a")).await.unwrap();
        wait_state(&api, "a", T::Create, S::Succeeded).await;
        assert_eq!(Counts::get(&actuator.counts.reconcile), 1);

        // The reconcile annotation alone does nothing in this mode.
        let before = running.metrics.reconciliations("Infrastructure");
        let deployer = Deployer::new(tc.client.clone());
        deployer.annotate::<Infrastructure>(Some(NS), "a", "reconcile").await.unwrap();
        reconciled_since(&running.metrics, "Infrastructure", before).await;
        assert_eq!(Counts::get(&actuator.counts.reconcile), 1);

        // A spec change does.
        api.patch("a", &PatchParams::default(), &Patch::Merge(&json!({"spec": {"region": "other"}}))).await.unwrap();
        eventually("a reconcile after the spec change", || async {
            (Counts::get(&actuator.counts.reconcile) == 2).then_some(())
        })
        .await;
        let obj = wait_state(&api, "a", T::Reconcile, S::Succeeded).await;
        assert_eq!(obj.status.unwrap().default.observed_generation, obj.metadata.generation);

        // A Cluster status change does not; a Cluster spec change does.
        let mut shoot = sample_shoot(TYPE);
        shoot["status"]["lastOperation"]["progress"] = json!(42);
        let before = running.metrics.reconciliations("Infrastructure");
        tc.cluster(NS, shoot.clone()).await.unwrap();
        reconciled_since(&running.metrics, "Infrastructure", before).await;
        assert_eq!(Counts::get(&actuator.counts.reconcile), 2);
        shoot["spec"]["kubernetes"]["version"] = json!("1.34.0");
        tc.cluster(NS, shoot).await.unwrap();
        eventually("a reconcile after the Cluster change", || async {
            (Counts::get(&actuator.counts.reconcile) == 3).then_some(())
        })
        .await;
        running.stop().await;
    })
    .await
}

#[tokio::test]
async fn a_malformed_object_is_reported_and_does_not_break_the_watch() {
    bounded(async {
        let tc = cluster().await;
        // Loosen the schema so that the API server stores what the Rust type cannot decode.
        let mut crd = <Infrastructure as extension_sdk::kube::CustomResourceExt>::crd();
        crd.spec.versions[0].schema = Some(
            serde_json::from_value(json!({"openAPIV3Schema": {
                "type": "object", "x-kubernetes-preserve-unknown-fields": true
            }}))
            .unwrap(),
        );
        extension_sdk::testing::testenv::install_crds(&tc.client, &[crd]).await.unwrap();
        let dynamic = Api::<extension_sdk::kube::api::DynamicObject>::namespaced_with(
            tc.client.clone(),
            NS,
            &extension_sdk::kube::api::ApiResource::erase::<Infrastructure>(&()),
        );
        let bad: extension_sdk::kube::api::DynamicObject = serde_json::from_value(json!({
            "apiVersion": "extensions.gardener.cloud/v1alpha1", "kind": "Infrastructure",
            "metadata": {"name": "bad", "namespace": NS},
            "spec": {"type": TYPE, "region": 42}
        }))
        .unwrap();
        // The API server picks the new schema up shortly after the CRD is Established again.
        eventually("the loosened schema to accept the bad object", || async {
            dynamic.create(&PostParams::default(), &bad).await.ok()
        })
        .await;

        let actuator = Scripted::new(tc.client.clone(), Script::Succeed);
        let running = start::<Infrastructure, _>(&tc.client, actuator.clone(), config());
        infras(&tc.client).create(&PostParams::default(), &infra("good")).await.unwrap();
        wait_state(&infras(&tc.client), "good", T::Create, S::Succeeded).await;
        assert!(running.metrics.errors("Infrastructure", "InvalidObject") >= 1);
        let event = event_with_reason(&tc.client, "InvalidObject").await;
        assert_eq!(event.regarding.and_then(|r| r.name).as_deref(), Some("bad"));
        running.stop().await;
    })
    .await
}
