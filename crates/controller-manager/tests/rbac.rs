//! The control-plane chart's RBAC for gardener-controller-manager on a real API server (with
//! kube-controller-manager's garbage collector): the admission webhook server runs as the
//! chart's ServiceAccount, registers its configurations owned by the chart's ClusterRole, and
//! refuses an invalid Shoot; removing that ClusterRole removes the configurations and the
//! certificate Secret. Take away the `bind` rule and a project's RoleBindings are refused with
//! `forbidden`, reported in an event. (Every other test of this crate runs its controllers as
//! the same ServiceAccount, so each flow proves the rules it needs.)

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use api::common::Subject;
use api::core::project::ProjectMember;
use api::core::{CloudProfile, Project, ProjectSpec, Shoot};
use k8s_openapi::api::admissionregistration::v1::{MutatingWebhookConfiguration, ValidatingWebhookConfiguration};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::rbac::v1::ClusterRole;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use support::*;

const ROLE: &str = "gardener.cloud:system:controller-manager";

#[tokio::test]
async fn the_chart_rbac_serves_admission_and_no_rule_can_go() {
    let options = testenv::Options {
        controller_manager: true,
        controllers: Some(vec!["namespace".into(), "garbagecollector".into()]),
        ..Default::default()
    };
    let (env, admin) = garden_with(options).await;
    namespace(&admin, "garden-dev").await;
    Api::<CloudProfile>::all(admin.clone())
        .create(&PostParams::default(), &admission::fixtures::cloud_profile())
        .await
        .unwrap();

    // The webhook server as the chart configures it, but reached on loopback.
    let as_cm = as_controller_manager(&env).await;
    let mut config = controller_manager::Config::default().admission;
    config.owner = Some(ROLE.into());
    let mut server = config.server();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    server.target = admission::server::ClientTarget::Url(format!("https://{addr}"));
    server.hosts = vec!["127.0.0.1".into()];
    let ready = Arc::new(AtomicBool::new(false));
    let registry = prometheus::Registry::new();
    let metrics = admission::server::Metrics::new(&registry).unwrap();
    let (_stop, stop) = ::runtime::runner::stop_signal();
    let r = ready.clone();
    let webhook = tokio::spawn(async move {
        if let Err(e) = admission::server::run(server, as_cm, listener, metrics, r, stop).await {
            panic!("the webhook server failed: {}", ::runtime::cli::report(&e));
        }
    });
    eventually("the webhook server to register", || async {
        if ready.load(Ordering::Acquire) { Ok(()) } else { Err("not ready".to_string()) }
    })
    .await;

    // The seed authorizer's caches list and watch BackupBuckets and BackupEntries; writing them
    // is the seeds' business, not the controller-manager's.
    let groups = ["system:serviceaccounts", "system:serviceaccounts:garden"];
    let may = |verb: &'static str, resource: &'static str| {
        let admin = admin.clone();
        async move {
            testenv::access::may(&admin, SA_USER, &groups, verb, ("core.gardener.cloud", resource, "", ""))
                .await
                .unwrap()
        }
    };
    for (verb, resource, allowed) in [
        ("watch", "backupentries", true),
        ("list", "backupbuckets", true),
        ("get", "backupentries", false),
        ("patch", "backupentries", false),
        ("delete", "backupentries", false),
        ("create", "backupbuckets", false),
        ("delete", "backupbuckets", false),
    ] {
        assert_eq!(may(verb, resource).await, allowed, "{verb} {resource}");
    }

    let role_uid = Api::<ClusterRole>::all(admin.clone()).get(ROLE).await.unwrap().uid().unwrap();
    let validating = Api::<ValidatingWebhookConfiguration>::all(admin.clone());
    let mutating = Api::<MutatingWebhookConfiguration>::all(admin.clone());
    let secrets = Api::<Secret>::namespaced(admin.clone(), RELEASE_NS);
    let owners = [
        validating.get("gardener-admission").await.unwrap().owner_references().to_vec(),
        mutating.get("gardener-admission").await.unwrap().owner_references().to_vec(),
        secrets.get("gardener-admission-tls").await.unwrap().owner_references().to_vec(),
    ];
    for refs in owners {
        assert_eq!(refs.iter().map(|o| o.uid.as_str()).collect::<Vec<_>>(), [role_uid.as_str()]);
    }
    // Only its own configurations: another component's webhooks are refused and stay as they were.
    let foreign = "someone-elses-webhooks";
    let meta = || kube::api::ObjectMeta { name: Some(foreign.into()), ..Default::default() };
    validating
        .create(&PostParams::default(), &ValidatingWebhookConfiguration { metadata: meta(), webhooks: None })
        .await
        .unwrap();
    mutating
        .create(&PostParams::default(), &MutatingWebhookConfiguration { metadata: meta(), webhooks: None })
        .await
        .unwrap();
    let cm = as_controller_manager(&env).await;
    let take_over = Patch::Merge(serde_json::json!({"metadata": {"labels": {"taken": "over"}}}));
    let refused = Api::<ValidatingWebhookConfiguration>::all(cm.clone())
        .patch(foreign, &PatchParams::default(), &take_over)
        .await;
    assert!(matches!(refused, Err(kube::Error::Api(ref s)) if s.code == 403), "{refused:?}");
    let refused =
        Api::<MutatingWebhookConfiguration>::all(cm).patch(foreign, &PatchParams::default(), &take_over).await;
    assert!(matches!(refused, Err(kube::Error::Api(ref s)) if s.code == 403), "{refused:?}");
    assert!(validating.get(foreign).await.unwrap().labels().get("taken").is_none());
    assert!(mutating.get(foreign).await.unwrap().labels().get("taken").is_none());
    // The ControllerDeployment CRD converts through this server (the chart allows that patch).
    let crds = Api::<CustomResourceDefinition>::all(admin.clone());
    let crd = crds.get("controllerdeployments.core.gardener.cloud").await.unwrap();
    let client_config = crd.spec.conversion.and_then(|c| c.webhook).and_then(|w| w.client_config).unwrap();
    assert_eq!(client_config.url, Some(format!("https://{addr}/convert")));
    assert!(client_config.ca_bundle.is_some());
    let mut bad = admission::fixtures::shoot();
    bad.spec.region = "mars".into();
    let refused = Api::<Shoot>::namespaced(admin.clone(), "garden-dev").create(&PostParams::default(), &bad).await;
    match refused {
        Err(kube::Error::Api(s)) => assert!(s.message.contains("spec.region"), "{}", s.message),
        other => panic!("an invalid shoot must be refused by the webhook: {other:?}"),
    }

    // Without `bind` on the project ClusterRoles, the project's RoleBindings are forbidden.
    let _running = start(&env, controller_manager::Config::default()).await;
    let roles = Api::<ClusterRole>::all(admin.clone());
    let mut role = roles.get(ROLE).await.unwrap();
    role.rules.as_mut().unwrap().retain(|r| !r.verbs.contains(&"bind".to_string()));
    role.metadata.managed_fields = None;
    roles.patch(ROLE, &PatchParams::apply("rbac-test").force(), &Patch::Apply(&role)).await.unwrap();
    let owner = Subject {
        api_group: Some("rbac.authorization.k8s.io".into()),
        kind: "User".into(),
        name: "alice".into(),
        namespace: None,
    };
    let spec = ProjectSpec {
        owner: Some(owner.clone()),
        members: vec![ProjectMember { subject: owner, role: "admin".into(), roles: vec![] }],
        ..Default::default()
    };
    Api::<Project>::all(admin.clone()).create(&PostParams::default(), &Project::new("p", spec)).await.unwrap();
    let note = eventually("an event saying the RoleBinding was forbidden", || async {
        let notes = event_notes(&admin, "", "p", "ApplyRoleBindingFailed").await;
        notes.into_iter().find(|n| n.contains("forbidden")).ok_or_else(|| "no such event yet".to_string())
    })
    .await;
    assert!(note.contains(SA_USER), "{note}");

    // The chart's ClusterRole goes (as with `helm uninstall`): the garbage collector removes
    // what the webhook server registered, so no fail-closed webhook is left behind.
    webhook.abort();
    roles.delete(ROLE, &DeleteParams::default()).await.unwrap();
    eventually("the webhook configurations and the Secret to be collected", || async {
        let left = (
            validating.get_opt("gardener-admission").await.unwrap().is_some(),
            mutating.get_opt("gardener-admission").await.unwrap().is_some(),
            secrets.get_opt("gardener-admission-tls").await.unwrap().is_some(),
        );
        if left == (false, false, false) { Ok(()) } else { Err(format!("still there: {left:?}")) }
    })
    .await;
}
