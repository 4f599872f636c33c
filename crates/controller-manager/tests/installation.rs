//! The ControllerInstallation controller against a real kube-apiserver: a seed gets one
//! installation per registration its shoots (and the `Always` policy) need, naming the
//! registration's ControllerDeployment; when the shoot goes, installations no longer needed are
//! deleted, except one gardenlet still reports in use (`Required=True`), which goes once that
//! turns False.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use api::core::{ControllerInstallation, ControllerRegistration, Seed, Shoot};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;
use support::*;

const NS: &str = "garden-dev";

fn registration(name: &str, kind: &str, type_: &str, policy: Option<&str>) -> ControllerRegistration {
    let mut deployment = json!({"deploymentRefs": [{"name": format!("{name}-chart")}]});
    if let Some(p) = policy {
        deployment["policy"] = json!(p);
    }
    serde_json::from_value(json!({
        "apiVersion": "core.gardener.cloud/v1beta1", "kind": "ControllerRegistration",
        "metadata": {"name": name},
        "spec": {"resources": [{"kind": kind, "type": type_}], "deployment": deployment}
    }))
    .unwrap()
}

async fn installed(api: &Api<ControllerInstallation>) -> Vec<String> {
    let mut names: Vec<String> =
        api.list(&Default::default()).await.unwrap().items.iter().map(|i| i.name_any()).collect();
    names.sort();
    names
}

#[tokio::test]
async fn a_seed_gets_the_installations_its_shoots_need_and_loses_the_unused_ones() {
    let (env, client) = garden().await;
    namespace(&client, NS).await;
    let seed: Seed = serde_json::from_value(json!({
        "apiVersion": "core.gardener.cloud/v1beta1", "kind": "Seed",
        "metadata": {"name": "local"},
        "spec": {"provider": {"type": "local", "region": "local"}, "networks": {"pods": "10.1.0.0/16", "services": "10.2.0.0/16"}, "dns": {}}
    }))
    .unwrap();
    Api::<Seed>::all(client.clone()).create(&PostParams::default(), &seed).await.unwrap();
    let registrations = Api::<ControllerRegistration>::all(client.clone());
    for r in [
        registration("provider-local", "Infrastructure", "local", None),
        registration("networking-calico", "Network", "calico", None),
        registration("networking-cilium", "Network", "cilium", None),
        registration("audit", "Extension", "audit", Some("Always")),
    ] {
        registrations.create(&PostParams::default(), &r).await.unwrap();
    }
    let installations = Api::<ControllerInstallation>::all(client.clone());
    let running = start(&env, controller_manager::Config::default()).await;

    eventually("the Always installation", || async {
        let names = installed(&installations).await;
        if names == ["audit-local"] { Ok(()) } else { Err(format!("{names:?}")) }
    })
    .await;
    let mut shoot = shoot("app", NS);
    shoot.spec.seed_name = Some("local".into());
    create_shoot(&client, &shoot).await;
    eventually("the installations the shoot needs", || async {
        let names = installed(&installations).await;
        let want = ["audit-local", "networking-calico-local", "provider-local-local"];
        if names == want { Ok(()) } else { Err(format!("{names:?}")) }
    })
    .await;
    let provider = installations.get("provider-local-local").await.unwrap();
    assert_eq!(provider.spec.registration_ref.name, "provider-local");
    assert_eq!(provider.spec.seed_ref.as_ref().unwrap().name, "local");
    assert_eq!(provider.spec.deployment_ref.as_ref().unwrap().name, "provider-local-chart");

    // gardenlet reports provider-local still in use; the shoot goes.
    let required = |status: &str| {
        json!({"status": {"conditions": [{"type": "Required", "status": status, "reason": "ExtensionObjects",
               "message": "test", "lastTransitionTime": "2026-01-01T00:00:00Z", "lastUpdateTime": "2026-01-01T00:00:00Z"}]}})
    };
    installations
        .patch_status("provider-local-local", &PatchParams::default(), &Patch::Merge(&required("True")))
        .await
        .unwrap();
    Api::<Shoot>::namespaced(client.clone(), NS).delete("app", &DeleteParams::default()).await.unwrap();
    eventually("the unused installation to go, the one in use to stay", || async {
        let names = installed(&installations).await;
        if names == ["audit-local", "provider-local-local"] { Ok(()) } else { Err(format!("{names:?}")) }
    })
    .await;
    installations
        .patch_status("provider-local-local", &PatchParams::default(), &Patch::Merge(&required("False")))
        .await
        .unwrap();
    eventually("the installation no longer in use to go", || async {
        let names = installed(&installations).await;
        if names == ["audit-local"] { Ok(()) } else { Err(format!("{names:?}")) }
    })
    .await;
    assert_eq!(running.metrics.all_errors("controllerinstallation"), 0, "{}", running.metrics.render());
}
