//! The scheduler against a real kube-apiserver, for the objects a shoot names besides its seed:
//! a NamespacedCloudProfile is used through its merged `status.cloudProfileSpec` (a shoot waits,
//! explained, until it is computed, and is placed as soon as it is written), and an
//! ExposureClass narrows the seeds by its seed selector and adds its tolerations; a missing one
//! is a refusal naming it. The scheduler runs as the chart's ServiceAccount, so its list/watch
//! rules for both kinds are proven too.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use api::core::{ExposureClass, NamespacedCloudProfile, Shoot};
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use scheduler::config::BackoffConfig;
use serde_json::json;
use support::*;

const NOT_COMPUTED: &str =
    "NamespacedCloudProfile \"garden-dev/team\" has no merged spec yet (status.cloudProfileSpec is not computed)";

async fn wait_refused(client: &kube::Client, name: &str, text: &str) {
    eventually(&format!("{name} to be refused with {text:?}"), || async {
        let s = get_shoot(client, name).await;
        match last_operation(&s) {
            Some(op) if op.description == text && seed_of(&s).is_none() => Ok(()),
            other => Err(format!("seed {:?}, last operation {other:?}", seed_of(&s))),
        }
    })
    .await;
    eventually(&format!("a SchedulingFailed event for {name}"), || async {
        let notes: Vec<_> = events(client, name, "SchedulingFailed").await.into_iter().filter_map(|e| e.note).collect();
        if notes.iter().any(|n| n == text) { Ok(()) } else { Err(format!("{notes:?}")) }
    })
    .await;
}

async fn wait_placed(client: &kube::Client, name: &str) -> String {
    eventually(&format!("{name} to be placed"), || async {
        let s = get_shoot(client, name).await;
        seed_of(&s).map(str::to_string).ok_or_else(|| format!("{:?}", last_operation(&s)))
    })
    .await
}

#[tokio::test]
async fn namespaced_cloud_profiles_and_exposure_classes_steer_the_decision() {
    let (env, client) = garden().await;
    create_seed(&client, seed("plain", "eu-west-1"), true, None).await;
    create_seed(&client, labelled(seed("team-seed", "eu-west-1"), "tier", "team"), true, Some(10)).await;
    create_seed(
        &client,
        tainted(labelled(seed("internet-seed", "eu-west-1"), "exposure", "internet"), "dedicated"),
        true,
        None,
    )
    .await;

    let classes: Api<ExposureClass> = Api::all(client.clone());
    let class: ExposureClass = serde_json::from_value(json!({
        "apiVersion": "core.gardener.cloud/v1beta1", "kind": "ExposureClass",
        "metadata": {"name": "internet"},
        "handler": "internet-config",
        "scheduling": {
            "seedSelector": {"matchLabels": {"exposure": "internet"}},
            "tolerations": [{"key": "dedicated"}],
        },
    }))
    .unwrap();
    classes.create(&PostParams::default(), &class).await.unwrap();
    let profiles: Api<NamespacedCloudProfile> = Api::namespaced(client.clone(), NS);
    let team: NamespacedCloudProfile = serde_json::from_value(json!({
        "apiVersion": "core.gardener.cloud/v1beta1", "kind": "NamespacedCloudProfile",
        "metadata": {"name": "team", "namespace": NS},
        "spec": {"parent": {"kind": "CloudProfile", "name": "local"}},
    }))
    .unwrap();
    profiles.create(&PostParams::default(), &team).await.unwrap();

    // Retries are so slow that only the re-queue on a NamespacedCloudProfile change can place the
    // waiting shoot within the test's time.
    let config = scheduler::Config {
        backoff: BackoffConfig { initial_seconds: 3600.0, max_seconds: 3600.0, jitter: 0.0 },
        ..quick_config()
    };
    let _running = start_scheduler(&as_scheduler(&env).await, config);

    let on_team = |name: &str| {
        let mut s = shoot(name, "eu-west-1");
        s.spec.cloud_profile_name = None;
        s.spec.cloud_profile = Some(api::core::shoot::CloudProfileReference {
            kind: Some("NamespacedCloudProfile".into()),
            name: "team".into(),
        });
        s
    };
    let exposed = |mut s: Shoot, class: &str| {
        s.spec.exposure_class_name = Some(class.into());
        s
    };
    create_shoot(&client, &on_team("team-shoot")).await;
    create_shoot(&client, &exposed(shoot("exposed", "eu-west-1"), "internet")).await;
    create_shoot(&client, &exposed(shoot("no-class", "eu-west-1"), "missing")).await;

    // The ExposureClass's selector leaves only its seed, whose taint the class tolerates.
    assert_eq!(wait_placed(&client, "exposed").await, "internet-seed");
    wait_refused(&client, "no-class", "ExposureClass \"missing\" does not exist").await;

    // The NamespacedCloudProfile has no merged spec yet; once the controller-manager's (here:
    // the test's) merge is written, its seed selector decides.
    wait_refused(&client, "team-shoot", NOT_COMPUTED).await;
    let merged = json!({"status": {"cloudProfileSpec": {
        "type": "local",
        "kubernetes": {"versions": []},
        "machineImages": [],
        "machineTypes": [],
        "regions": [{"name": "eu-west-1"}],
        "seedSelector": {"matchLabels": {"tier": "team"}},
    }}});
    profiles.patch_status("team", &PatchParams::default(), &Patch::Merge(&merged)).await.unwrap();
    assert_eq!(wait_placed(&client, "team-shoot").await, "team-seed");

    // Both at once: the merged profile's selector and the class's select no common seed.
    create_shoot(&client, &exposed(on_team("both"), "internet")).await;
    wait_refused(
        &client,
        "both",
        "0/3 seeds fit: 2 not selected by the CloudProfile, 1 not selected by the ExposureClass",
    )
    .await;
}
