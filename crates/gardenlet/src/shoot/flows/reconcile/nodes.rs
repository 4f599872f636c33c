//! What the nodes need: the system resources in the shoot's API (bootstrap token, RBAC, cluster-info, kube-proxy, cluster DNS), the OperatingSystemConfigs, the Worker, and the wait until the system components run.

use crate::components::{cluster_dns, konnectivity, kube_proxy};
use crate::flow::TaskError;
use crate::shoot::credentials::secrets;
use crate::shoot::objects::extensions as ext;
use crate::shoot::objects::kubelet;
use crate::shoot::objects::system_resources as system;
use crate::shoot::operation::apply::{apply, deploy_extension, task_err, wait_in};
use crate::shoot::operation::clients::shoot_client;
use crate::shoot::operation::context::OperationContext;
use crate::shoot::operation::context::secret_value;
use crate::shoot::operation::readiness as checks;
use k8s_openapi::ByteString;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::{Api, ResourceExt};
use std::sync::Arc;

/// The bootstrap token, kept in the seed namespace (not labelled as a pki secret, so the
/// secrets plan leaves it alone) and reused while it has more than half of its lifetime left,
/// so an unchanged shoot does not rotate it on every reconcile.
pub(super) async fn bootstrap_token(ctx: &OperationContext) -> Result<pki::Secret, TaskError> {
    const STORE: &str = "bootstrap-token";
    let api: Api<Secret> = Api::namespaced(ctx.seed.clone(), ctx.values.namespace());
    if let Some(existing) = api.get_opt(STORE).await.map_err(task_err)? {
        let stored = secrets::from_k8s(&existing);
        let fresh = stored
            .get("expiration")
            .and_then(|e| e.parse::<k8s_openapi::jiff::Timestamp>().ok())
            .is_some_and(|exp| exp.duration_since(k8s_openapi::jiff::Timestamp::now()).as_secs() > 12 * 3600);
        if fresh && let Some(id) = stored.get("token-id") {
            let mut token = stored.clone();
            token.name = format!("bootstrap-token-{id}");
            token.type_ = pki::secret_types::BOOTSTRAP_TOKEN.to_string();
            token.labels.clear();
            return Ok(token);
        }
    }
    let token = pki::bootstrap::BootstrapToken::generate().map_err(task_err)?;
    let options = pki::bootstrap::TokenOptions::default();
    let secret = pki::bootstrap::secret(&token, &options, std::time::SystemTime::now()).map_err(task_err)?;
    let stored = Secret {
        metadata: ObjectMeta { name: Some(STORE.into()), ..Default::default() },
        type_: Some("Opaque".into()),
        data: Some(secret.data.iter().map(|(k, v)| (k.clone(), ByteString(v.as_bytes().to_vec()))).collect()),
        ..Default::default()
    };
    apply(ctx, &stored).await?;
    Ok(secret)
}

/// The API server's address as the nodes dial it: its Service's address in the seed, else its
/// advertised host name.
fn server_host(ctx: &OperationContext) -> String {
    let address = ctx.found().address.clone();
    address.unwrap_or_else(|| ctx.values.advertised_host().to_string())
}

pub(super) fn server(ctx: &OperationContext) -> String {
    format!("https://{}", server_host(ctx))
}

pub(super) async fn deploy_system_resources(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    let client = shoot_client(&ctx).await?;
    let token = bootstrap_token(&ctx).await?;
    let ca = secret_value(&ctx, crate::components::common::secrets::CA_BUNDLE, pki::data_keys::BUNDLE)?;
    let info = pki::bootstrap::cluster_info_kubeconfig(&server(&ctx), &ca).map_err(task_err)?;
    let images = &ctx.config.images;
    let version = &ctx.values.kubernetes_version;
    let components = system::Components {
        kube_proxy: kube_proxy::enabled(&ctx.shoot).then(|| kube_proxy::Values {
            server: server(&ctx),
            pod_cidr: ctx.values.pods.map(|p| p.to_string()),
            image: crate::components::Images::resolve(&images.kube_proxy, version),
            feature_gates: ctx
                .shoot
                .spec
                .kubernetes
                .kube_proxy
                .as_ref()
                .map(|p| p.feature_gates.clone())
                .unwrap_or_default(),
        }),
        cluster_dns: cluster_dns::Values {
            server: server(&ctx),
            service_ip: kubelet::cluster_dns(&ctx.values).to_string(),
            domain: "cluster.local".into(),
            image: crate::components::Images::resolve(&images.cluster_dns, version),
        },
        konnectivity: if ctx.values.workers { Some(agent_values(&ctx)?) } else { None },
    };
    system::apply(&client, &token, &info, &components)
        .await
        .map_err(|e| TaskError::context("applying shoot system resources", &e))
}

/// The tunnel's agents: they dial the API server's Service address (what the kubelets dial)
/// and may reach the shoot's pod, service and node ranges (and its Nodes' addresses).
fn agent_values(ctx: &OperationContext) -> Result<konnectivity::AgentValues, TaskError> {
    let key = |secret: &str, key: &str| secret_value(ctx, secret, key);
    let agent = pki::shoot_set::names::KONNECTIVITY_AGENT;
    let v = &ctx.values;
    let allowed = [v.pods, Some(v.services), v.nodes].into_iter().flatten().map(|n| n.to_string()).collect();
    Ok(konnectivity::AgentValues {
        server_host: server_host(ctx),
        allowed,
        image: ctx.config.images.konnectivity.clone(),
        ca: key(crate::components::common::secrets::CA_BUNDLE, pki::data_keys::BUNDLE)?,
        cert: key(agent, pki::data_keys::TLS_CERT)?,
        key: key(agent, pki::data_keys::TLS_KEY)?,
    })
}

pub(super) async fn deploy_operating_system_configs(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    let token = bootstrap_token(&ctx).await?;
    let ca = secret_value(&ctx, crate::components::common::secrets::CA_BUNDLE, pki::data_keys::BUNDLE)?;
    let token_text =
        format!("{}.{}", token.get("token-id").unwrap_or_default(), token.get("token-secret").unwrap_or_default());
    let bootstrap_kubeconfig = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: shoot\n  cluster:\n    server: {}\n    certificate-authority: /var/lib/kubelet/ca.crt\ncontexts:\n- name: kubelet-bootstrap\n  context:\n    cluster: shoot\n    user: kubelet-bootstrap\ncurrent-context: kubelet-bootstrap\nusers:\n- name: kubelet-bootstrap\n  user:\n    token: {token_text}\n",
        server(&ctx)
    );
    let kubelet_ca = secret_value(&ctx, crate::components::common::secrets::CA_KUBELET_BUNDLE, pki::data_keys::BUNDLE)?;
    let secrets_api: Api<Secret> = Api::namespaced(ctx.seed.clone(), ctx.values.namespace());
    let authorized_keys = authorized_keys(&ctx);
    let oscs = ext::operating_system_configs(
        &ctx.values,
        &ctx.shoot,
        &bootstrap_kubeconfig,
        &ca,
        &kubelet_ca,
        authorized_keys.as_deref(),
    );
    for (osc, pool) in oscs.into_iter().zip(ctx.shoot.spec.provider.workers.iter().map(|w| w.name.clone())) {
        let key = ext::node_agent_secret_name(&pool, &osc);
        let ready = deploy_extension(&ctx, &osc).await?;
        let Some(reference) = ready.status.as_ref().and_then(|s| s.cloud_config.as_ref()).map(|c| c.secret_ref.clone())
        else {
            return Err(TaskError::msg(format!(
                "OperatingSystemConfig {} reports no cloudConfig secret",
                osc.name_any()
            )));
        };
        let secret = secrets_api.get(&reference.name).await.map_err(task_err)?;
        let user_data = secret
            .data
            .as_ref()
            .and_then(|d| d.get("cloud_config").or_else(|| d.values().next()))
            .map(|ByteString(b)| secrets::b64(&String::from_utf8_lossy(b)))
            .unwrap_or_default();
        let mut found = ctx.found();
        found.user_data.insert(pool.clone(), user_data);
        found.pool_keys.insert(pool, key);
    }
    Ok(())
}

/// How long the Worker waits at most for kube-controller-manager's controllers.
const KCM_CONTROLLERS_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// Waits (at most [`KCM_CONTROLLERS_WAIT`], and never failing) until kube-controller-manager's
/// controllers run, seen by the `kube-system/kube-root-ca.crt` ConfigMap its root CA publisher
/// writes once its informers started. kube-controller-manager 1.20 starts its informers, and with
/// them the approval of kubelet bootstrap CSRs, only after every controller has started, node
/// IPAM's fixed 10-s first poll of the Nodes among them (kubernetes/kubernetes#93593, fixed in
/// 1.31). A machine that boots meanwhile starts its kubelet without a client certificate: its
/// informers and the Node registration are refused and back off (up to 7 s and more), and the
/// first pods fail with "services have not yet been read" and wait 10 s; a created shoot took 15
/// to 25 s longer (docs/performance.md). A shoot whose ConfigMap exists (any later reconcile,
/// a wake-up) does not wait.
pub(super) async fn wait_kcm_controllers(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    let client = match shoot_client(&ctx).await {
        Ok(client) => client,
        Err(e) => {
            tracing::debug!(error = %e, "not waiting for kube-controller-manager's controllers");
            return Ok(());
        }
    };
    let api: Api<ConfigMap> = Api::namespaced(client, "kube-system");
    let published = |cm: Option<&ConfigMap>| cm.is_some();
    let waited = tokio::time::timeout(
        KCM_CONTROLLERS_WAIT,
        kube::runtime::wait::await_condition(api, "kube-root-ca.crt", published),
    )
    .await;
    match waited {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => tracing::debug!(error = %e, "watching for kube-controller-manager's controllers"),
        Err(_) => tracing::info!(
            timeout = ?KCM_CONTROLLERS_WAIT,
            "kube-controller-manager published no root CA ConfigMap; creating machines anyway"
        ),
    }
    Ok(())
}

pub(super) async fn deploy_worker(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    let (infra, user_data, keys) = {
        let f = ctx.found();
        (f.infrastructure_status.clone(), f.user_data.clone(), f.pool_keys.clone())
    };
    let public_key = ctx
        .found()
        .secrets
        .as_ref()
        .and_then(|s| s.value(pki::shoot_set::names::SSH_KEYPAIR, pki::data_keys::SSH_PUBLIC_KEY))
        .map(str::to_string);
    let worker = ext::worker(&ctx.values, &ctx.shoot, infra, &user_data, &keys, public_key.as_deref());
    deploy_extension(&ctx, &worker).await.map(|_| ())
}

/// The nodes' `authorized_keys` when the shoot has an SSH key pair: its public key and, after
/// a key-pair rotation, the previous one's.
pub(super) fn authorized_keys(ctx: &OperationContext) -> Option<String> {
    let found = ctx.found();
    let set = found.secrets.as_ref()?;
    let name = pki::shoot_set::names::SSH_KEYPAIR;
    let current = set.value(name, pki::data_keys::SSH_PUBLIC_KEY)?;
    let previous = set.value(&pki::config::old_name(name), pki::data_keys::SSH_PUBLIC_KEY);
    Some([Some(current), previous].into_iter().flatten().map(|k| format!("{}\n", k.trim_end())).collect())
}

/// Waits until kube-proxy runs ready on every node that joined (unless the shoot turned it off)
/// and cluster DNS and the tunnel's agents are rolled out (a shoot whose worker has no Node yet, as with simulated
/// workers, has nothing to wait for).
pub(super) async fn wait_system_components(ctx: Arc<OperationContext>) -> Result<(), TaskError> {
    let client = shoot_client(&ctx).await?;
    let nodes = Api::<k8s_openapi::api::core::v1::Node>::all(client.clone())
        .list(&kube::api::ListParams::default())
        .await
        .map_err(task_err)?
        .items
        .len();
    if nodes == 0 {
        return Ok(());
    }
    if kube_proxy::enabled(&ctx.shoot) {
        let proxy: Api<DaemonSet> = Api::namespaced(client.clone(), kube_proxy::NAMESPACE);
        wait_in(proxy, kube_proxy::NAMESPACE, kube_proxy::NAME, ctx.wait_timeout, |ds: &DaemonSet| {
            let desired = ds.status.as_ref().map(|s| s.desired_number_scheduled).unwrap_or_default();
            if usize::try_from(desired).unwrap_or_default() < nodes {
                return Err(format!("scheduled on {desired} of {nodes} nodes"));
            }
            kube_proxy::rolled_out(ds)
        })
        .await?;
    }
    let dns: Api<Deployment> = Api::namespaced(client.clone(), cluster_dns::NAMESPACE);
    wait_in(dns, cluster_dns::NAMESPACE, cluster_dns::NAME, ctx.wait_timeout, checks::deployment_rolled_out).await?;
    if ctx.values.workers {
        // The agents are ready once they hold a stream to the API server's tunnel.
        let agents: Api<Deployment> = Api::namespaced(client, konnectivity::NAMESPACE);
        let (ns, name) = (konnectivity::NAMESPACE, konnectivity::AGENT);
        wait_in(agents, ns, name, ctx.wait_timeout, checks::deployment_rolled_out).await?;
    }
    Ok(())
}
