//! The local cluster as a user meets it: a Ready node, pods that serve each other through a
//! Service reached by DNS name and ClusterIP, `kubectl logs` and `kubectl exec` through the API
//! server, Service names resolved from the host, volumes that outlive their pod, the image
//! registry the machines pull from (which no pod can write to), and no way out of the machine.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use e2e::*;
use k8s_openapi::api::core::v1::{Node, PersistentVolume, PersistentVolumeClaim, Pod, Service};
use kube::api::{Api, DeleteParams};
use local_cluster::dnsclient::{Answer, query_a};
use local_cluster::settings::{DNS_PORT, NODE_IP, NODE_NAME};
use std::collections::BTreeSet;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

const BUSYBOX: &str = "gardener-rs.local/busybox:1.35.0";

#[tokio::test]
async fn the_node_is_ready() {
    let client = client().await;
    let node = Api::<Node>::all(client).get(NODE_NAME).await.expect("the node exists");
    assert!(local_cluster::up::node_ready(&node), "node not Ready: {:?}", node.status);
    let table = kubectl(&["get", "nodes", "--no-headers"]).expect("kubectl get nodes");
    assert!(table.contains(NODE_NAME) && table.contains(" Ready"), "{table}");
}

fn web(ns: &str) -> String {
    format!(
        r#"
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web}}
spec:
  replicas: 2
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: httpd
        image: {BUSYBOX}
        command: [sh, -c, "mkdir -p /tmp/www && hostname > /tmp/www/index.html && echo serving && exec httpd -f -v -p 8080 -h /tmp/www"]
        ports: [{{containerPort: 8080, name: http}}]
        readinessProbe: {{tcpSocket: {{port: 8080}}, periodSeconds: 1}}
---
apiVersion: v1
kind: Service
metadata: {{name: web}}
spec:
  selector: {{app: web}}
  ports: [{{name: http, port: 8080, targetPort: 8080}}]
---
apiVersion: v1
kind: Service
metadata: {{name: web-headless}}
spec:
  clusterIP: None
  selector: {{app: web}}
  ports: [{{name: http, port: 8080}}]
# {ns}
"#
    )
}

#[tokio::test]
async fn pods_reach_a_service_by_dns_name_and_cluster_ip_and_kubectl_reaches_pods() {
    let client = client().await;
    let ns = TestNamespace::create(&client, "e2e-web").await;
    apply(&ns.name, &web(&ns.name));
    let pods = ready_pods(&client, &ns, "app=web", 2).await;
    let names: BTreeSet<String> = pods.iter().map(name_of).collect();
    let svc = Api::<Service>::namespaced(client.clone(), &ns.name).get("web").await.expect("service");
    let cluster_ip = svc.spec.and_then(|s| s.cluster_ip).expect("a cluster IP");

    // From another pod: twenty requests by name, one by ClusterIP.
    let fqdn = format!("web.{}.svc.cluster.local", ns.name);
    let script = format!(
        "for i in $(seq 20); do timeout 5 wget -qO- http://{fqdn}:8080/ || echo FAILED-NAME; done; \
         echo BY-IP $(timeout 5 wget -qO- http://{cluster_ip}:8080/ || echo FAILED-IP)"
    );
    let client_pod = format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: client}}\nspec:\n  restartPolicy: Never\n  containers:\n  - name: c\n    image: {BUSYBOX}\n    command: [sh, -c, {script:?}]\n"
    );
    apply(&ns.name, &client_pod);
    let logs = completed_logs(&client, &ns, "client").await;
    assert!(!logs.contains("FAILED"), "requests failed:\n{logs}\n{}", ns.describe());
    let answered: BTreeSet<String> =
        logs.lines().filter(|l| !l.starts_with("BY-IP")).map(|l| l.trim().to_string()).collect();
    assert_eq!(answered, names, "both replicas answer through the Service:\n{logs}");
    let by_ip = logs.lines().find_map(|l| l.strip_prefix("BY-IP ")).expect("the ClusterIP request");
    assert!(names.contains(by_ip.trim()), "the ClusterIP answered {by_ip:?}");

    // kubectl exec and logs go through the API server to the kubelet.
    let first = names.iter().next().expect("a pod");
    let served = kubectl(&["exec", "-n", &ns.name, first, "--", "cat", "/tmp/www/index.html"]).expect("kubectl exec");
    assert_eq!(served.trim(), first);
    let log = kubectl(&["logs", "-n", &ns.name, first]).expect("kubectl logs");
    assert!(log.contains("serving"), "{log}");

    // From the host: the Service name resolves to its ClusterIP, the headless one to the pods.
    let dns = SocketAddr::from((NODE_IP, DNS_PORT));
    let answer = query_a(dns, &format!("{fqdn}."), Duration::from_secs(2)).expect("a DNS answer");
    assert_eq!(answer, Answer::Addresses(vec![cluster_ip.parse::<Ipv4Addr>().expect("an IPv4 cluster IP")]));
    let pod_ips: BTreeSet<Ipv4Addr> =
        pods.iter().filter_map(|p| p.status.as_ref()?.pod_ip.as_ref()?.parse().ok()).collect();
    let headless = format!("web-headless.{}.svc.cluster.local.", ns.name);
    let got = eventually("the headless Service resolves to both pods", &ns, || {
        let headless = headless.clone();
        let pod_ips = pod_ips.clone();
        async move {
            match query_a(dns, &headless, Duration::from_secs(2)).map_err(|e| e.to_string())? {
                Answer::Addresses(a) if a.iter().copied().collect::<BTreeSet<_>>() == pod_ips => Ok(Some(a)),
                other => Err(format!("{other:?}")),
            }
        }
    })
    .await;
    assert_eq!(got.len(), 2);
    // Names outside the cluster are not forwarded anywhere.
    let outside = query_a(dns, "example.com.", Duration::from_secs(2)).expect("an answer");
    assert_eq!(outside, Answer::Code("Refused".into()));
}

#[tokio::test]
async fn a_volume_outlives_its_pod_and_goes_with_its_claim() {
    let client = client().await;
    let ns = TestNamespace::create(&client, "e2e-volume").await;
    let sts = format!(
        r#"
apiVersion: apps/v1
kind: StatefulSet
metadata: {{name: store}}
spec:
  serviceName: store
  replicas: 1
  selector: {{matchLabels: {{app: store}}}}
  template:
    metadata: {{labels: {{app: store}}}}
    spec:
      terminationGracePeriodSeconds: 1
      securityContext: {{runAsUser: 0}}
      containers:
      - name: c
        image: {BUSYBOX}
        command: [sh, -c, "if [ -f /data/token ]; then echo found $(cat /data/token); else echo token-{pid} > /data/token && echo wrote; fi; exec sleep 3600"]
        volumeMounts: [{{name: data, mountPath: /data}}]
  volumeClaimTemplates:
  - metadata: {{name: data}}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {{requests: {{storage: 64Mi}}}}
"#,
        pid = std::process::id()
    );
    apply(&ns.name, &sts);
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns.name);
    let first = ready_pods(&client, &ns, "app=store", 1).await.remove(0);
    let log = written_logs(&client, &ns, "store-0").await;
    assert_eq!(log.trim(), "wrote");

    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), &ns.name);
    let claim = claims.get("data-store-0").await.expect("the claim");
    let volume = claim.spec.and_then(|s| s.volume_name).expect("the claim is bound");
    let dir = state_dir().join("volumes").join(&volume);
    assert!(dir.join("token").is_file(), "the data lives in {}", dir.display());

    pods.delete("store-0", &DeleteParams::default()).await.expect("pod deleted");
    let uid = first.metadata.uid.clone();
    eventually("a new store-0 that is Ready", &ns, || {
        let pods = pods.clone();
        let uid = uid.clone();
        async move {
            let p = pods.get_opt("store-0").await.map_err(|e| e.to_string())?;
            Ok(p.filter(|p| p.metadata.uid != uid && local_cluster::up::pod_ready(p)).map(|_| ()))
        }
    })
    .await;
    let log = written_logs(&client, &ns, "store-0").await;
    assert_eq!(log.trim(), format!("found token-{}", std::process::id()));

    // Deleting the claim removes the volume and its directory.
    kubectl(&["delete", "statefulset", "store", "-n", &ns.name, "--wait=true"]).expect("statefulset deleted");
    claims.delete("data-store-0", &DeleteParams::default()).await.expect("claim deleted");
    let pvs: Api<PersistentVolume> = Api::all(client.clone());
    eventually("the volume and its directory are gone", &ns, || {
        let pvs = pvs.clone();
        let volume = volume.clone();
        let dir = dir.clone();
        async move {
            let pv = pvs.get_opt(&volume).await.map_err(|e| e.to_string())?;
            Ok((pv.is_none() && !dir.exists()).then_some(()))
        }
    })
    .await;
}

fn guard_rejections() -> u64 {
    let out = std::process::Command::new("iptables")
        .args(["-w", "-L", local_cluster::host::network::GUARD_CHAIN, "-v", "-x", "-n"])
        .output()
        .expect("iptables runs");
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines().filter(|l| l.contains("REJECT")).filter_map(|l| l.split_whitespace().next()?.parse::<u64>().ok()).sum()
}

#[tokio::test]
async fn a_connection_to_an_address_outside_the_machine_fails_at_once() {
    let client = client().await;
    let ns = TestNamespace::create(&client, "e2e-egress").await;
    // TEST-NET-3: reachable only through the host's uplink, never answered.
    let target = "203.0.113.7";
    let routed_out = std::process::Command::new("ip")
        .args(["route", "get", target])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    let before = guard_rejections();
    let pod = format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: out}}\nspec:\n  restartPolicy: Never\n  containers:\n  - name: c\n    image: {BUSYBOX}\n    command: [sh, -c, \"timeout 20 wget -qO- http://{target}/ 2>&1; echo exit=$?\"]\n"
    );
    apply(&ns.name, &pod);
    let logs = completed_logs(&client, &ns, "out").await;
    // A refused connection fails with an error from the kernel; a dropped one would hang until
    // `timeout` kills wget (exit 143).
    assert!(!logs.contains("exit=0") && !logs.contains("exit=143"), "{logs}");
    assert!(logs.to_lowercase().contains("unreachable"), "the connection is refused at once: {logs}");
    if routed_out {
        assert!(guard_rejections() > before, "the egress guard refused it (counter before {before})");
    }
}

#[tokio::test]
async fn the_control_plane_images_run_under_their_real_names() {
    let client = client().await;
    let ns = TestNamespace::create(&client, "e2e-images").await;
    let images = [
        ("apiserver", "registry.k8s.io/kube-apiserver:v1.20.2", "kube-apiserver --version", "Kubernetes v1.20.2"),
        (
            "kcm",
            "registry.k8s.io/kube-controller-manager:v1.20.2",
            "kube-controller-manager --version",
            "Kubernetes v1.20.2",
        ),
        ("scheduler", "registry.k8s.io/kube-scheduler:v1.20.2", "kube-scheduler --version", "Kubernetes v1.20.2"),
        ("proxy", "registry.k8s.io/kube-proxy:v1.20.2", "kube-proxy --version", "Kubernetes v1.20.2"),
        (
            "etcd",
            "registry.k8s.io/etcd:3.4.23-0",
            "sh -c 'etcd --version && etcdctl version'",
            "etcdctl version: 3.4.23",
        ),
    ];
    for (name, image, command, _) in &images {
        let words: Vec<String> = if command.starts_with("sh -c") {
            vec!["sh".into(), "-c".into(), command.trim_start_matches("sh -c ").trim_matches('\'').into()]
        } else {
            command.split_whitespace().map(str::to_string).collect()
        };
        let pod = serde_json::json!({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": image, "command": words}]}
        });
        apply(&ns.name, &serde_json::to_string(&pod).expect("pod json"));
    }
    for (name, image, _, want) in &images {
        let logs = completed_logs(&client, &ns, name).await;
        assert!(logs.contains(want), "{image} printed {logs:?}\n{}", ns.describe());
    }
}

/// Nothing but `up`'s own push changes an image: the registry on the node address refuses an
/// anonymous write (read-only), its writer on loopback refuses a request without the password
/// `up` keeps, and answers with it.
#[tokio::test]
async fn the_registry_refuses_writes_except_through_its_writer_with_the_password() {
    use local_cluster::registry::{Client, writer};
    let ca = std::fs::read(state_dir().join("pki/ca/ca.crt")).expect("the cluster CA");
    let reader = Client::new(&ca).expect("a reader client");
    let refused = reader.request("POST", "/v2/gardener-rs.local/busybox/blobs/uploads/", &[]).await;
    assert_eq!(refused.as_ref().map(|r| r.status).ok(), Some(405), "an anonymous upload: {refused:?}");

    let anonymous = Client::at(&ca, &writer::address(), None).expect("a writer client");
    let refused = anonymous.request("GET", "/v2/", &[]).await;
    assert_eq!(refused.as_ref().map(|r| r.status).ok(), Some(401), "the writer without a password: {refused:?}");
    let credentials =
        writer::Files::new(state_dir().join("registry-writer")).credentials().expect("the writer's password");
    let authenticated = Client::at(&ca, &writer::address(), Some(&credentials)).expect("a writer client");
    let tags = authenticated.request("GET", "/v2/gardener-rs.local/busybox/tags/list", &[]).await;
    assert_eq!(tags.as_ref().map(|r| r.status).ok(), Some(200), "the writer with the password: {tags:?}");
}

/// The image registry machines pull from: it answers over TLS with a certificate the cluster CA
/// issued, holds every built image under its registry host's path, refuses plain HTTP, and
/// listens on the node address only.
#[test]
fn the_registry_serves_every_image_over_tls_only() {
    use std::io::{Read, Write};
    let ca = std::fs::read(state_dir().join("pki/ca/ca.crt")).expect("the cluster CA");
    let catalog = local_cluster::registry::request(&ca, "GET", "/v2/_catalog", &[]).expect("the catalog over TLS");
    assert_eq!(catalog.status, 200, "{catalog:?}");
    for repository in ["gardener-rs.local/gardenlet", "gardener-rs.local/busybox", "registry.k8s.io/etcd"] {
        assert!(catalog.body.contains(&format!("\"{repository}\"")), "{repository} in {}", catalog.body);
    }
    let tags = local_cluster::registry::request(&ca, "GET", "/v2/registry.k8s.io/etcd/tags/list", &[]).unwrap();
    assert!(tags.body.contains("\"3.4.23-0\""), "{}", tags.body);

    let address = SocketAddr::from((NODE_IP, local_cluster::settings::REGISTRY_PORT));
    let mut plain = std::net::TcpStream::connect_timeout(&address, Duration::from_secs(2)).expect("connects");
    plain.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    plain.write_all(b"GET /v2/_catalog HTTP/1.1\r\nHost: registry\r\nConnection: close\r\n\r\n").unwrap();
    let mut answer = String::new();
    let _ = plain.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.0 400") && !answer.contains("repositories"), "plain HTTP: {answer}");

    let loopback = SocketAddr::from((Ipv4Addr::LOCALHOST, local_cluster::settings::REGISTRY_PORT));
    assert!(
        std::net::TcpStream::connect_timeout(&loopback, Duration::from_secs(2)).is_err(),
        "the registry listens on the node address only"
    );
}
