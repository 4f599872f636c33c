//! The maintenance controller against a real kube-apiserver, on a manual clock: a
//! `maintain` request runs at once; when the maintenance window opens, an expired Kubernetes
//! version is forced to the next supported minor and a patch version is auto-updated, and an
//! expired machine image version of a worker pool is forced to the newest one; each change is
//! recorded in `status.lastMaintenance`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use api::common::LastOperationState;
use api::core::cloudprofile::{ExpirableVersion, MachineImage, MachineImageVersion};
use api::core::shoot::Maintenance;
use api::core::shoot::provider::ShootMachineImage;
use api::core::shoot::settings::{MaintenanceAutoUpdate, MaintenanceTimeWindow};
use api::core::{CloudProfile, Shoot};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::PostParams;
use support::*;

const NS: &str = "garden-dev";

fn maintained(name: &str, version: &str, auto_update: bool) -> Shoot {
    let mut s = shoot(name, NS);
    s.spec.kubernetes.version = version.into();
    s.spec.maintenance = Some(Maintenance {
        auto_update: Some(MaintenanceAutoUpdate { kubernetes_version: auto_update, machine_image_version: None }),
        time_window: Some(MaintenanceTimeWindow { begin: "220000+0000".into(), end: "230000+0000".into() }),
        confine_spec_update_rollout: None,
    });
    s
}

async fn outcome(shoots: &Api<Shoot>, name: &str) -> Result<(String, String), String> {
    let s = shoots.get(name).await.map_err(|e| e.to_string())?;
    let last = s
        .status
        .and_then(|s| s.last_maintenance)
        .ok_or(format!("not maintained, version {}", s.spec.kubernetes.version))?;
    if last.state != LastOperationState::Succeeded {
        return Err(format!("{last:?}"));
    }
    Ok((s.spec.kubernetes.version, last.description))
}

#[tokio::test]
async fn maintenance_forces_expired_versions_and_auto_updates_patches_in_the_window_or_when_asked() {
    let (env, client) = garden().await;
    namespace(&client, NS).await;
    let version = |v: &str, expires: Option<Timestamp>| ExpirableVersion {
        version: v.into(),
        expiration_date: expires.map(Time),
        classification: None,
    };
    let mut profile = CloudProfile::new("local", Default::default());
    profile.spec.type_ = "local".into();
    profile.spec.kubernetes.versions =
        vec![version("1.30.1", Some(Timestamp::UNIX_EPOCH)), version("1.31.1", None), version("1.31.3", None)];
    let image = |v: &str, expires: Option<Timestamp>| MachineImageVersion {
        expirable: version(v, expires),
        cri: vec![],
        architectures: vec![],
    };
    profile.spec.machine_images = vec![MachineImage {
        name: "local".into(),
        versions: vec![image("1.0.0", Some(Timestamp::UNIX_EPOCH)), image("2.0.0", None)],
    }];
    Api::<CloudProfile>::all(client.clone()).create(&PostParams::default(), &profile).await.unwrap();
    let shoots: Api<Shoot> = Api::namespaced(client.clone(), NS);
    let running = start(&env, controller_manager::Config::default()).await;
    // Outside any window (the clock stands at 12:00 UTC tomorrow).
    let noon = Timestamp::from_second((Timestamp::now().as_second() / 86_400 + 1) * 86_400 + 12 * 3600).unwrap();
    running.clock.set(noon);

    let mut asked = maintained("asked", "1.31.1", true);
    asked.metadata.annotations = Some([("gardener.cloud/operation".to_string(), "maintain".to_string())].into());
    create_shoot(&client, &asked).await;
    let mut expired = maintained("expired", "1.30.1", false);
    expired.spec.provider.workers[0].machine.image =
        Some(ShootMachineImage { name: "local".into(), version: Some("1.0.0".into()), provider_config: None });
    create_shoot(&client, &expired).await;
    create_shoot(&client, &maintained("patch", "1.31.1", true)).await;

    let (v, why) = eventually("the requested maintenance", || outcome(&shoots, "asked")).await;
    assert_eq!(v, "1.31.3");
    assert!(why.contains("auto-updated from 1.31.1 to 1.31.3"), "{why}");
    assert!(!shoots.get("asked").await.unwrap().annotations_contains_maintain(), "the request is removed");
    assert!(outcome(&shoots, "expired").await.is_err(), "outside the window nothing else ran");

    running.clock.set(Timestamp::from_second(noon.as_second() + 10 * 3600 + 600).unwrap()); // 22:10
    let (v, why) = eventually("the expired version to be forced forward", || outcome(&shoots, "expired")).await;
    assert_eq!(v, "1.31.3");
    assert!(why.contains("1.30.1 expired: forced update to 1.31.3"), "{why}");
    assert!(why.contains("machine image local 1.0.0 of worker pool pool expired: forced update to 2.0.0"), "{why}");
    let pool = &shoots.get("expired").await.unwrap().spec.provider.workers[0];
    assert_eq!(pool.machine.image.as_ref().and_then(|i| i.version.as_deref()), Some("2.0.0"));
    assert_eq!(pool.name, "pool", "the rest of the pool is kept");
    let (v, _) = eventually("the patch version to be updated", || outcome(&shoots, "patch")).await;
    assert_eq!(v, "1.31.3");
    let notes = event_notes(&client, NS, "expired", "MaintenanceDone").await;
    assert!(notes.iter().any(|n| n.contains("forced update")), "{notes:?}");
    assert_eq!(running.metrics.all_errors("shoot-maintenance"), 0, "{}", running.metrics.render());
}

trait MaintainAnnotation {
    fn annotations_contains_maintain(&self) -> bool;
}

impl MaintainAnnotation for Shoot {
    fn annotations_contains_maintain(&self) -> bool {
        kube::ResourceExt::annotations(self).get("gardener.cloud/operation").is_some_and(|v| v == "maintain")
    }
}
