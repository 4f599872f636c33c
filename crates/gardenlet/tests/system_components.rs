//! The shoot's system components against a real kube-apiserver (standing in for the shoot's):
//! kube-proxy's objects are applied while the shoot runs it and deleted, all four, once it
//! turns kube-proxy off (`spec.kubernetes.kubeProxy.enabled: false`); cluster DNS stays. The
//! tunnel's agents get their credentials and exactly the rights they need.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use gardenlet::components::{cluster_dns, konnectivity, kube_proxy};
use gardenlet::shoot::objects::system_resources::{self as system, Components};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::{ConfigMap, Node, Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::Api;
use std::collections::BTreeMap;

fn components(proxy: bool) -> Components {
    Components {
        kube_proxy: proxy.then(|| kube_proxy::Values {
            server: "https://10.96.4.5".into(),
            pod_cidr: Some("100.96.0.0/11".into()),
            image: "registry.k8s.io/kube-proxy:v1.20.2".into(),
            feature_gates: BTreeMap::from([("EndpointSliceProxying".to_string(), false)]),
        }),
        cluster_dns: cluster_dns::Values {
            server: "https://10.96.4.5".into(),
            service_ip: "10.0.0.10".into(),
            domain: "cluster.local".into(),
            image: "gardener-rs.local/cluster-dns:v0.1.0".into(),
        },
        konnectivity: Some(konnectivity::AgentValues {
            server_host: "10.96.4.5".into(),
            allowed: vec!["100.96.0.0/11".into(), "10.0.0.0/24".into()],
            image: "gardener-rs.local/konnectivity:v0.1.0".into(),
            ca: "CA\n".into(),
            cert: "CERT\n".into(),
            key: "KEY\n".into(),
        }),
    }
}

/// cluster-info's kubeconfig (its content does not matter here).
const INFO: &str = "apiVersion: v1\nkind: Config\n";

/// An API server standing in for the shoot's, its admin client and a bootstrap token Secret.
async fn shoot_api() -> (testenv::TestEnv, kube::Client, pki::Secret) {
    let env = testenv::TestEnv::start().await.unwrap();
    let client = env.client().await.unwrap();
    let token = pki::bootstrap::BootstrapToken::generate().unwrap();
    let token = pki::bootstrap::secret(&token, &Default::default(), std::time::SystemTime::now()).unwrap();
    (env, client, token)
}

/// Which of kube-proxy's four objects exist, in the order DaemonSet, ConfigMap,
/// ClusterRoleBinding, ServiceAccount.
async fn kube_proxy_objects(client: &kube::Client) -> [bool; 4] {
    let ns = kube_proxy::NAMESPACE;
    let name = kube_proxy::NAME;
    [
        Api::<DaemonSet>::namespaced(client.clone(), ns).get_opt(name).await.unwrap().is_some(),
        Api::<ConfigMap>::namespaced(client.clone(), ns).get_opt(name).await.unwrap().is_some(),
        Api::<ClusterRoleBinding>::all(client.clone())
            .get_opt(kube_proxy::CLUSTER_ROLE_BINDING)
            .await
            .unwrap()
            .is_some(),
        Api::<ServiceAccount>::namespaced(client.clone(), ns).get_opt(name).await.unwrap().is_some(),
    ]
}

#[tokio::test]
async fn turning_kube_proxy_off_deletes_its_objects_and_on_again_restores_them() {
    let (_env, client, token) = shoot_api().await;

    system::apply(&client, &token, INFO, &components(true)).await.unwrap();
    assert_eq!(kube_proxy_objects(&client).await, [true; 4]);
    let ds = Api::<DaemonSet>::namespaced(client.clone(), kube_proxy::NAMESPACE).get(kube_proxy::NAME).await.unwrap();
    let command = ds.spec.unwrap().template.spec.unwrap().containers[0].command.clone().unwrap();
    assert!(command.contains(&"--feature-gates=EndpointSliceProxying=false".to_string()), "{command:?}");

    system::apply(&client, &token, INFO, &components(false)).await.unwrap();
    assert_eq!(kube_proxy_objects(&client).await, [false; 4], "every kube-proxy object is gone");
    let dns = Api::<Deployment>::namespaced(client.clone(), cluster_dns::NAMESPACE).get_opt(cluster_dns::NAME).await;
    assert!(dns.unwrap().is_some(), "cluster DNS stays");

    // Applying again without kube-proxy finds nothing to delete and is fine.
    system::apply(&client, &token, INFO, &components(false)).await.unwrap();
    system::apply(&client, &token, INFO, &components(true)).await.unwrap();
    assert_eq!(kube_proxy_objects(&client).await, [true; 4], "turned on again, it is back");
}

#[tokio::test]
async fn the_tunnels_agents_get_their_credentials_and_may_only_watch_nodes() {
    let (env, client, token) = shoot_api().await;
    system::apply(&client, &token, INFO, &components(true)).await.unwrap();

    let (ns, name) = (konnectivity::NAMESPACE, konnectivity::AGENT);
    let secrets = Api::<Secret>::namespaced(client.clone(), ns);
    let secret = secrets.get(name).await.unwrap();
    let data = secret.data.clone().unwrap();
    assert_eq!(data["tls.key"].0, b"KEY\n");
    assert!(String::from_utf8_lossy(&data["kubeconfig.conf"].0).contains("server: https://10.96.4.5"));
    let deployment = Api::<Deployment>::namespaced(client.clone(), ns).get(name).await.unwrap();
    let version = (secret.metadata.resource_version.clone(), deployment.metadata.resource_version.clone());

    // Applied again unchanged, nothing is written.
    system::apply(&client, &token, INFO, &components(true)).await.unwrap();
    let again = (
        secrets.get(name).await.unwrap().metadata.resource_version,
        Api::<Deployment>::namespaced(client.clone(), ns).get(name).await.unwrap().metadata.resource_version,
    );
    assert_eq!(version, again);

    // The agent's service account lists Nodes and reads nothing else.
    let agent = env.client_as_service_account(ns, name).await.unwrap();
    Api::<Node>::all(agent.clone()).list(&Default::default()).await.expect("listing nodes");
    let forbidden = Api::<Secret>::namespaced(agent.clone(), ns).get(name).await;
    assert!(matches!(forbidden, Err(kube::Error::Api(ref s)) if s.code == 403), "{forbidden:?}");
    let forbidden = Api::<ConfigMap>::namespaced(agent, "kube-public").list(&Default::default()).await;
    assert!(matches!(forbidden, Err(kube::Error::Api(ref s)) if s.code == 403), "{forbidden:?}");
}
