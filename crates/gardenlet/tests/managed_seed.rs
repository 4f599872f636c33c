//! The ManagedSeed controller against real API servers: a garden (which is also the hosting
//! seed, with kube-controller-manager) and a second kube-apiserver
//! standing in for the shoot. The controller runs as the gardenlet chart's ServiceAccount, so
//! the test proves the chart grants what it does. The gardenlet in the "shoot" cannot run here
//! (no kubelet), so the test plays it: it bootstraps the seed's garden identity by CSR with the
//! bootstrap kubeconfig the ManagedSeed controller wrote into the shoot (a stand-in approves
//! CSRs, kube-controller-manager signs them), writing the kubeconfig Secret as the shoot's
//! gardenlet ServiceAccount, and runs its seed controller with that certificate. That proves
//! the bootstrap identity can do nothing else in the garden, and the shoot's RBAC. The seed
//! authorizer is not in this garden; a binding for the seed's user stands in for it.
//! Deletion waits while a shoot uses the seed and removes everything after.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use api::common::{ConditionStatus, LastOperationState, LastOperationType};
use api::core::{Seed, Shoot};
use api::seedmanagement::ManagedSeed;
use gardenlet::config::GardenletConfig;
use gardenlet::managedseed::manifests::{self, Side};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

const CONFIG: &str = "seed:\n  name: local\n  spec:\n    provider:\n      type: local\n      region: local\n    networks:\n      pods: 10.1.0.0/16\n      services: 10.2.0.0/16\ncontrolPlaneRequestsPercent: 20\n";
const TECHNICAL_ID: &str = "shoot--garden--ms1";

/// Polls `probe` every 100 ms until it returns `Ok`, for at most 60 s.
async fn eventually<T, Fut: std::future::Future<Output = Result<T, String>>>(
    what: &str,
    probe: impl FnMut() -> Fut,
) -> T {
    testenv::poll::until(what, Duration::from_secs(60), Duration::from_millis(100), probe).await
}

fn condition(ms: &ManagedSeed, type_: &str) -> Option<(ConditionStatus, String, String)> {
    let c = ms.status.as_ref()?.conditions.iter().find(|c| c.type_ == type_)?;
    Some((c.status, c.reason.clone(), c.message.clone()))
}

/// A Shoot in `garden` on seed `local`, reconciled (the part gardenlet's shoot controller
/// plays; it does not run here).
async fn reconciled_shoot(admin: &Client, name: &str, seed: &str) {
    let shoots: Api<Shoot> = Api::namespaced(admin.clone(), "garden");
    let mut shoot = Shoot::new(name, Default::default());
    shoot.spec.seed_name = Some(seed.into());
    shoot.spec.cloud_profile_name = Some("local".into());
    shoot.spec.region = "local".into();
    shoot.spec.provider.type_ = "local".into();
    shoot.spec.kubernetes.version = "1.20.2".into();
    let created = shoots.create(&PostParams::default(), &shoot).await.unwrap();
    let status = json!({"status": {
        "seedName": seed, "technicalID": TECHNICAL_ID, "observedGeneration": created.metadata.generation,
        "lastOperation": {"type": "Create", "state": "Succeeded", "progress": 100, "description": "done",
                          "lastUpdateTime": "2026-11-26T12:00:00Z"}}});
    shoots.patch_status(name, &PatchParams::default(), &Patch::Merge(status)).await.unwrap();
    let _ = (LastOperationType::Create, LastOperationState::Succeeded);
}

#[tokio::test]
async fn deploys_gardenlet_into_the_shoot_registers_the_seed_and_removes_it_when_unused() {
    let garden_env = testenv::TestEnv::start_with(testenv::Options {
        controller_manager: true,
        controllers: Some(vec![
            "serviceaccount-token".into(),
            "namespace".into(),
            "garbagecollector".into(),
            "csrsigning".into(),
        ]),
        crds: api::crds::all(),
        ..Default::default()
    })
    .await
    .unwrap();
    let shoot_env = testenv::TestEnv::start().await.unwrap();
    let admin = garden_env.client().await.unwrap();
    let shoot_admin = shoot_env.client().await.unwrap();
    let gardenlet = support::chart::gardenlet_client(&garden_env, CONFIG).await;

    // The chart and the managed gardenlet's permissions are the same rules.
    let chart_role = Api::<ClusterRole>::all(admin.clone()).get("gardener.cloud:system:gardenlet:local").await.unwrap();
    assert_eq!(
        serde_json::to_value(chart_role.rules.unwrap_or_default()).unwrap(),
        json!(manifests::rules("local", Side::Both)),
        "charts/gardener/gardenlet/templates/rbac.yaml and managedseed::manifests::RULES differ"
    );

    // The shoot's admin kubeconfig in its seed namespace, as gardenlet keeps it.
    Api::<Namespace>::all(admin.clone())
        .create(&PostParams::default(), &serde_json::from_value(json!({"metadata": {"name": TECHNICAL_ID}})).unwrap())
        .await
        .unwrap();
    let kubeconfig = serde_yaml::to_string(shoot_env.kubeconfig()).unwrap();
    Api::<Secret>::namespaced(admin.clone(), TECHNICAL_ID)
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": pki::shoot_set::names::KUBECONFIG_ADMIN},
                                           "stringData": {(pki::data_keys::KUBECONFIG): kubeconfig}}))
            .unwrap(),
        )
        .await
        .unwrap();
    reconciled_shoot(&admin, "ms1", "local").await;
    // What an earlier version granted the managed gardenlet in the garden: it must go.
    let legacy_role: ClusterRole =
        serde_json::from_value(json!({"metadata": {"name": manifests::cluster_role_name("ms1")},
        "rules": [{"apiGroups": ["core.gardener.cloud"], "resources": ["shoots"], "verbs": ["get"]}]}))
        .unwrap();
    Api::<ClusterRole>::all(admin.clone()).create(&PostParams::default(), &legacy_role).await.unwrap();

    let managed: Api<ManagedSeed> = Api::namespaced(admin.clone(), "garden");
    let ms: ManagedSeed = serde_json::from_value(json!({
        "apiVersion": "seedmanagement.gardener.cloud/v1alpha1", "kind": "ManagedSeed",
        "metadata": {"name": "ms1", "namespace": "garden"},
        "spec": {"shoot": {"name": "ms1"}, "gardenlet": {"config": {
            "apiVersion": "gardenlet.config.gardener.cloud/v1alpha1", "kind": "GardenletConfiguration",
            "seedConfig": {"spec": {"provider": {"type": "local", "region": "local"},
                                    "networks": {"pods": "10.3.0.0/16", "services": "10.4.0.0/16"}}}}}}}))
    .unwrap();
    managed.create(&PostParams::default(), &ms).await.unwrap();

    let parent: GardenletConfig = serde_yaml::from_str(CONFIG).unwrap();
    let ctx = gardenlet::managedseed::Context {
        seed_name: "local".into(),
        garden: gardenlet.clone(),
        seed: gardenlet.clone(),
        parent: Arc::new(parent),
        endpoint: gardenlet::managedseed::GardenEndpoint {
            server: garden_env.server_url().to_string(),
            ca_pem: garden_env.ca_pem().to_string(),
        },
        image: "gardener-rs.local/gardenlet:v-test".into(),
        poll: Duration::from_millis(500),
    };
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(gardenlet::managedseed::run(
        ctx,
        2,
        async move {
            let _ = stop_rx.await;
        },
        Arc::new(AtomicBool::new(false)),
    ));

    // gardenlet in the shoot: its Deployment, configuration and garden kubeconfig.
    let deployments: Api<Deployment> = Api::namespaced(shoot_admin.clone(), "garden");
    let deployment = eventually("the gardenlet Deployment in the shoot", || async {
        deployments.get_opt("gardenlet").await.map_err(|e| e.to_string())?.ok_or("not yet".to_string())
    })
    .await;
    let container = &deployment.spec.unwrap().template.spec.unwrap().containers[0];
    assert_eq!(container.image.as_deref(), Some("gardener-rs.local/gardenlet:v-test"));
    let config_map = Api::<ConfigMap>::namespaced(shoot_admin.clone(), "garden").get("gardenlet-config").await.unwrap();
    let config: GardenletConfig = serde_yaml::from_str(&config_map.data.unwrap()["config.yaml"]).unwrap();
    assert_eq!(config.seed.name, "ms1");
    assert_eq!(config.seed.spec.networks.pods, "10.3.0.0/16");
    assert_eq!(config.control_plane_requests_percent, 20, "merged with the parent's");
    assert_eq!(config.garden_kubeconfig, None);
    let connection = config.garden_client_connection.clone().expect("the garden identity by CSR");
    assert_eq!(
        connection.bootstrap_kubeconfig,
        std::path::Path::new(gardenlet::managedseed::decide::GARDEN_KUBECONFIG_PATH)
    );
    assert_eq!(
        (connection.kubeconfig_secret.namespace.as_str(), connection.kubeconfig_secret.name.as_str()),
        ("garden", "gardenlet-kubeconfig")
    );
    let secret = Api::<Secret>::namespaced(shoot_admin.clone(), "garden")
        .get(manifests::GARDEN_KUBECONFIG_SECRET)
        .await
        .unwrap();
    // A token of the managed gardenlet's ServiceAccount that expires in 12 hours (the JWT's own
    // `exp`, and the Secret's annotation), read from a file the kubeconfig names.
    let expiration = secret.metadata.annotations.as_ref().unwrap()
        [gardenlet::managedseed::token::EXPIRATION_ANNOTATION]
        .parse::<k8s_openapi::jiff::Timestamp>()
        .unwrap();
    let data = secret.data.unwrap();
    let token = String::from_utf8(data[gardenlet::managedseed::token::TOKEN_KEY].0.clone()).unwrap();
    let claims = token.split('.').nth(1).unwrap();
    let claims: serde_json::Value = {
        use base64::Engine;
        serde_json::from_slice(&base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(claims).unwrap()).unwrap()
    };
    let now = k8s_openapi::jiff::Timestamp::now().as_second();
    let exp = claims["exp"].as_i64().unwrap();
    assert!((now + 11 * 3600..=now + 13 * 3600).contains(&exp), "the token expires in 12 h: {claims}");
    assert_eq!(expiration.as_second(), exp, "the annotation is the token's expiry");
    assert_eq!(claims["sub"], "system:serviceaccount:garden:gardenlet-ms1");
    assert!(
        Api::<Secret>::namespaced(admin.clone(), "garden").get_opt("gardenlet-ms1-token").await.unwrap().is_none(),
        "no token Secret is made for the managed gardenlet"
    );
    let token_file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(token_file.path(), &token).unwrap();
    let garden_kubeconfig = String::from_utf8(data["kubeconfig"].0.clone())
        .unwrap()
        .replace(gardenlet::managedseed::token::TOKEN_FILE, &token_file.path().to_string_lossy());
    assert!(!garden_kubeconfig.contains(&token), "the kubeconfig names the token file, it does not hold the token");
    let crds = Api::<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>::all(
        shoot_admin.clone(),
    );
    assert!(crds.get_opt("workers.extensions.gardener.cloud").await.unwrap().is_some(), "the extension CRDs");
    let role = Api::<ClusterRole>::all(shoot_admin.clone()).get(&manifests::cluster_role_name("ms1")).await.unwrap();
    assert!(!serde_json::to_string(&role.rules).unwrap().contains("\"shoots\""), "no garden rights in the shoot");

    // The bootstrap token can do nothing in the garden but ask for its seed's certificate: no
    // shoots, workloads, RBAC, other Seeds or tokens; the old broad ClusterRole is gone.
    let bootstrap_client =
        gardenlet::shoot::operation::clients::from_kubeconfig(&garden_kubeconfig, Duration::from_secs(30))
            .await
            .unwrap();
    eventually("the legacy garden ClusterRole deleted", || async {
        let left = Api::<ClusterRole>::all(admin.clone()).get_opt(&manifests::cluster_role_name("ms1")).await;
        if left.map_err(|e| e.to_string())?.is_none() { Ok(()) } else { Err("still there".to_string()) }
    })
    .await;
    let forbidden = Api::<Shoot>::all(bootstrap_client.clone()).list(&Default::default()).await;
    assert!(matches!(forbidden, Err(kube::Error::Api(ref s)) if s.code == 403), "{forbidden:?}");
    let forbidden =
        Api::<Deployment>::namespaced(bootstrap_client.clone(), "kube-system").list(&Default::default()).await;
    assert!(matches!(forbidden, Err(kube::Error::Api(ref s)) if s.code == 403), "{forbidden:?}");
    let forbidden = Api::<ClusterRole>::all(bootstrap_client.clone()).list(&Default::default()).await;
    assert!(matches!(forbidden, Err(kube::Error::Api(ref s)) if s.code == 403), "{forbidden:?}");
    let forbidden = Api::<Seed>::all(bootstrap_client.clone()).delete("local", &DeleteParams::default()).await;
    assert!(matches!(forbidden, Err(kube::Error::Api(ref s)) if s.code == 403), "{forbidden:?}");
    for account in ["gardenlet-ms1", "gardenlet"] {
        let forbidden = Api::<ServiceAccount>::namespaced(bootstrap_client.clone(), "garden")
            .create_token_request(account, &PostParams::default(), &Default::default())
            .await;
        assert!(matches!(forbidden, Err(kube::Error::Api(ref s)) if s.code == 403), "{account}: {forbidden:?}");
    }
    // It may bootstrap seed ms1, and no other (what the CSR approver asks).
    for (seed, allowed) in [("ms1", true), ("local", false)] {
        let groups = ["system:serviceaccounts", "system:serviceaccounts:garden", "system:authenticated"];
        let attributes = ("certificates.k8s.io", "certificatesigningrequests", "seedclient", seed);
        let answer =
            testenv::access::may(&admin, "system:serviceaccount:garden:gardenlet-ms1", &groups, "create", attributes);
        assert_eq!(answer.await.unwrap(), allowed, "seedclient {seed}");
    }

    // The managed gardenlet's start: a certificate for gardener.cloud:system:seed:ms1, its
    // kubeconfig written into the shoot as the shoot's gardenlet ServiceAccount.
    let (requesters, approver) = support::approver::start(admin.clone());
    let bootstrap_file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(bootstrap_file.path(), &garden_kubeconfig).unwrap();
    let shoot_gardenlet = shoot_env.client_as_service_account("garden", "gardenlet").await.unwrap();
    let bootstrap = gardenlet::bootstrap::Bootstrap {
        seed_name: "ms1".into(),
        connection: gardenlet::config::GardenClientConnection {
            bootstrap_kubeconfig: bootstrap_file.path().to_path_buf(),
            kubeconfig_secret: connection.kubeconfig_secret.clone(),
        },
        seed: shoot_gardenlet,
        timeout: Duration::from_secs(60),
    };
    let identity = bootstrap.identity().await.unwrap();
    assert_eq!(requesters.all(), ["system:serviceaccount:garden:gardenlet-ms1"]);
    assert_eq!(identity.certificate.common_name, "gardener.cloud:system:seed:ms1");
    let kubeconfig_secret = Api::<Secret>::namespaced(shoot_admin.clone(), "garden").get("gardenlet-kubeconfig").await;
    assert!(kubeconfig_secret.unwrap().data.unwrap().contains_key("kubeconfig"));
    approver.abort();
    let managed_garden = kube::Client::try_from(identity.config).unwrap();
    // Until the seed authorizer judges the seed's requests, RBAC stands in for it.
    let stand_in: ClusterRole = serde_json::from_value(json!({"metadata": {"name": "seed-authorizer-stand-in"},
        "rules": manifests::rules("ms1", Side::Garden)}))
    .unwrap();
    Api::<ClusterRole>::all(admin.clone()).create(&PostParams::default(), &stand_in).await.unwrap();
    let binding: ClusterRoleBinding = serde_json::from_value(json!({"metadata": {"name": "seed-authorizer-stand-in"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "seed-authorizer-stand-in"},
        "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "gardener.cloud:system:seed:ms1"}]}))
    .unwrap();
    Api::<ClusterRoleBinding>::all(admin.clone()).create(&PostParams::default(), &binding).await.unwrap();
    let seed_controller = gardenlet::seed::SeedController::new(
        managed_garden.clone(),
        config.seed.clone(),
        Duration::from_secs(30),
        api::common::Gardener { id: "ms1-1".into(), name: "gardenlet-ms1".into(), version: "test".into() },
    );
    let (seed_stop_tx, seed_stop_rx) = tokio::sync::oneshot::channel::<()>();
    let seed_task = tokio::spawn(seed_controller.run(async move {
        let _ = seed_stop_rx.await;
    }));
    let registered = eventually("SeedRegistered True", || async {
        let ms = managed.get("ms1").await.map_err(|e| e.to_string())?;
        match condition(&ms, "SeedRegistered") {
            Some((ConditionStatus::True, ..)) => Ok(ms),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    assert_eq!(condition(&registered, "ShootReconciled").unwrap().0, ConditionStatus::True);
    let sa_rv = Api::<ServiceAccount>::namespaced(admin.clone(), "garden")
        .get("gardenlet-ms1")
        .await
        .unwrap()
        .metadata
        .resource_version;
    let deployment_rv = deployments.get("gardenlet").await.unwrap().metadata.resource_version;
    let _ = seed_stop_tx.send(());
    seed_task.await.unwrap();
    // A reconcile of an unchanged ManagedSeed (an annotation wakes it) writes nothing.
    managed
        .patch("ms1", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"annotations": {"touch": "1"}}})))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(deployments.get("gardenlet").await.unwrap().metadata.resource_version, deployment_rv);
    assert_eq!(
        Api::<ServiceAccount>::namespaced(admin.clone(), "garden")
            .get("gardenlet-ms1")
            .await
            .unwrap()
            .metadata
            .resource_version,
        sa_rv
    );

    // A shoot scheduled to the new seed holds its deletion back.
    let shoots: Api<Shoot> = Api::namespaced(admin.clone(), "garden");
    let mut user = Shoot::new("user", Default::default());
    user.spec.seed_name = Some("ms1".into());
    user.spec.cloud_profile_name = Some("local".into());
    user.spec.region = "local".into();
    user.spec.provider.type_ = "local".into();
    user.spec.kubernetes.version = "1.20.2".into();
    shoots.create(&PostParams::default(), &user).await.unwrap();
    managed.delete("ms1", &DeleteParams::default()).await.unwrap();
    eventually("SeedInUse", || async {
        let ms = managed.get("ms1").await.map_err(|e| e.to_string())?;
        match condition(&ms, "SeedRegistered") {
            Some((ConditionStatus::False, reason, message))
                if reason == "SeedInUse" && message.contains("garden/user") =>
            {
                Ok(())
            }
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    let seeds: Api<Seed> = Api::all(admin.clone());
    assert!(seeds.get_opt("ms1").await.unwrap().is_some(), "the seed stays while a shoot uses it");
    shoots.delete("user", &DeleteParams::default()).await.unwrap();

    eventually("the ManagedSeed gone", || async {
        match managed.get_opt("ms1").await.map_err(|e| e.to_string())? {
            None => Ok(()),
            Some(ms) => Err(format!("{:?}", ms.status)),
        }
    })
    .await;
    assert!(seeds.get_opt("ms1").await.unwrap().is_none(), "the Seed is deleted");
    assert!(deployments.get_opt("gardenlet").await.unwrap().is_none(), "gardenlet left the shoot");
    assert!(
        Api::<ServiceAccount>::namespaced(admin.clone(), "garden").get_opt("gardenlet-ms1").await.unwrap().is_none()
    );
    assert!(
        Api::<ClusterRole>::all(admin.clone()).get_opt(&manifests::bootstrap_role_name("ms1")).await.unwrap().is_none()
    );
    assert!(Api::<Secret>::namespaced(admin.clone(), "garden").get_opt("gardenlet-ms1-token").await.unwrap().is_none());
    assert!(
        Api::<k8s_openapi::api::rbac::v1::Role>::namespaced(admin.clone(), "garden")
            .get_opt("gardener.cloud:system:gardenlet:ms1:leader-election")
            .await
            .unwrap()
            .is_none()
    );
    let crd = crds.get_opt("workers.extensions.gardener.cloud").await.unwrap();
    assert!(crd.is_none_or(|c| c.metadata.deletion_timestamp.is_some()), "the CRDs leave the shoot");

    let _ = stop_tx.send(());
    task.await.unwrap();
}
