//! Shared pieces of the real-apiserver tests: a control plane with the CRDs, the project
//! namespace, the `local` CloudProfile and the example ControllerRegistrations; the webhook server running in-process on
//! 127.0.0.1 with its own certificate and registered webhook configurations; clients that
//! impersonate other users; and a bounded polling helper.

#![allow(dead_code)]

use admission::server::{self, ClientTarget, Metrics, ServerConfig};
use api::core::{CloudProfile, ControllerRegistration};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::PostParams;
use kube::config::KubeConfigOptions;
use kube::{Api, Client};
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use testenv::TestEnv;

pub const NS: &str = "garden-dev";
/// The namespace the webhook server runs in (its certificate Secret is there).
pub const SERVER_NS: &str = "garden";
pub const TIMEOUT: Duration = Duration::from_secs(60);

/// A fresh control plane with every CRD, the project namespace, the `local` CloudProfile and the
/// ControllerRegistrations of the example objects' extension types.
pub async fn garden() -> (TestEnv, Client) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("admission=info"));
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_test_writer().try_init();
    let env = TestEnv::start_with(testenv::Options { crds: api::crds::all(), ..Default::default() })
        .await
        .unwrap_or_else(|e| panic!("starting the test control plane: {e}"));
    let client = env.client().await.unwrap();
    for name in [NS, SERVER_NS] {
        let ns =
            Namespace { metadata: ObjectMeta { name: Some(name.into()), ..Default::default() }, ..Default::default() };
        Api::<Namespace>::all(client.clone()).create(&PostParams::default(), &ns).await.unwrap();
    }
    Api::<CloudProfile>::all(client.clone())
        .create(&PostParams::default(), &admission::fixtures::cloud_profile())
        .await
        .unwrap();
    // The extension types the example objects name are served (crate `admission::extensions`).
    for registration in admission::fixtures::controller_registrations() {
        Api::<ControllerRegistration>::all(client.clone()).create(&PostParams::default(), &registration).await.unwrap();
    }
    (env, client)
}

/// The webhook server running in this process; stopped when dropped.
pub struct Webhook {
    pub addr: std::net::SocketAddr,
    pub metrics: Metrics,
    pub registry: prometheus::Registry,
    _stop: futures::channel::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Webhook {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub fn config_for(addr: std::net::SocketAddr) -> ServerConfig {
    let mut config = ServerConfig::in_cluster(SERVER_NS, "gardener-admission");
    config.bind_address = addr;
    config.target = ClientTarget::Url(format!("https://{addr}"));
    config.hosts = vec!["127.0.0.1".into()];
    config
}

/// The user the webhook server runs as in the tests: bound to exactly the documented RBAC
/// rules ([`admission::server::rbac::rules`]), so a missing permission fails the tests.
pub const SERVER_USER: &str = "system:serviceaccount:garden:gardener-admission";

/// Binds [`SERVER_USER`] to exactly the documented rules ([`admission::server::rbac`]) and
/// returns a client acting as that user.
pub async fn server_client(env: &TestEnv, client: &Client) -> Client {
    let role = ClusterRole {
        metadata: ObjectMeta { name: Some("gardener-admission".into()), ..Default::default() },
        rules: Some(admission::server::rbac::rules()),
        ..Default::default()
    };
    Api::<ClusterRole>::all(client.clone()).create(&PostParams::default(), &role).await.unwrap();
    let binding = ClusterRoleBinding {
        metadata: ObjectMeta { name: Some("gardener-admission".into()), ..Default::default() },
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "ClusterRole".into(),
            name: "gardener-admission".into(),
        },
        subjects: Some(vec![Subject {
            kind: "User".into(),
            name: SERVER_USER.into(),
            api_group: Some("rbac.authorization.k8s.io".into()),
            ..Default::default()
        }]),
    };
    Api::<ClusterRoleBinding>::all(client.clone()).create(&PostParams::default(), &binding).await.unwrap();
    let secret = ServerConfig::in_cluster(SERVER_NS, "gardener-admission").certificate_secret.name;
    let role = Role {
        metadata: ObjectMeta { name: Some("gardener-admission".into()), ..Default::default() },
        rules: Some(admission::server::rbac::secret_rules(&secret)),
    };
    Api::<Role>::namespaced(client.clone(), SERVER_NS).create(&PostParams::default(), &role).await.unwrap();
    let binding = RoleBinding {
        metadata: ObjectMeta { name: Some("gardener-admission".into()), ..Default::default() },
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "Role".into(),
            name: "gardener-admission".into(),
        },
        subjects: binding.subjects,
    };
    Api::<RoleBinding>::namespaced(client.clone(), SERVER_NS).create(&PostParams::default(), &binding).await.unwrap();
    impersonating(env, SERVER_USER, &["system:serviceaccounts", "system:authenticated"]).await
}

/// Starts the server on a free loopback port with `adjust`ed settings, as [`SERVER_USER`] with
/// only its documented permissions, and waits until it has registered its webhook
/// configurations.
pub async fn start_webhook(env: &TestEnv, client: &Client, adjust: impl FnOnce(&mut ServerConfig)) -> Webhook {
    let client = &server_client(env, client).await;
    start_as(client, adjust).await
}

/// Starts the server as `client` (see [`server_client`]) and waits until it has registered.
pub async fn start_as(client: &Client, adjust: impl FnOnce(&mut ServerConfig)) -> Webhook {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut config = config_for(addr);
    adjust(&mut config);
    let registry = prometheus::Registry::new();
    let metrics = Metrics::new(&registry).unwrap();
    let ready = Arc::new(AtomicBool::new(false));
    let (stop_tx, stop) = runtime::runner::stop_signal();
    let (c, m, r) = (client.clone(), metrics.clone(), ready.clone());
    let task = tokio::spawn(async move {
        if let Err(e) = server::run(config, c, listener, m, r, stop).await {
            panic!("the webhook server failed: {}", runtime::cli::report(&e));
        }
    });
    eventually("the webhook server to register", || async {
        if ready.load(Ordering::Acquire) { Ok(()) } else { Err("not ready".to_string()) }
    })
    .await;
    Webhook { addr, metrics, registry, _stop: stop_tx, task }
}

/// A client that impersonates `user` in `groups` (the admin may impersonate anyone).
pub async fn impersonating(env: &TestEnv, user: &str, groups: &[&str]) -> Client {
    let mut config =
        kube::Config::from_custom_kubeconfig(env.kubeconfig().clone(), &KubeConfigOptions::default()).await.unwrap();
    config.auth_info.impersonate = Some(user.into());
    config.auth_info.impersonate_groups = Some(groups.iter().map(|g| (*g).to_string()).collect());
    Client::try_from(config).unwrap()
}

/// Lets `user` do everything with the garden's resources (authorization is not what these
/// tests are about; admission is).
pub async fn grant_all(client: &Client, user: &str) {
    let name = format!("all-{user}");
    let role = ClusterRole {
        metadata: ObjectMeta { name: Some(name.clone()), ..Default::default() },
        rules: Some(vec![PolicyRule {
            api_groups: Some(vec!["*".into()]),
            resources: Some(vec!["*".into()]),
            verbs: vec!["*".into()],
            ..Default::default()
        }]),
        ..Default::default()
    };
    Api::<ClusterRole>::all(client.clone()).create(&PostParams::default(), &role).await.unwrap();
    let binding = ClusterRoleBinding {
        metadata: ObjectMeta { name: Some(name.clone()), ..Default::default() },
        role_ref: RoleRef { api_group: "rbac.authorization.k8s.io".into(), kind: "ClusterRole".into(), name },
        subjects: Some(vec![Subject {
            kind: "User".into(),
            name: user.into(),
            api_group: Some("rbac.authorization.k8s.io".into()),
            ..Default::default()
        }]),
    };
    Api::<ClusterRoleBinding>::all(client.clone()).create(&PostParams::default(), &binding).await.unwrap();
    // The authorizer learns of new bindings through its own watch: wait until it applies this one.
    eventually("the new permissions to apply", || async {
        use k8s_openapi::api::authorization::v1::{ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec};
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: Some(user.into()),
                resource_attributes: Some(ResourceAttributes {
                    group: Some("core.gardener.cloud".into()),
                    resource: Some("shoots".into()),
                    verb: Some("patch".into()),
                    namespace: Some(NS.into()),
                    ..Default::default()
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        let answer = Api::<SubjectAccessReview>::all(client.clone())
            .create(&PostParams::default(), &review)
            .await
            .map_err(|e| e.to_string())?;
        if answer.status.is_some_and(|s| s.allowed) { Ok(()) } else { Err("not yet allowed".to_string()) }
    })
    .await;
}

/// The message of an API error, or a panic naming what was expected.
pub fn refusal<T: std::fmt::Debug>(result: Result<T, kube::Error>, what: &str) -> String {
    match result {
        Err(kube::Error::Api(status)) => status.message.clone(),
        other => panic!("{what}: expected a refusal, got {other:?}"),
    }
}

/// Polls `probe` every 100 ms until it returns `Ok`, failing with its last error after [`TIMEOUT`].
pub async fn eventually<T, Fut: Future<Output = Result<T, String>>>(what: &str, probe: impl FnMut() -> Fut) -> T {
    testenv::poll::until(what, TIMEOUT, Duration::from_millis(100), probe).await
}
