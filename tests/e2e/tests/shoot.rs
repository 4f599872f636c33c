//! The main job, on the local garden: `example/shoot.yaml` applied as a user applies it becomes
//! a real cluster. Its control plane runs in the seed, its worker machine (a Pod with its own
//! kubelet and containerd) joins it as a Ready Node by bootstrap token and CSR, a pod runs on
//! that node and its log is read through the shoot's API server, a Service spreads requests over
//! its three endpoints; hibernation scales machines and control plane to zero and keeps etcd's
//! volume, waking up brings the same cluster back (a ConfigMap created before is there, the node
//! rejoins); a pod runs an image the machine does not carry, pulled from the local cluster's
//! registry; credentials rotate on the real node and SSH reaches it through a Bastion; deleting
//! the shoot removes its namespaces, machines, volumes and Nodes' cgroups on the host. Gardener's
//! e2e "create, use, delete" test (test/e2e/gardener/shoot) is the model.
//!
//! Each test is an independent case with a shoot of its own ([`e2e::shoot::CaseShoot`]), so the
//! cases run side by side (`make e2e` runs them concurrently) and one failure hides no other
//! case. On failure a case prints its Shoot's status, the seed namespaces' pods and events, and
//! the machine's log.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

#[path = "shoot/bastion.rs"]
mod bastion;

use e2e::kubectl;
use e2e::shoot::{CREATE_TIMEOUT, CaseShoot, PROJECT_NS, STEP_TIMEOUT};
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod, Service};
use kube::api::{Api, ListParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config, ResourceExt};
use std::time::Duration;

/// The system components gardenlet deploys work: a pod reaches three pods through a Service's
/// cluster IP (kube-proxy) and its requests spread over all three (kube-proxy's `statistic`
/// match, which needs iptables' libxt_statistic and libm in the kube-proxy image: without them
/// no Service with two or more endpoints worked), and it reaches them through the Service's name
/// (the shoot's cluster DNS).
async fn a_pod_reaches_a_service_by_ip_and_by_name(s: &CaseShoot, shoot: &Client) {
    const BACKENDS: [&str; 3] = ["web-0", "web-1", "web-2"];
    let pods: Api<Pod> = Api::namespaced(shoot.clone(), "default");
    let services: Api<Service> = Api::namespaced(shoot.clone(), "default");
    for name in BACKENDS {
        let web: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "labels": {"app": "web"}},
            "spec": {"containers": [{
                "name": "web",
                "image": "gardener-rs.local/busybox:1.35.0",
                "command": ["sh", "-c", format!("mkdir -p /tmp/www && echo served by {name} > /tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www")],
                "readinessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 1},
            }]},
        }))
        .unwrap();
        pods.create(&PostParams::default(), &web).await.unwrap();
    }
    let svc: Service = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]},
    }))
    .unwrap();
    let ip = services.create(&PostParams::default(), &svc).await.unwrap().spec.unwrap().cluster_ip.unwrap();
    let endpoints: Api<k8s_openapi::api::core::v1::Endpoints> = Api::namespaced(shoot.clone(), "default");
    let (_, ready_after) = s
        .wait("Service web has three ready endpoints", STEP_TIMEOUT, || async {
            let e = endpoints.get_opt("web").await.map_err(|e| e.to_string())?;
            let ready =
                e.iter().flat_map(|e| e.subsets.iter().flatten()).flat_map(|s| s.addresses.iter().flatten()).count();
            Ok((ready == BACKENDS.len()).then_some(()))
        })
        .await;
    eprintln!("Service web has {} ready endpoints after {ready_after:?}", BACKENDS.len());
    let client: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "client"},
        "spec": {"restartPolicy": "Never", "containers": [{
            "name": "client",
            "image": "gardener-rs.local/busybox:1.35.0",
            // Bounded: 80 tries, 2 s each at most. (`timeout`, not `wget -T`: Debian's static
            // busybox crashes on `-T`.) By cluster IP (kube-proxy) until 30 answers came and
            // three different backends answered, printing every answer; then once by the short
            // name (the kubelet's search path and the shoot's cluster DNS).
            "command": ["sh", "-c", format!(
                r#"n=0; k=0; seen=''
                for i in $(seq 1 80); do
                  a=$(timeout 2 wget -qO- http://{ip}/ 2>/dev/null) || {{ sleep 1; continue; }}
                  echo "$a"; n=$((n+1))
                  case "$seen" in *"|$a|"*) ;; *) seen="$seen|$a|"; k=$((k+1)) ;; esac
                  [ $n -ge 30 ] && [ $k -ge 3 ] && break
                done
                for i in $(seq 1 60); do
                  a=$(timeout 2 wget -qO- http://web/ 2>/dev/null) && {{ echo "by name: $a"; exit 0; }}
                  sleep 1
                done
                echo 'no answer from http://web/'; exit 1"#
            )],
        }]},
    }))
    .unwrap();
    pods.create(&PostParams::default(), &client).await.unwrap();
    let (phase, took) = s
        .wait("a pod reaches the Service's cluster IP and name", STEP_TIMEOUT, || async {
            let p = pods.get("client").await.map_err(|e| e.to_string())?;
            let phase = p.status.as_ref().and_then(|s| s.phase.clone()).unwrap_or_default();
            Ok(matches!(phase.as_str(), "Succeeded" | "Failed").then_some(phase))
        })
        .await;
    let log = pods.logs("client", &Default::default()).await.unwrap_or_default();
    assert_eq!(phase, "Succeeded", "the client's log: {log}\n{}", s.diagnosis());
    let (by_name, by_ip): (Vec<&str>, Vec<&str>) = log.lines().partition(|l| l.starts_with("by name: "));
    let mut counts = std::collections::BTreeMap::new();
    for answer in &by_ip {
        *counts.entry(*answer).or_insert(0) += 1;
    }
    for name in BACKENDS {
        assert!(
            counts.contains_key(format!("served by {name}").as_str()),
            "{name} answered through Service {ip}: the answers were {counts:?}\n{}",
            s.diagnosis()
        );
    }
    assert_eq!(counts.len(), BACKENDS.len(), "only the three backends answered: {counts:?}");
    assert_eq!(by_name.len(), 1, "one answer through the name web: {log}");
    assert!(by_name[0].starts_with("by name: served by web-"), "the page, through the name web: {log}");
    eprintln!(
        "a pod reached Service web by its cluster IP {ip} (answers per backend {counts:?}) and by name after {took:?}"
    );
}

/// kube-proxy ran every tool a sync calls: each kube-proxy's log since its start has no failed
/// `iptables-restore` (a missing library: libm, which the statistic match loads, was one) and no
/// tool missing from its image (`conntrack`, which it calls to drop the conntrack entries of a
/// UDP Service's removed endpoint — the cluster DNS's — was one: without it a client kept
/// sending to a name server that was gone). Called after the Service checks, so the syncs of a
/// Service with three endpoints and the DNS Service's stale entries at start are in the logs.
async fn kube_proxy_ran_every_tool_it_calls(s: &CaseShoot, shoot: &Client) {
    const DEFECTS: [&str; 3] =
        ["executable file not found", "Failed to execute iptables-restore", "cannot open shared object"];
    let pods: Api<Pod> = Api::namespaced(shoot.clone(), "kube-system");
    let list = pods.list(&ListParams::default().labels("k8s-app=kube-proxy")).await.unwrap();
    assert!(!list.items.is_empty(), "kube-proxy runs on the shoot's node\n{}", s.diagnosis());
    for p in list.items {
        let log = pods.logs(&p.name_any(), &Default::default()).await.unwrap();
        assert!(log.contains("Syncing iptables rules"), "{} synced its rules: {log}", p.name_any());
        let bad: Vec<&str> = log.lines().filter(|l| DEFECTS.iter().any(|d| l.contains(d))).collect();
        assert!(bad.is_empty(), "{} failed to run a tool it calls: {bad:#?}", p.name_any());
    }
}

/// The external address in `status.advertisedAddresses` is a DNS name the local seed's DNS
/// answers (from the DNSRecord provider-local reconciled into its zone), and the shoot's API
/// server behind the answered address proves that name in TLS.
async fn the_advertised_name_resolves_and_serves_the_shoot(s: &CaseShoot) {
    let url = s.field("{.status.advertisedAddresses[?(@.name==\"external\")].url}").await.unwrap();
    let host = url.trim_start_matches("https://").split([':', '/']).next().unwrap_or_default().to_string();
    assert!(
        host.parse::<std::net::IpAddr>().is_err() && host.contains('.'),
        "the external address {url:?} is a DNS name"
    );
    let dns = std::net::SocketAddr::from((local_cluster::settings::NODE_IP, local_cluster::settings::DNS_PORT));
    let (addresses, _) = s
        .wait("the local seed's DNS answers the shoot's API name", STEP_TIMEOUT, || async {
            match local_cluster::dnsclient::query_a(dns, &format!("{host}."), Duration::from_secs(2)) {
                Ok(local_cluster::dnsclient::Answer::Addresses(a)) if !a.is_empty() => Ok(Some(a)),
                Ok(_) | Err(_) => Ok(None),
            }
        })
        .await;
    let service = s.field("{.status.advertisedAddresses[?(@.name==\"service\")].url}").await.unwrap();
    assert_eq!(
        format!("https://{}", addresses[0]),
        service.trim_end_matches(":443"),
        "{host} resolves to the API server's Service address"
    );
    let kubeconfig = Kubeconfig::from_yaml(&s.kubeconfig().unwrap()).unwrap();
    let mut config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await.unwrap();
    config.cluster_url = format!("https://{}", addresses[0]).parse().unwrap();
    config.tls_server_name = Some(host.clone());
    let version = Client::try_from(config).unwrap().apiserver_version().await;
    assert!(version.is_ok(), "the API server at {} proves the name {host}: {version:?}", addresses[0]);
    eprintln!("{host} resolves to {} through the local DNS, and TLS for the name holds", addresses[0]);
}

/// A client from kubeconfig text, with `user` in place of the kubeconfig's own user when given.
async fn client_from(kubeconfig: &str, user: Option<&kube::config::AuthInfo>) -> Client {
    let mut kubeconfig = Kubeconfig::from_yaml(kubeconfig).unwrap();
    if let Some(user) = user {
        for named in &mut kubeconfig.auth_infos {
            named.auth_info = Some(user.clone());
        }
    }
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await.unwrap();
    Client::try_from(config).unwrap()
}

/// The HTTP status a list of namespaces gets: 200 for the admin, 403 for a ServiceAccount
/// without permissions (authenticated, not authorised), 401 for a credential the API server no
/// longer accepts.
async fn namespaces_status(client: &Client) -> u16 {
    match Api::<k8s_openapi::api::core::v1::Namespace>::all(client.clone()).list(&ListParams::default().limit(1)).await
    {
        Ok(_) => 200,
        Err(kube::Error::Api(s)) => s.code,
        Err(e) => panic!("listing namespaces failed below HTTP: {e}"),
    }
}

/// The phases of the three rotations, and the last operation, as one string.
async fn rotation_state(s: &CaseShoot) -> Result<String, String> {
    s.field(
        "{.status.credentials.rotation.certificateAuthorities.phase}/\
         {.status.credentials.rotation.serviceAccountKey.phase}/\
         {.status.credentials.rotation.etcdEncryptionKey.phase}/\
         {.status.lastOperation.type}/{.status.lastOperation.state}/\
         {.metadata.annotations.gardener\\.cloud/operation}",
    )
    .await
}

/// Annotates the shoot with `operation` and waits until every rotation reached `phase` in a
/// successful reconcile; returns how long that took.
async fn rotate(s: &CaseShoot, operation: &str, phase: &str) -> Duration {
    let annotation = format!("gardener.cloud/operation={operation}");
    kubectl(&["-n", PROJECT_NS, "annotate", "shoot", &s.name, &annotation, "--overwrite"]).unwrap();
    let want = format!("{phase}/{phase}/{phase}/Reconcile/Succeeded/");
    let ((), took) = s
        .wait(&format!("{operation}: every rotation {phase}"), CREATE_TIMEOUT, || async {
            let state = rotation_state(s).await?;
            assert!(!state.contains("/Reconcile/Failed/"), "{operation} failed: {state}\n{}", s.diagnosis());
            if state == want { Ok(Some(())) } else { Err(state) }
        })
        .await;
    took
}

/// The machine carries only pause, busybox, kube-proxy and cluster DNS; anything else comes from
/// the local cluster's registry (provider-local's `--registry-mirror`): gardenlet's image runs
/// `gardenlet --version` on the shoot's node.
async fn a_pod_runs_an_image_the_machine_does_not_carry(s: &CaseShoot, shoot: &Client) {
    let archive = std::fs::read_dir(e2e::images())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|f| f.starts_with("gardener-rs.local_gardenlet_v") && f.ends_with(".tar"))
        .expect("the gardenlet image in the image cache (hack/images.sh)");
    let version = archive.trim_start_matches("gardener-rs.local_gardenlet_v").trim_end_matches(".tar").to_string();
    let pods: Api<Pod> = Api::namespaced(shoot.clone(), "default");
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "pulled"},
        "spec": {"restartPolicy": "Never", "containers": [{
            "name": "gardenlet",
            "image": format!("gardener-rs.local/gardenlet:v{version}"),
            "imagePullPolicy": "IfNotPresent",
            "command": ["/usr/local/bin/gardenlet", "--version"],
        }]},
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let (phase, took) = s
        .wait("the pod with a pulled image runs to completion", STEP_TIMEOUT, || async {
            let p = pods.get("pulled").await.map_err(|e| e.to_string())?;
            let status = p.status.unwrap_or_default();
            let waiting = status.container_statuses.iter().flatten().filter_map(|c| c.state.as_ref()?.waiting.as_ref());
            if let Some(w) = waiting.into_iter().find(|w| w.reason.as_deref() == Some("ErrImagePull")) {
                return Err(format!("ErrImagePull: {}", w.message.clone().unwrap_or_default()));
            }
            let phase = status.phase.unwrap_or_default();
            Ok(matches!(phase.as_str(), "Succeeded" | "Failed").then_some(phase))
        })
        .await;
    let pulled = pulled_events(shoot, "pulled").await;
    eprintln!("pod with gardenlet's image (pulled from the registry) completed after {took:?}: {pulled}");
    assert_eq!(phase, "Succeeded", "pod pulled\n{}", s.diagnosis());
    let log = pods.logs("pulled", &Default::default()).await.unwrap();
    assert_eq!(log.trim(), format!("gardenlet {version}"), "gardenlet --version, from the pulled image");
    pods.delete("pulled", &Default::default()).await.unwrap();
}

/// The kubelet's "Pulled" event of a pod (it names the pull's duration).
async fn pulled_events(shoot: &Client, pod: &str) -> String {
    let events: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(shoot.clone(), "default");
    let list = events.list(&ListParams::default().fields(&format!("involvedObject.name={pod}"))).await;
    list.map(|l| {
        l.items
            .into_iter()
            .filter(|e| e.reason.as_deref() == Some("Pulled"))
            .filter_map(|e| e.message)
            .collect::<Vec<_>>()
            .join("; ")
    })
    .unwrap_or_else(|e| e.to_string())
}

/// The Ready Nodes of the shoot, by name.
async fn ready_nodes(client: &Client) -> Result<Vec<String>, String> {
    let list = Api::<Node>::all(client.clone()).list(&ListParams::default()).await.map_err(|e| e.to_string())?;
    Ok(list.items.iter().filter(|n| node_ready(n)).map(ResourceExt::name_any).collect())
}

/// Runs a pod to completion on the shoot and reads its log through the API server (the API
/// server reaches the kubelet with its client certificate; the kubelet reached the API server
/// with its own).
async fn a_pod_runs_and_its_log_is_read(s: &CaseShoot, client: &Client, name: &str) {
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": name},
        "spec": {"restartPolicy": "Never", "containers": [{
            "name": "c", "image": "gardener-rs.local/busybox:1.35.0", "command": ["echo", name],
        }]},
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let (phase, _) = s
        .wait(&format!("pod {name} runs to completion"), STEP_TIMEOUT, || async {
            let p = pods.get(name).await.map_err(|e| e.to_string())?;
            let phase = p.status.as_ref().and_then(|s| s.phase.clone()).unwrap_or_default();
            Ok(matches!(phase.as_str(), "Succeeded" | "Failed").then_some(phase))
        })
        .await;
    assert_eq!(phase, "Succeeded", "pod {name}\n{}", s.diagnosis());
    assert_eq!(pods.logs(name, &Default::default()).await.unwrap().trim(), name, "the log of pod {name}");
}

/// All credentials at once (`rotate-credentials-start`, then `-complete`), on the shoot with its
/// real node: the CA, the service-account key and the etcd encryption key.
async fn credentials_rotate_on_the_real_node(s: &CaseShoot) {
    let before = s.kubeconfig().unwrap();
    let old_admin: kube::config::AuthInfo = Kubeconfig::from_yaml(&before).unwrap().auth_infos[0]
        .auth_info
        .clone()
        .expect("the admin kubeconfig has a user");
    // A token issued before the rotation: the default ServiceAccount's token Secret.
    let admin = client_from(&before, None).await;
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(admin.clone(), "default");
    let (token, _) = s
        .wait("the default ServiceAccount has a token", STEP_TIMEOUT, || async {
            let list = secrets.list(&ListParams::default()).await.map_err(|e| e.to_string())?;
            Ok(list
                .items
                .into_iter()
                .filter(|s| s.type_.as_deref() == Some("kubernetes.io/service-account-token"))
                .find_map(|s| s.data.and_then(|d| d.get("token").map(|t| String::from_utf8_lossy(&t.0).into_owned()))))
        })
        .await;
    let token_text = token.clone();
    let old_token: kube::config::AuthInfo = serde_json::from_value(serde_json::json!({"token": token})).unwrap();
    assert_eq!(namespaces_status(&client_from(&before, Some(&old_token)).await).await, 403, "the token before");
    let nodes_before = ready_nodes(&admin).await.unwrap();

    let prepared = rotate(s, "rotate-credentials-start", "Prepared").await;
    eprintln!("rotation phase one (rotate-credentials-start) took {prepared:?}");
    let between = s.kubeconfig().unwrap();
    let admin = client_from(&between, None).await;
    let (nodes, _) = s
        .wait("a Ready node after phase one", STEP_TIMEOUT, || async {
            Ok(Some(ready_nodes(&admin).await?).filter(|n| !n.is_empty()))
        })
        .await;
    eprintln!("Ready nodes before the rotation {nodes_before:?}, after phase one {nodes:?}");
    assert_eq!(namespaces_status(&client_from(&between, Some(&old_admin)).await).await, 200, "old admin, phase one");
    assert_eq!(namespaces_status(&client_from(&between, Some(&old_token)).await).await, 403, "old token, phase one");
    // The default ServiceAccount's first token is now one of the new key (what new pods mount).
    let (new_token, _) = s
        .wait("a token of the new key for the default ServiceAccount", STEP_TIMEOUT, || async {
            let sa = Api::<k8s_openapi::api::core::v1::ServiceAccount>::namespaced(admin.clone(), "default")
                .get("default")
                .await
                .map_err(|e| e.to_string())?;
            let first = sa.secrets.unwrap_or_default().into_iter().next().and_then(|r| r.name).unwrap_or_default();
            let secret = Api::<k8s_openapi::api::core::v1::Secret>::namespaced(admin.clone(), "default")
                .get_opt(&first)
                .await
                .map_err(|e| e.to_string())?;
            let token = secret.and_then(|s| s.data).and_then(|d| d.get("token").map(|t| t.0.clone()));
            Ok(token.map(|t| String::from_utf8_lossy(&t).into_owned()).filter(|t| *t != token_text))
        })
        .await;
    let new_token: kube::config::AuthInfo = serde_json::from_value(serde_json::json!({"token": new_token})).unwrap();
    assert_eq!(namespaces_status(&client_from(&between, Some(&new_token)).await).await, 403, "new token, phase one");
    a_pod_runs_and_its_log_is_read(s, &admin, "after-phase-one").await;

    let completed = rotate(s, "rotate-credentials-complete", "Completed").await;
    eprintln!("rotation phase two (rotate-credentials-complete) took {completed:?}");
    let after = s.kubeconfig().unwrap();
    let admin = client_from(&after, None).await;
    assert_eq!(namespaces_status(&client_from(&after, Some(&old_admin)).await).await, 401, "old admin, phase two");
    assert_eq!(namespaces_status(&client_from(&after, Some(&old_token)).await).await, 401, "old token, phase two");
    assert_eq!(namespaces_status(&client_from(&after, Some(&new_token)).await).await, 403, "new token, phase two");
    let (nodes, _) = s
        .wait("a Ready node after phase two", STEP_TIMEOUT, || async {
            Ok(Some(ready_nodes(&admin).await?).filter(|n| !n.is_empty()))
        })
        .await;
    eprintln!("Ready nodes after phase two {nodes:?}");
    a_pod_runs_and_its_log_is_read(s, &admin, "after-phase-two").await;
    let kept = Api::<ConfigMap>::namespaced(admin, "default").get("kept").await.unwrap();
    assert_eq!(kept.data.unwrap_or_default().get("k").map(String::as_str), Some("v"), "the ConfigMap, re-encrypted");
}

fn node_ready(n: &Node) -> bool {
    n.status.iter().flat_map(|s| s.conditions.iter().flatten()).any(|c| c.type_ == "Ready" && c.status == "True")
}

/// Created means usable: the Worker waits for its machines' Nodes, so every condition holds.
async fn every_condition_holds(s: &CaseShoot) {
    for condition in ["APIServerAvailable", "ControlPlaneHealthy", "EveryNodeReady", "SystemComponentsHealthy"] {
        let status = s.field(&format!("{{.status.conditions[?(@.type==\"{condition}\")].status}}")).await.unwrap();
        assert_eq!(status, "True", "condition {condition} of the created shoot\n{}", s.diagnosis());
    }
}

/// A ConfigMap in the shoot, to find again after hibernation or a rotation.
async fn keep_a_config_map(shoot: &Client) {
    let configmaps: Api<ConfigMap> = Api::namespaced(shoot.clone(), "default");
    let cm: ConfigMap =
        serde_json::from_value(serde_json::json!({"metadata": {"name": "kept"}, "data": {"k": "v"}})).unwrap();
    configmaps.create(&PostParams::default(), &cm).await.unwrap();
    assert_eq!(configmaps.get("kept").await.unwrap().data.unwrap()["k"], "v");
}

/// Deletes the shoot and checks that nothing of it is left: its namespaces, volumes and its
/// machines' cgroups on the host (the cgroups of other cases' machines may be there).
async fn delete_without_leftovers(s: &mut CaseShoot) {
    let machines = s.machine_pod_uids();
    let deleted = s.delete().await;
    eprintln!("shoot {} deleted after {deleted:?}", s.name);
    let claims =
        kubectl(&["get", "pv", "-o", "jsonpath={range .items[*]}{.spec.claimRef.namespace}{\"\\n\"}{end}"]).unwrap();
    let left: Vec<&str> = claims.lines().filter(|ns| *ns == s.seed_ns || *ns == s.machine_ns).collect();
    assert!(left.is_empty(), "no volume of the shoot is left: {left:?}");
    let cgroups = walk_cgroups(std::path::Path::new("/sys/fs/cgroup/memory/kubepods"));
    let leftovers: Vec<&String> = cgroups
        .iter()
        .filter(|path| machines.iter().any(|uid| path.contains(uid) || path.contains(&uid.replace('-', "_"))))
        .collect();
    assert!(leftovers.is_empty(), "the machines' cgroups {machines:?} are gone from the host: {leftovers:?}");
}

/// The API server reads logs through the tunnel (docs/networking.md): with both agent Pods
/// deleted, reading the `hello` pod's log works again once their replacements have connected.
/// Two figures: how long the old agents took to go (their grace period and the kubelet: while
/// they stream on, a log read proves nothing of the new ones), and how long after that a log read
/// worked again (the new agents' start and connection, which is the tunnel's own outage).
async fn the_tunnel_comes_back_with_new_agents(s: &CaseShoot, shoot: &Client) {
    let agents: Api<Pod> = Api::namespaced(shoot.clone(), "kube-system");
    let selector = ListParams::default().labels("app=konnectivity-agent");
    let before: Vec<String> = agents.list(&selector).await.unwrap().items.iter().map(|p| p.name_any()).collect();
    assert_eq!(before.len(), 2, "two agents: {before:?}");
    agents.delete_collection(&Default::default(), &selector).await.unwrap();
    let ((), gone) = s
        .wait("the old agents are gone", STEP_TIMEOUT, || async {
            let now = agents.list(&selector).await.map_err(|e| e.to_string())?.items;
            Ok((!now.iter().any(|p| before.contains(&p.name_any()))).then_some(()))
        })
        .await;
    let pods: Api<Pod> = Api::namespaced(shoot.clone(), "default");
    let (log, back) = s
        .wait("the log reads again through new agents", STEP_TIMEOUT, || async {
            pods.logs("hello", &Default::default()).await.map(Some).map_err(|e| e.to_string())
        })
        .await;
    eprintln!(
        "the old agents were gone {gone:?} after their deletion; logs read through new agents {back:?} after that"
    );
    assert_eq!(log.trim(), "hello from hello on the shoot");
}

#[tokio::test]
async fn a_shoot_gets_a_real_node_runs_workloads_and_is_deleted_without_leftovers() {
    let mut s = CaseShoot::apply("use", 21);
    let created = s.created().await;
    eprintln!("shoot {} created after {created:?}", s.name);
    every_condition_holds(&s).await;

    let shoot = s.ready_client().await;
    the_advertised_name_resolves_and_serves_the_shoot(&s).await;
    let nodes: Api<Node> = Api::all(shoot.clone());
    let (node, ready_after) = s
        .wait("the worker's Node is Ready", Duration::from_secs(30), || async {
            let list = nodes.list(&ListParams::default()).await.map_err(|e| e.to_string())?;
            Ok(list.items.into_iter().find(node_ready))
        })
        .await;
    eprintln!("node {} Ready {ready_after:?} after the shoot was created", node.name_any());
    let labels = node.labels();
    assert_eq!(labels.get("worker.gardener.cloud/pool").map(String::as_str), Some("local"), "the pool label");

    let pods: Api<Pod> = Api::namespaced(shoot.clone(), "default");
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "hello"},
        "spec": {
            "restartPolicy": "Never",
            "containers": [{
                "name": "hello",
                "image": "gardener-rs.local/busybox:1.35.0",
                "command": ["sh", "-c", "echo hello from $(hostname) on the shoot"],
            }],
        },
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let (phase, ran) = s
        .wait("the pod runs to completion on the node", STEP_TIMEOUT, || async {
            let p = pods.get("hello").await.map_err(|e| e.to_string())?;
            let phase = p.status.as_ref().and_then(|s| s.phase.clone()).unwrap_or_default();
            Ok(matches!(phase.as_str(), "Succeeded" | "Failed").then_some(phase))
        })
        .await;
    eprintln!("pod completed after {ran:?}");
    let scheduled = pods.get("hello").await.unwrap().spec.and_then(|s| s.node_name).unwrap_or_default();
    assert_eq!(scheduled, node.name_any(), "the pod ran on the worker's node");
    let log = pods.logs("hello", &Default::default()).await.unwrap();
    assert_eq!(phase, "Succeeded", "log: {log}");
    assert_eq!(log.trim(), "hello from hello on the shoot", "the log, read through the shoot's API server");
    the_tunnel_comes_back_with_new_agents(&s, &shoot).await;

    a_pod_reaches_a_service_by_ip_and_by_name(&s, &shoot).await;
    kube_proxy_ran_every_tool_it_calls(&s, &shoot).await;
    a_pod_runs_an_image_the_machine_does_not_carry(&s, &shoot).await;
    delete_without_leftovers(&mut s).await;
}

#[tokio::test]
async fn a_shoot_hibernates_keeps_its_data_and_wakes_up() {
    let mut s = CaseShoot::apply("hib", 22);
    let created = s.created().await;
    eprintln!("shoot {} created after {created:?}", s.name);
    keep_a_config_map(&s.ready_client().await).await;

    // Hibernation: machines and control plane scaled to zero, etcd's volume kept.
    s.set_hibernation(true);
    let ((), hibernated) = s
        .wait("the shoot hibernates", CREATE_TIMEOUT, || async {
            let state =
                s.field("{.status.hibernated}/{.status.lastOperation.type}/{.status.lastOperation.state}").await?;
            let pods = kubectl(&["-n", &s.seed_ns, "get", "pods", "-o", "name"])?
                + &kubectl(&["-n", &s.machine_ns, "get", "pods", "-o", "name"])?;
            Ok((state == "true/Reconcile/Succeeded" && pods.trim().is_empty()).then_some(()))
        })
        .await;
    eprintln!("shoot hibernated after {hibernated:?}");
    let claims = kubectl(&["-n", &s.seed_ns, "get", "pvc", "-o", "name"]).unwrap();
    assert!(claims.contains("data-etcd-main-0"), "etcd's volume is kept while hibernated: {claims}");

    // Waking up brings the same cluster back: the ConfigMap is there, the node rejoins.
    s.set_hibernation(false);
    let (kept, woken) = s
        .wait("the shoot wakes up with its data and a Ready node", CREATE_TIMEOUT, || async {
            let state =
                s.field("{.status.hibernated}/{.status.lastOperation.type}/{.status.lastOperation.state}").await?;
            if state != "false/Reconcile/Succeeded" {
                return Ok(None);
            }
            let client = s.client().await?;
            let ready = Api::<Node>::all(client.clone())
                .list(&ListParams::default())
                .await
                .map_err(|e| e.to_string())?
                .items
                .iter()
                .any(node_ready);
            let cm =
                Api::<ConfigMap>::namespaced(client, "default").get_opt("kept").await.map_err(|e| e.to_string())?;
            Ok(ready.then_some(cm))
        })
        .await;
    eprintln!("shoot woke up with a Ready node after {woken:?}");
    assert_eq!(
        kept.and_then(|c| c.data).unwrap_or_default().get("k").map(String::as_str),
        Some("v"),
        "the ConfigMap survived"
    );
    delete_without_leftovers(&mut s).await;
}

#[tokio::test]
async fn credentials_rotate_in_two_phases_on_the_real_node() {
    let mut s = CaseShoot::apply("rot", 23);
    let created = s.created().await;
    eprintln!("shoot {} created after {created:?}", s.name);
    keep_a_config_map(&s.ready_client().await).await;
    credentials_rotate_on_the_real_node(&s).await;
    delete_without_leftovers(&mut s).await;
}

/// The key pair is rotated first (`rotate-ssh-keypair`), so the bastion step can check that the
/// previous pair is still accepted next to the current one. A case of its own, beside the
/// credential rotation, so that neither waits for the other.
#[tokio::test]
async fn ssh_reaches_the_node_through_a_bastion_with_the_current_and_the_previous_key_pair() {
    let mut s = CaseShoot::apply("ssh", 24);
    let created = s.created().await;
    eprintln!("shoot {} created after {created:?}", s.name);
    let before = s.field("{.status.credentials.rotation.sshKeypair.lastCompletionTime}").await.unwrap();
    kubectl(&[
        "-n",
        PROJECT_NS,
        "annotate",
        "shoot",
        &s.name,
        "gardener.cloud/operation=rotate-ssh-keypair",
        "--overwrite",
    ])
    .unwrap();
    let (_, took) = s
        .wait("rotate-ssh-keypair: a new completion time in a successful reconcile", CREATE_TIMEOUT, || async {
            let state = s
                .field(
                    "{.status.credentials.rotation.sshKeypair.lastCompletionTime}/\
                 {.status.lastOperation.type}/{.status.lastOperation.state}/\
                 {.metadata.annotations.gardener\\.cloud/operation}",
                )
                .await?;
            assert!(!state.contains("/Reconcile/Failed/"), "rotate-ssh-keypair failed: {state}\n{}", s.diagnosis());
            let done = state.ends_with("/Reconcile/Succeeded/") && !state.starts_with(&format!("{before}/"));
            if done { Ok(Some(())) } else { Err(state) }
        })
        .await;
    eprintln!("rotate-ssh-keypair took {took:?}");
    bastion::ssh_through_a_bastion_reaches_the_node(&s, &s.ready_client().await).await;
    delete_without_leftovers(&mut s).await;
}

/// cgroup directories named `machine` (a machine's kubelet root) below `dir`.
fn walk_cgroups(dir: &std::path::Path) -> Vec<String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            if e.file_name() == "machine" {
                found.push(e.path().display().to_string());
            } else {
                found.extend(walk_cgroups(&e.path()));
            }
        }
    }
    found
}
