//! The seed authorizer and SeedRestriction on a real kube-apiserver: the admission server runs
//! in this process on a loopback listener bound first; the API server is started with
//! `--authorization-mode=RBAC,Webhook` and a webhook kubeconfig pointing at
//! `/webhooks/auth/seed` (no caching of decisions). Seeds authenticate with client
//! certificates (CN `gardener.cloud:system:seed:<seed>`, O `gardener.cloud:system:seeds`) and
//! hold no RBAC, so whatever the authorizer does not allow is refused.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

mod support;

use admission::server::{self, Metrics, certs, shared};
use api::core::seed::{SeedNetworks, SeedProvider};
use api::core::{SecretBinding, Seed, SeedSpec, Shoot, ShootState};
use api::helpers::seed_identity;
use base64::Engine;
use k8s_openapi::api::authorization::v1::{ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use support::{NS, SERVER_NS, eventually};
use testenv::{Options, TestEnv};

/// The admission server, its API server wired to the authorizer, and the admin client.
struct Garden {
    env: TestEnv,
    admin: Client,
    _webhook: tokio::task::JoinHandle<()>,
    _stop: futures::channel::oneshot::Sender<()>,
    _dir: Dir,
}

/// A directory removed when dropped (the webhook kubeconfig).
struct Dir(std::path::PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The authorization webhook's kubeconfig: the server at `url`, trusted by `ca_pem`.
fn webhook_kubeconfig(url: &str, ca_pem: &str) -> String {
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: seed-authorizer\n  cluster:\n    server: {url}\n    certificate-authority-data: {ca}\nusers:\n- name: kube-apiserver\n  user: {{}}\ncontexts:\n- name: webhook\n  context:\n    cluster: seed-authorizer\n    user: kube-apiserver\ncurrent-context: webhook\n"
    )
}

/// Binds the listener, issues the server's certificate (so the API server can be told its CA
/// before the server runs), starts the API server with the webhook, stores the certificate in
/// the Secret the server adopts, creates `setup`'s objects and then starts the server.
async fn garden<F: std::future::Future<Output = ()>>(setup: impl FnOnce(Client) -> F) -> Garden {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("admission=info"));
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_test_writer().try_init();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let config = support::config_for(addr);
    let issued = shared::Issued {
        current: certs::issue(&config.hosts, time::OffsetDateTime::now_utc(), config.certificate_validity).unwrap(),
        previous_ca: None,
    };
    let dir = std::env::temp_dir().join(format!("seed-authorizer-{}-{}", std::process::id(), addr.port()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("webhook.kubeconfig");
    let url = format!("https://{addr}{}", admission::seedauth::PATH);
    std::fs::write(&file, webhook_kubeconfig(&url, &issued.current.ca_pem)).unwrap();
    let options = Options {
        extra_apiserver_args: vec![
            "--authorization-mode=RBAC,Webhook".into(),
            format!("--authorization-webhook-config-file={}", file.display()),
            "--authorization-webhook-version=v1".into(),
            "--authorization-webhook-cache-authorized-ttl=0s".into(),
            "--authorization-webhook-cache-unauthorized-ttl=0s".into(),
        ],
        crds: api::crds::all(),
        ..Default::default()
    };
    let env = TestEnv::start_with(options).await.unwrap_or_else(|e| panic!("starting the test control plane: {e}"));
    let admin = env.client().await.unwrap();
    for name in [NS, SERVER_NS, "creds"] {
        let ns = Namespace { metadata: meta(name, None), ..Default::default() };
        Api::<Namespace>::all(admin.clone()).create(&PostParams::default(), &ns).await.unwrap();
    }
    let secret = shared::secret(&config.certificate_secret, &config.hosts, &issued, None);
    Api::<Secret>::namespaced(admin.clone(), SERVER_NS).create(&PostParams::default(), &secret).await.unwrap();
    setup(admin.clone()).await;

    let client = support::server_client(&env, &admin).await;
    let metrics = Metrics::new(&prometheus::Registry::new()).unwrap();
    let ready = Arc::new(AtomicBool::new(false));
    let (stop_tx, stop) = runtime::runner::stop_signal();
    let r = ready.clone();
    let webhook = tokio::spawn(async move {
        if let Err(e) = server::run(config, client, listener, metrics, r, stop).await {
            panic!("the webhook server failed: {}", runtime::cli::report(&e));
        }
    });
    eventually("the webhook server to serve", || async {
        if ready.load(Ordering::Acquire) { Ok(()) } else { Err("not ready".to_string()) }
    })
    .await;
    Garden { env, admin, _webhook: webhook, _stop: stop_tx, _dir: Dir(dir) }
}

fn meta(name: &str, namespace: Option<&str>) -> ObjectMeta {
    ObjectMeta { name: Some(name.into()), namespace: namespace.map(Into::into), ..Default::default() }
}

fn seed(name: &str) -> Seed {
    let spec = SeedSpec {
        provider: SeedProvider { type_: "local".into(), region: "local".into(), ..Default::default() },
        networks: SeedNetworks { pods: "10.1.0.0/16".into(), services: "10.2.0.0/16".into(), ..Default::default() },
        ..Default::default()
    };
    Seed::new(name, spec)
}

/// Shoot `name` in the project namespace on `seed`, bound by SecretBinding `<name>-sb`.
fn shoot(name: &str, seed: &str) -> Shoot {
    let mut s = admission::fixtures::shoot();
    s.metadata = meta(name, Some(NS));
    s.spec.seed_name = Some(seed.into());
    s.spec.secret_binding_name = Some(format!("{name}-sb"));
    s.spec.credentials_binding_name = None;
    s
}

fn binding(name: &str, secret_ns: &str, secret: &str) -> SecretBinding {
    serde_json::from_value(json!({
        "apiVersion": "core.gardener.cloud/v1beta1", "kind": "SecretBinding",
        "metadata": {"name": name, "namespace": NS},
        "secretRef": {"name": secret, "namespace": secret_ns},
        "provider": {"type": "local"},
    }))
    .unwrap()
}

fn credentials(name: &str) -> Secret {
    Secret {
        metadata: meta(name, Some("creds")),
        string_data: Some([("token".into(), "t".into())].into()),
        ..Default::default()
    }
}

fn state(name: &str) -> ShootState {
    let mut s = ShootState::new(name, Default::default());
    s.metadata.namespace = Some(NS.into());
    s
}

/// Creates `obj` as the admin.
async fn create<K>(admin: &Client, namespace: Option<&str>, obj: &K)
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::Serialize
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
    K::DynamicType: Default,
{
    Api::<K>::namespaced(admin.clone(), namespace.unwrap_or(NS)).create(&PostParams::default(), obj).await.unwrap();
}

/// The CloudProfile and ControllerRegistrations the example shoot is valid against (a seed's
/// update of its Shoot or Seed passes the usual rules too).
async fn profile_and_registrations(admin: &Client) {
    let profiles = Api::<api::core::CloudProfile>::all(admin.clone());
    profiles.create(&PostParams::default(), &admission::fixtures::cloud_profile()).await.unwrap();
    for registration in admission::fixtures::controller_registrations() {
        let registrations = Api::<api::core::ControllerRegistration>::all(admin.clone());
        registrations.create(&PostParams::default(), &registration).await.unwrap();
    }
}

/// Seeds `a` and `b`; shoot `sa` on `a` (binding to Secret `creds/sa-credentials`, a
/// ShootState), `sa2` on `a` without a ShootState, `sb` on `b` (its own credentials and
/// ShootState), `mig` migrating from `a` to `b`.
async fn two_seeds(admin: Client) {
    profile_and_registrations(&admin).await;
    for name in ["a", "b"] {
        Api::<Seed>::all(admin.clone()).create(&PostParams::default(), &seed(name)).await.unwrap();
    }
    for (name, on) in [("sa", "a"), ("sa2", "a"), ("sb", "b"), ("mig", "b")] {
        create(&admin, None, &shoot(name, on)).await;
        create(&admin, None, &binding(&format!("{name}-sb"), "creds", &format!("{name}-credentials"))).await;
        create(&admin, Some("creds"), &credentials(&format!("{name}-credentials"))).await;
    }
    for name in ["sa", "sb"] {
        create(&admin, None, &state(name)).await;
    }
    // `mig` ran on `a` and is moving to `b`.
    let status = json!({"status": {"seedName": "a"}});
    Api::<Shoot>::namespaced(admin.clone(), NS)
        .patch_status("mig", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
}

async fn seed_client(env: &TestEnv, seed: &str) -> Client {
    let kubeconfig = env.kubeconfig_for(&seed_identity::user(seed), Some(seed_identity::GROUP)).unwrap();
    testenv::client_from(&kubeconfig).await.unwrap()
}

/// The status of a refused request: 403, or a panic naming what was tried.
fn forbidden<T: std::fmt::Debug>(result: Result<T, kube::Error>, what: &str) -> String {
    match result {
        Err(kube::Error::Api(status)) if status.code == 403 => status.message.clone(),
        other => panic!("{what}: expected 403 Forbidden, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_seed_reaches_its_own_objects_and_is_refused_another_seeds() {
    let g = garden(two_seeds).await;
    let a = seed_client(&g.env, "a").await;
    let b = seed_client(&g.env, "b").await;
    let annotate = |v: &str| Patch::Merge(json!({"metadata": {"annotations": {"seed-authorizer-test": v}}}));
    let pp = PatchParams::default();

    // Seed a: its shoot, ShootState, binding, credentials, Seed, heartbeat Lease, new ShootState.
    let shoots = Api::<Shoot>::namespaced(a.clone(), NS);
    shoots.get("sa").await.expect("seed a reads its shoot");
    shoots.patch("sa", &pp, &annotate("a")).await.expect("seed a patches its shoot");
    let listed = Api::<Shoot>::all(a.clone()).list(&Default::default()).await.expect("seed a lists shoots");
    assert_eq!(listed.items.len(), 4);
    let states = Api::<ShootState>::namespaced(a.clone(), NS);
    states.get("sa").await.expect("seed a reads its ShootState");
    states.patch("sa", &pp, &annotate("a")).await.expect("seed a patches its ShootState");
    states.create(&PostParams::default(), &state("sa2")).await.expect("seed a creates a ShootState of its shoot");
    Api::<SecretBinding>::namespaced(a.clone(), NS).get("sa-sb").await.expect("seed a reads its binding");
    Api::<Secret>::namespaced(a.clone(), "creds").get("sa-credentials").await.expect("seed a reads its credentials");
    Api::<Seed>::all(a.clone()).get("a").await.expect("seed a reads its Seed");
    Api::<Seed>::all(a.clone()).patch("a", &pp, &annotate("a")).await.expect("seed a patches its Seed");
    let lease_ns = Namespace { metadata: meta("gardener-system-seed-lease", None), ..Default::default() };
    Api::<Namespace>::all(a.clone()).create(&PostParams::default(), &lease_ns).await.expect("the lease namespace");
    let lease = Lease { metadata: meta("a", Some("gardener-system-seed-lease")), ..Default::default() };
    let leases = Api::<Lease>::namespaced(a.clone(), "gardener-system-seed-lease");
    leases.create(&PostParams::default(), &lease).await.expect("seed a creates its heartbeat Lease");
    leases.patch("a", &pp, &annotate("a")).await.expect("seed a renews its heartbeat Lease");

    // Both seeds read the migrating shoot and its binding.
    for (seed, client) in [("a", &a), ("b", &b)] {
        Api::<Shoot>::namespaced(client.clone(), NS)
            .get("mig")
            .await
            .unwrap_or_else(|e| panic!("seed {seed} reads the migrating shoot: {e}"));
        Api::<Secret>::namespaced(client.clone(), "creds")
            .get("mig-credentials")
            .await
            .unwrap_or_else(|e| panic!("seed {seed} reads the migrating shoot's credentials: {e}"));
    }

    // Seed b: nothing of seed a's.
    let message = forbidden(Api::<ShootState>::namespaced(b.clone(), NS).get("sa").await, "b reads a's ShootState");
    assert!(message.contains("gardener.cloud:system:seed:b"), "{message}");
    forbidden(Api::<Shoot>::namespaced(b.clone(), NS).patch("sa", &pp, &annotate("b")).await, "b patches a's shoot");
    forbidden(Api::<Secret>::namespaced(b.clone(), "creds").get("sa-credentials").await, "b reads a's credentials");
    forbidden(Api::<Seed>::all(b.clone()).delete("a", &Default::default()).await, "b deletes Seed a");
    let message = forbidden(
        Api::<ShootState>::namespaced(b.clone(), NS).create(&PostParams::default(), &state("mig-not")).await,
        "b creates a ShootState of no shoot",
    );
    assert!(message.contains("seed b may not create shootstates garden-dev/mig-not"), "{message}");
    forbidden(
        Api::<ShootState>::namespaced(b.clone(), NS).delete("sa", &Default::default()).await,
        "b deletes a's ShootState",
    );
    let lease = Lease { metadata: meta("a", Some("gardener-system-seed-lease")), ..Default::default() };
    forbidden(
        Api::<Lease>::namespaced(b.clone(), "gardener-system-seed-lease")
            .replace("a", &PostParams::default(), &lease)
            .await,
        "b takes a's Lease",
    );
    // Seed b may create ShootStates, but not one for a's shoot: SeedRestriction.
    Api::<ShootState>::namespaced(g.admin.clone(), NS).delete("sa2", &Default::default()).await.unwrap();
    let message = forbidden(
        Api::<ShootState>::namespaced(b.clone(), NS).create(&PostParams::default(), &state("sa2")).await,
        "b creates a ShootState for a's shoot",
    );
    assert!(message.contains("shoot garden-dev/sa2, which is not on seed b"), "{message}");

    // Nothing b tried changed anything.
    let admin_shoots = Api::<Shoot>::namespaced(g.admin.clone(), NS);
    let sa = admin_shoots.get("sa").await.unwrap();
    assert_eq!(sa.metadata.annotations.unwrap_or_default().get("seed-authorizer-test").map(String::as_str), Some("a"));
    assert!(Api::<Seed>::all(g.admin.clone()).get_opt("a").await.unwrap().is_some());
    assert!(Api::<ShootState>::namespaced(g.admin.clone(), NS).get_opt("sa").await.unwrap().is_some());
    assert!(Api::<ShootState>::namespaced(g.admin.clone(), NS).get_opt("sa2").await.unwrap().is_none());
    assert!(Api::<ShootState>::namespaced(g.admin.clone(), NS).get_opt("mig-not").await.unwrap().is_none());

    // Other users are not judged: the admin creates what seed b may not.
    Api::<ShootState>::namespaced(g.admin.clone(), NS).create(&PostParams::default(), &state("sa2")).await.unwrap();
}

/// A SubjectAccessReview for seed `seed` getting the ShootState `name`.
fn review(seed: &str, name: &str) -> SubjectAccessReview {
    SubjectAccessReview {
        metadata: Default::default(),
        spec: SubjectAccessReviewSpec {
            user: Some(seed_identity::user(seed)),
            groups: Some(vec![seed_identity::GROUP.into(), "system:authenticated".into()]),
            resource_attributes: Some(ResourceAttributes {
                group: Some("core.gardener.cloud".into()),
                resource: Some("shootstates".into()),
                verb: Some("get".into()),
                namespace: Some(NS.into()),
                name: Some(name.into()),
                ..Default::default()
            }),
            ..Default::default()
        },
        status: None,
    }
}

/// 500 shoots over 5 seeds: the latency of the authorizer through the API server
/// (SubjectAccessReviews created by the admin, each asking the webhook: no decision cache).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subjectaccessreviews_through_the_api_server_with_500_shoots() {
    const SEEDS: usize = 5;
    const SHOOTS: usize = 500;
    const REQUESTS: usize = 400;
    let g = garden(|admin: Client| async move {
        profile_and_registrations(&admin).await;
        let shoots = Api::<Shoot>::namespaced(admin.clone(), NS);
        let creates = (0..SHOOTS).map(|i| {
            let shoots = shoots.clone();
            async move {
                shoots.create(&PostParams::default(), &shoot(&format!("s{i}"), &format!("seed-{}", i % SEEDS))).await
            }
        });
        use futures::StreamExt;
        let results: Vec<_> = futures::stream::iter(creates).buffer_unordered(16).collect().await;
        assert!(results.iter().all(Result::is_ok), "creating the shoots");
    })
    .await;
    let reviews = Api::<SubjectAccessReview>::all(g.admin.clone());
    let mut took = Vec::with_capacity(REQUESTS);
    for i in 0..REQUESTS {
        let shoot = i % SHOOTS;
        // Half asked by the shoot's seed (allowed), half by the next seed (no opinion).
        let owner = shoot % SEEDS;
        let asker = if i.is_multiple_of(2) { owner } else { (owner + 1) % SEEDS };
        let start = Instant::now();
        let answer = reviews
            .create(&PostParams::default(), &review(&format!("seed-{asker}"), &format!("s{shoot}")))
            .await
            .unwrap();
        took.push(start.elapsed());
        let allowed = answer.status.is_some_and(|s| s.allowed);
        assert_eq!(allowed, asker == owner, "review {i}: seed-{asker} asking for s{shoot}");
    }
    took.sort();
    let at = |q: f64| took[((took.len() as f64 * q) as usize).min(took.len() - 1)];
    println!(
        "SubjectAccessReviews through the API server ({REQUESTS}, {SHOOTS} shoots over {SEEDS} seeds): median {:?}, p99 {:?}, max {:?}",
        at(0.5),
        at(0.99),
        took[took.len() - 1]
    );
    assert!(at(0.5) < Duration::from_secs(1), "median {:?}", at(0.5));
}
