use super::*;
use crate::components::kube_apiserver;
use crate::components::tests::values;

fn agent_values() -> AgentValues {
    AgentValues {
        server_host: "10.0.0.20".into(),
        allowed: vec!["10.96.0.0/11".into(), "10.112.0.0/13".into()],
        image: "gardener-rs.local/konnectivity:v0".into(),
        ca: "CA PEM".into(),
        cert: "CERT PEM".into(),
        key: "-----BEGIN PRIVATE KEY-----secret".into(),
    }
}

#[test]
fn the_api_servers_cluster_egress_goes_to_the_servers_socket() {
    let config: serde_json::Value = serde_yaml::from_str(&egress_selector_configuration()).unwrap();
    assert_eq!(config["kind"], "EgressSelectorConfiguration");
    let selections = config["egressSelections"].as_array().unwrap();
    assert_eq!(selections.len(), 1, "only cluster goes through the tunnel: {selections:?}");
    assert_eq!(selections[0]["name"], "cluster");
    assert_eq!(selections[0]["connection"]["proxyProtocol"], "HTTPConnect");
    assert_eq!(selections[0]["connection"]["transport"]["uds"]["udsName"], SOCKET);
}

#[test]
fn a_shoot_with_workers_runs_the_server_beside_its_api_server() {
    let values = values();
    let deployment = kube_apiserver::deployment(&values);
    let pod = deployment.spec.unwrap().template.spec.unwrap();
    let names: Vec<&str> = pod.containers.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["kube-apiserver", SERVER]);
    // Both mount the socket's volume; the API server is told to use it.
    for container in &pod.containers {
        let mounts = container.volume_mounts.as_deref().unwrap_or_default();
        assert!(
            mounts.iter().any(|m| m.name == SOCKET_VOLUME && SOCKET.starts_with(&m.mount_path)),
            "{}",
            container.name
        );
    }
    let args = pod.containers[0].args.clone().unwrap_or_default();
    assert!(args.contains(&format!("--egress-selector-config-file={EGRESS_DIR}/{EGRESS_KEY}")), "{args:?}");
    assert!(args.contains(&"--enable-aggregator-routing=true".to_string()), "{args:?}");
    // `kubectl logs deploy/kube-apiserver` still means the API server.
    let template = kube_apiserver::deployment(&values).spec.unwrap().template;
    let annotations = template.metadata.unwrap().annotations.unwrap();
    assert_eq!(annotations["kubectl.kubernetes.io/default-logs-container"], "kube-apiserver");
    assert!(kube_apiserver::config_maps(&values).iter().any(|c| c.metadata.name.as_deref() == Some(EGRESS_CONFIG_MAP)));
    // The server presents the API server's certificate and checks agents against the client CA.
    let command = pod.containers[1].command.clone().unwrap_or_default();
    assert!(command.contains(&"--cluster-cert=/srv/kubernetes/kube-apiserver/tls.crt".to_string()), "{command:?}");
    assert!(
        command.contains(&"--cluster-ca-cert=/srv/kubernetes/ca-client-bundle/bundle.crt".to_string()),
        "{command:?}"
    );
    let service = kube_apiserver::service(&values, crate::config::ServiceType::ClusterIP, None);
    let ports = service.spec.unwrap().ports.unwrap();
    assert!(ports.iter().any(|p| p.port == AGENT_PORT), "{ports:?}");
}

#[test]
fn a_workerless_shoot_has_no_tunnel() {
    let mut values = values();
    values.tunnel = false;
    let pod = kube_apiserver::deployment(&values).spec.unwrap().template.spec.unwrap();
    assert_eq!(pod.containers.len(), 1);
    let args = pod.containers[0].args.clone().unwrap_or_default();
    assert!(!args.iter().any(|a| a.starts_with("--egress-selector-config-file")), "{args:?}");
    assert!(!args.iter().any(|a| a.starts_with("--enable-aggregator-routing")), "{args:?}");
    assert!(
        !kube_apiserver::config_maps(&values).iter().any(|c| c.metadata.name.as_deref() == Some(EGRESS_CONFIG_MAP))
    );
    let service = kube_apiserver::service(&values, crate::config::ServiceType::ClusterIP, None);
    assert_eq!(service.spec.unwrap().ports.unwrap().len(), 1);
}

#[test]
fn agents_dial_the_service_address_and_only_the_shoots_ranges() {
    let deployment = agent_deployment(&agent_values());
    let command: Vec<String> =
        serde_json::from_value(deployment["spec"]["template"]["spec"]["containers"][0]["command"].clone()).unwrap();
    assert!(command.contains(&"--proxy-server-host=10.0.0.20".to_string()), "{command:?}");
    assert!(command.contains(&format!("--proxy-server-port={AGENT_PORT}")), "{command:?}");
    assert!(command.contains(&"--allowed-cidr=10.96.0.0/11,10.112.0.0/13".to_string()), "{command:?}");
    assert_eq!(deployment["spec"]["replicas"], AGENT_REPLICAS);
    // Unprivileged: no root, no capabilities, a read-only root.
    let security = &deployment["spec"]["template"]["spec"]["containers"][0]["securityContext"];
    assert_eq!(security["readOnlyRootFilesystem"], true);
    assert_eq!(security["capabilities"]["drop"][0], "ALL");
    assert_eq!(deployment["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"], true);
}

#[test]
fn a_new_certificate_rolls_the_agents() {
    let checksum = |v: &AgentValues| agent_deployment(v)["spec"]["template"]["metadata"]["annotations"].clone();
    let mut rotated = agent_values();
    rotated.cert = "NEW CERT PEM".into();
    assert_ne!(checksum(&agent_values()), checksum(&rotated));
    assert_eq!(checksum(&agent_values()), checksum(&agent_values()));
}

#[test]
fn the_agents_key_is_in_its_secret_and_never_in_debug() {
    let values = agent_values();
    assert!(!format!("{values:?}").contains("PRIVATE KEY"));
    let secret = agent_secret(&values);
    assert_eq!(secret["data"]["tls.key"], b64(&values.key));
}

#[test]
fn the_agents_may_only_watch_nodes() {
    let role = agent_cluster_role();
    assert_eq!(
        role["rules"],
        serde_json::json!([{ "apiGroups": [""], "resources": ["nodes"], "verbs": ["list", "watch"] }])
    );
}
