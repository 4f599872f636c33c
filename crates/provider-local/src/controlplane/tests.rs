use super::*;
use extension_sdk::api::Opaque;
use extension_sdk::api::extensions::{Cluster, ClusterSpec, ControlPlaneSpec};

const IMAGE: &str = "gardener-rs.local/gardener-extension-provider-local:v0.1.0";

fn cluster(workers: Value, hibernated: bool) -> ClusterContext {
    let shoot = json!({
        "metadata": {"name": "s", "namespace": "garden-p"},
        "spec": {"provider": {"type": "local", "workers": workers}, "hibernation": {"enabled": hibernated}},
    });
    ClusterContext::new(Cluster::new(
        "shoot--p--s",
        ClusterSpec { cloud_profile: Opaque(json!({})), seed: Opaque(json!({})), shoot: Opaque(shoot) },
    ))
}

fn with_workers() -> ClusterContext {
    cluster(json!([{"name": "a", "minimum": 1, "maximum": 1}]), false)
}

#[test]
fn deploys_only_for_the_normal_purpose_of_awake_shoots_with_workers_and_an_image() {
    assert_eq!(decide(Purpose::Normal, Some(IMAGE), &with_workers()), ShootSide::Deploy { image: IMAGE });
    let nothing = |side: ShootSide<'_>, needle: &str| match side {
        ShootSide::Nothing(why) => assert!(why.contains(needle), "{why}"),
        other => panic!("expected nothing ({needle}), got {other:?}"),
    };
    nothing(decide(Purpose::Exposure, Some(IMAGE), &with_workers()), "exposure");
    nothing(decide(Purpose::Normal, None, &with_workers()), "--volume-provisioner-image");
    nothing(decide(Purpose::Normal, Some(IMAGE), &cluster(json!([]), false)), "no workers");
    nothing(decide(Purpose::Normal, Some(IMAGE), &cluster(Value::Null, false)), "no workers");
    nothing(decide(Purpose::Normal, Some(IMAGE), &ClusterContext::none()), "no Cluster");
    let hibernated = cluster(json!([{"name": "a", "minimum": 1, "maximum": 1}]), true);
    nothing(decide(Purpose::Normal, Some(IMAGE), &hibernated), "hibernated");
    let mut deleted = with_workers().raw().cloned().expect("a Cluster");
    deleted.spec.shoot.0["metadata"]["deletionTimestamp"] = json!("2026-11-26T12:00:00Z");
    nothing(decide(Purpose::Normal, Some(IMAGE), &ClusterContext::new(deleted)), "being deleted");
}

#[test]
fn the_provider_status_lists_what_is_managed_or_says_why_nothing_is() {
    let mut cp = ControlPlane::new("cp", ControlPlaneSpec::default());
    let s = provider_status(&cp, &ShootSide::Deploy { image: IMAGE });
    assert_eq!(s["purpose"], "normal");
    assert_eq!(s["managedResources"].as_array().map(Vec::len), Some(5));
    assert_eq!(s["volumeProvisioner"]["image"], IMAGE);
    assert_eq!(s["volumeProvisioner"]["storageClass"], "default");

    cp.spec.purpose = Some(Purpose::Exposure);
    let s = provider_status(&cp, &ShootSide::Nothing("why not"));
    assert_eq!(s["purpose"], "exposure");
    assert_eq!(s["managedResources"], json!([]));
    assert!(s["note"].as_str().is_some_and(|n| n.ends_with("why not")), "{s}");
}
