//! The protection controllers against a real kube-apiserver: a CloudProfile and a SecretBinding
//! used by a Shoot, and the Secret and Quota a SecretBinding refers to, carry a finalizer; their
//! deletion waits (with a Warning event naming the users) until nothing uses them.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use api::common::{ObjectReference, SecretReference};
use api::core::quota::QuotaScope;
use api::core::{CloudProfile, Quota, QuotaSpec, SecretBinding, SecretBindingFields, Shoot};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{DeleteParams, PostParams};
use kube::{Api, Resource, ResourceExt};
use support::*;

const NS: &str = "garden-dev";

async fn finalizers<K>(api: &Api<K>, name: &str) -> Result<Option<Vec<String>>, String>
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    Ok(api.get_opt(name).await.map_err(|e| e.to_string())?.map(|o| o.finalizers().to_vec()))
}

async fn wait_finalizers<K>(what: &str, api: &Api<K>, name: &str, expected: Option<&[&str]>)
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    eventually(what, || async {
        let got = finalizers(api, name).await?;
        let want = expected.map(|e| e.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        if got == want { Ok(()) } else { Err(format!("{got:?}")) }
    })
    .await;
}

#[tokio::test]
async fn objects_in_use_carry_a_finalizer_and_are_deleted_only_when_unused() {
    let (env, client) = garden().await;
    namespace(&client, NS).await;
    let profiles: Api<CloudProfile> = Api::all(client.clone());
    let bindings: Api<SecretBinding> = Api::namespaced(client.clone(), NS);
    let secrets: Api<Secret> = Api::namespaced(client.clone(), NS);
    let quotas: Api<Quota> = Api::namespaced(client.clone(), NS);
    let mut profile = CloudProfile::new("local", Default::default());
    profile.spec.type_ = "local".into();
    profiles.create(&PostParams::default(), &profile).await.unwrap();
    let secret =
        Secret { metadata: ObjectMeta { name: Some("creds".into()), ..Default::default() }, ..Default::default() };
    secrets.create(&PostParams::default(), &secret).await.unwrap();
    let quota = Quota::new(
        "q",
        QuotaSpec { scope: QuotaScope { kind: "Project".into(), ..Default::default() }, ..Default::default() },
    );
    quotas.create(&PostParams::default(), &quota).await.unwrap();
    let fields = SecretBindingFields {
        secret_ref: SecretReference { name: "creds".into(), namespace: None },
        quotas: vec![ObjectReference { name: "q".into(), ..Default::default() }],
        provider: None,
    };
    bindings.create(&PostParams::default(), &SecretBinding::new("sb", fields)).await.unwrap();

    let running = start(&env, controller_manager::Config::default()).await;
    wait_finalizers("the Secret to be protected", &secrets, "creds", Some(&["gardener.cloud/gardener"])).await;
    wait_finalizers("the Quota to be protected", &quotas, "q", Some(&["gardener"])).await;
    assert_eq!(finalizers(&profiles, "local").await.unwrap(), Some(vec![]), "unused");
    assert_eq!(finalizers(&bindings, "sb").await.unwrap(), Some(vec![]), "unused");

    let mut app = shoot("app", NS);
    app.spec.secret_binding_name = Some("sb".into());
    create_shoot(&client, &app).await;
    wait_finalizers("the CloudProfile to be protected", &profiles, "local", Some(&["gardener"])).await;
    wait_finalizers("the SecretBinding to be protected", &bindings, "sb", Some(&["gardener"])).await;

    profiles.delete("local", &DeleteParams::default()).await.unwrap();
    bindings.delete("sb", &DeleteParams::default()).await.unwrap();
    for (ns, name) in [("", "local"), (NS, "sb")] {
        eventually(&format!("the deletion of {name} to be blocked and explained"), || async {
            let notes = event_notes(&client, ns, name, "DeletionBlocked").await;
            if notes.iter().any(|n| n.contains("Shoot garden-dev/app")) { Ok(()) } else { Err(format!("{notes:?}")) }
        })
        .await;
    }
    assert!(profiles.get("local").await.unwrap().metadata.deletion_timestamp.is_some());
    assert!(bindings.get("sb").await.unwrap().metadata.deletion_timestamp.is_some());

    Api::<Shoot>::namespaced(client.clone(), NS).delete("app", &DeleteParams::default()).await.unwrap();
    wait_finalizers("the CloudProfile to be deleted", &profiles, "local", None).await;
    wait_finalizers("the SecretBinding to be deleted", &bindings, "sb", None).await;
    wait_finalizers("the Secret to be released", &secrets, "creds", Some(&[])).await;
    wait_finalizers("the Quota to be released", &quotas, "q", Some(&[])).await;
    for controller in controller_manager::protection::CONTROLLERS {
        assert_eq!(running.metrics.all_errors(controller), 0, "{}", running.metrics.render());
    }
}

/// A Seed with a Shoot on it, and a ControllerRegistration (with its ControllerDeployment) that
/// the seed's ControllerInstallation installs, carry the finalizer; deleting them waits until
/// the shoot (and with it the installation) is gone.
#[tokio::test]
async fn seeds_and_controller_registrations_in_use_wait_for_their_users() {
    use api::core::{ControllerDeployment, ControllerInstallation, ControllerRegistration, Seed};
    let (env, client) = garden().await;
    namespace(&client, NS).await;
    let seed: Seed = serde_json::from_value(serde_json::json!({
        "apiVersion": "core.gardener.cloud/v1beta1", "kind": "Seed",
        "metadata": {"name": "local"},
        "spec": {"provider": {"type": "local", "region": "local"}, "networks": {"pods": "10.1.0.0/16", "services": "10.2.0.0/16"}, "dns": {}}
    }))
    .unwrap();
    let seeds = Api::<Seed>::all(client.clone());
    seeds.create(&PostParams::default(), &seed).await.unwrap();
    let deployment: ControllerDeployment = serde_json::from_value(serde_json::json!({
        "apiVersion": "core.gardener.cloud/v1beta1", "kind": "ControllerDeployment",
        "metadata": {"name": "provider-local-chart"}, "type": "helm"
    }))
    .unwrap();
    let deployments = Api::<ControllerDeployment>::all(client.clone());
    deployments.create(&PostParams::default(), &deployment).await.unwrap();
    let registration: ControllerRegistration = serde_json::from_value(serde_json::json!({
        "apiVersion": "core.gardener.cloud/v1beta1", "kind": "ControllerRegistration",
        "metadata": {"name": "provider-local"},
        "spec": {"resources": [{"kind": "Infrastructure", "type": "local"}],
                 "deployment": {"deploymentRefs": [{"name": "provider-local-chart"}]}}
    }))
    .unwrap();
    let registrations = Api::<ControllerRegistration>::all(client.clone());
    registrations.create(&PostParams::default(), &registration).await.unwrap();
    let _running = start(&env, controller_manager::Config::default()).await;

    let mut app = shoot("app", NS);
    app.spec.seed_name = Some("local".into());
    create_shoot(&client, &app).await;
    let gardener = Some(&["gardener"][..]);
    wait_finalizers("the seed in use to be protected", &seeds, "local", gardener).await;
    // The installation controller installs provider-local for the shoot on the seed.
    wait_finalizers("the registration in use to be protected", &registrations, "provider-local", gardener).await;
    wait_finalizers("the deployment in use to be protected", &deployments, "provider-local-chart", gardener).await;

    seeds.delete("local", &DeleteParams::default()).await.unwrap();
    registrations.delete("provider-local", &DeleteParams::default()).await.unwrap();
    eventually("a DeletionBlocked event naming the shoot on the seed", || async {
        let notes = event_notes(&client, "", "local", "DeletionBlocked").await;
        notes.into_iter().find(|n| n.contains("Shoot garden-dev/app")).ok_or_else(|| "none yet".to_string())
    })
    .await;
    assert!(seeds.get("local").await.is_ok(), "the seed waits for its shoot");
    assert!(registrations.get("provider-local").await.is_ok(), "the registration waits for its installation");

    // The shoot goes; nothing needs the installation (the seed is being deleted), so it goes,
    // and with it the registration; the seed follows.
    Api::<Shoot>::namespaced(client.clone(), NS).delete("app", &DeleteParams::default()).await.unwrap();
    wait_finalizers("the seed to be deleted", &seeds, "local", None).await;
    let installations = Api::<ControllerInstallation>::all(client.clone());
    eventually("the installation to be deleted", || async {
        let left = installations.list(&Default::default()).await.map_err(|e| e.to_string())?.items.len();
        if left == 0 { Ok(()) } else { Err(format!("{left} left")) }
    })
    .await;
    wait_finalizers("the registration to be deleted", &registrations, "provider-local", None).await;
    // The deployment is no longer used by anything: its finalizer goes, so it can be deleted.
    wait_finalizers("the unused deployment to lose its finalizer", &deployments, "provider-local-chart", Some(&[]))
        .await;
}

/// A CredentialsBinding used by a Shoot carries the finalizer; its deletion waits, with the
/// user named, until the shoot is gone.
#[tokio::test]
async fn a_credentials_binding_in_use_waits_for_its_shoot() {
    use api::security::CredentialsBinding;
    let (env, client) = garden().await;
    namespace(&client, NS).await;
    let bindings: Api<CredentialsBinding> = Api::namespaced(client.clone(), NS);
    let binding: CredentialsBinding = serde_json::from_value(serde_json::json!({
        "apiVersion": "security.gardener.cloud/v1alpha1", "kind": "CredentialsBinding",
        "metadata": {"name": "cb"},
        "provider": {"type": "local"},
        "credentialsRef": {"apiVersion": "v1", "kind": "Secret", "name": "creds", "namespace": NS},
    }))
    .unwrap();
    bindings.create(&PostParams::default(), &binding).await.unwrap();
    let _running = start(&env, controller_manager::Config::default()).await;

    let mut app = shoot("app", NS);
    app.spec.secret_binding_name = None;
    app.spec.credentials_binding_name = Some("cb".into());
    create_shoot(&client, &app).await;
    wait_finalizers("the CredentialsBinding to be protected", &bindings, "cb", Some(&["gardener"])).await;
    bindings.delete("cb", &DeleteParams::default()).await.unwrap();
    eventually("the deletion of cb to be blocked and explained", || async {
        let notes = event_notes(&client, NS, "cb", "DeletionBlocked").await;
        if notes.iter().any(|n| n.contains("Shoot garden-dev/app")) { Ok(()) } else { Err(format!("{notes:?}")) }
    })
    .await;
    assert!(bindings.get("cb").await.unwrap().metadata.deletion_timestamp.is_some());

    Api::<Shoot>::namespaced(client.clone(), NS).delete("app", &DeleteParams::default()).await.unwrap();
    wait_finalizers("the CredentialsBinding to be deleted", &bindings, "cb", None).await;
}

/// The Secret, WorkloadIdentity and Quota that CredentialsBindings name carry a finalizer while
/// the bindings exist; deleting one waits, naming the binding, until the binding is gone.
#[tokio::test]
async fn credentials_and_quotas_named_by_credentials_bindings_are_protected() {
    use api::security::{CredentialsBinding, WorkloadIdentity};
    let (env, client) = garden().await;
    namespace(&client, NS).await;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), NS);
    let identities: Api<WorkloadIdentity> = Api::namespaced(client.clone(), NS);
    let quotas: Api<Quota> = Api::namespaced(client.clone(), NS);
    let bindings: Api<CredentialsBinding> = Api::namespaced(client.clone(), NS);
    let secret =
        Secret { metadata: ObjectMeta { name: Some("creds".into()), ..Default::default() }, ..Default::default() };
    secrets.create(&PostParams::default(), &secret).await.unwrap();
    let identity: WorkloadIdentity = serde_json::from_value(serde_json::json!({
        "apiVersion": "security.gardener.cloud/v1alpha1", "kind": "WorkloadIdentity",
        "metadata": {"name": "wi"},
        "spec": {"audiences": ["local"], "targetSystem": {"type": "local"}}
    }))
    .unwrap();
    identities.create(&PostParams::default(), &identity).await.unwrap();
    let quota = Quota::new(
        "q",
        QuotaSpec { scope: QuotaScope { kind: "Project".into(), ..Default::default() }, ..Default::default() },
    );
    quotas.create(&PostParams::default(), &quota).await.unwrap();
    for (name, kind, api_version, target) in [
        ("by-secret", "Secret", "v1", "creds"),
        ("by-identity", "WorkloadIdentity", "security.gardener.cloud/v1alpha1", "wi"),
    ] {
        let binding: CredentialsBinding = serde_json::from_value(serde_json::json!({
            "apiVersion": "security.gardener.cloud/v1alpha1", "kind": "CredentialsBinding",
            "metadata": {"name": name},
            "provider": {"type": "local"},
            "credentialsRef": {"apiVersion": api_version, "kind": kind, "name": target, "namespace": NS},
            "quotas": [{"name": "q", "namespace": NS}]
        }))
        .unwrap();
        bindings.create(&PostParams::default(), &binding).await.unwrap();
    }
    let _running = start(&env, controller_manager::Config::default()).await;

    let finalizer = Some(&["gardener.cloud/gardener"][..]);
    wait_finalizers("the Secret to be protected", &secrets, "creds", finalizer).await;
    wait_finalizers("the WorkloadIdentity to be protected", &identities, "wi", finalizer).await;
    wait_finalizers("the Quota to be protected", &quotas, "q", Some(&["gardener"])).await;

    identities.delete("wi", &DeleteParams::default()).await.unwrap();
    eventually("the deletion of wi to be blocked and explained", || async {
        let notes = event_notes(&client, NS, "wi", "DeletionBlocked").await;
        let named = notes.iter().any(|n| n.contains("CredentialsBinding garden-dev/by-identity"));
        if named { Ok(()) } else { Err(format!("{notes:?}")) }
    })
    .await;
    assert!(identities.get("wi").await.unwrap().metadata.deletion_timestamp.is_some());

    // Bindings no Shoot uses have no finalizer of their own; deleting them frees what they named.
    bindings.delete("by-identity", &DeleteParams::default()).await.unwrap();
    wait_finalizers("the WorkloadIdentity to be deleted", &identities, "wi", None).await;
    assert!(quotas.get("q").await.unwrap().finalizers().contains(&"gardener".to_string()), "by-secret still lists q");
    bindings.delete("by-secret", &DeleteParams::default()).await.unwrap();
    wait_finalizers("the Secret to be released", &secrets, "creds", Some(&[])).await;
    wait_finalizers("the Quota to be released", &quotas, "q", Some(&[])).await;
}

/// An ExposureClass and a NamespacedCloudProfile that a Shoot names, and the CloudProfile that
/// is the NamespacedCloudProfile's parent, carry the finalizer; deletions wait, naming the users.
#[tokio::test]
async fn exposure_classes_and_namespaced_cloud_profiles_in_use_wait_for_their_users() {
    use api::core::{ExposureClass, NamespacedCloudProfile};
    let (env, client) = garden().await;
    namespace(&client, NS).await;
    let profiles: Api<CloudProfile> = Api::all(client.clone());
    let mut profile = CloudProfile::new("local", Default::default());
    profile.spec.type_ = "local".into();
    profiles.create(&PostParams::default(), &profile).await.unwrap();
    let children: Api<NamespacedCloudProfile> = Api::namespaced(client.clone(), NS);
    let child: NamespacedCloudProfile = serde_json::from_value(serde_json::json!({
        "apiVersion": "core.gardener.cloud/v1beta1", "kind": "NamespacedCloudProfile",
        "metadata": {"name": "custom"}, "spec": {"parent": {"kind": "CloudProfile", "name": "local"}}
    }))
    .unwrap();
    children.create(&PostParams::default(), &child).await.unwrap();
    let classes: Api<ExposureClass> = Api::all(client.clone());
    let class: ExposureClass = serde_json::from_value(serde_json::json!({
        "apiVersion": "core.gardener.cloud/v1beta1", "kind": "ExposureClass",
        "metadata": {"name": "internet"}, "handler": "internet-config"
    }))
    .unwrap();
    classes.create(&PostParams::default(), &class).await.unwrap();
    let _running = start(&env, controller_manager::Config::default()).await;

    let mut app = shoot("app", NS);
    app.spec.cloud_profile_name = None;
    app.spec.cloud_profile = Some(api::core::shoot::CloudProfileReference {
        kind: Some("NamespacedCloudProfile".into()),
        name: "custom".into(),
    });
    app.spec.exposure_class_name = Some("internet".into());
    create_shoot(&client, &app).await;
    let gardener = Some(&["gardener"][..]);
    wait_finalizers("the ExposureClass to be protected", &classes, "internet", gardener).await;
    wait_finalizers("the NamespacedCloudProfile to be protected", &children, "custom", gardener).await;
    wait_finalizers("the parent CloudProfile to be protected", &profiles, "local", gardener).await;

    classes.delete("internet", &DeleteParams::default()).await.unwrap();
    profiles.delete("local", &DeleteParams::default()).await.unwrap();
    eventually("both deletions to be blocked and explained", || async {
        let class = event_notes(&client, "", "internet", "DeletionBlocked").await;
        let parent = event_notes(&client, "", "local", "DeletionBlocked").await;
        let explained = class.iter().any(|n| n.contains("Shoot garden-dev/app"))
            && parent.iter().any(|n| n.contains("NamespacedCloudProfile garden-dev/custom"));
        if explained { Ok(()) } else { Err(format!("{class:?} {parent:?}")) }
    })
    .await;

    Api::<Shoot>::namespaced(client.clone(), NS).delete("app", &DeleteParams::default()).await.unwrap();
    wait_finalizers("the ExposureClass to be deleted", &classes, "internet", None).await;
    wait_finalizers("the unused NamespacedCloudProfile to lose its finalizer", &children, "custom", Some(&[])).await;
    children.delete("custom", &DeleteParams::default()).await.unwrap();
    wait_finalizers("the parent CloudProfile to be deleted", &profiles, "local", None).await;
}
