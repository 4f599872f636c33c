use super::common::{ApiServerSettings, ControlPlaneValues, Images, secrets};
use super::{etcd, kube_apiserver, kube_controller_manager, kube_scheduler};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{PodTemplateSpec, Service, ServiceSpec, ServiceStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use std::collections::BTreeMap;

/// A control plane's values for the components' tests (also `security::tests`).
pub(super) fn values() -> ControlPlaneValues {
    ControlPlaneValues {
        namespace: "shoot--dev--demo".into(),
        kubernetes_version: "1.20.2".into(),
        replicas: 1,
        etcd_replicas: 1,
        failure_tolerance: None,
        service_cidr: "10.112.0.0/13".into(),
        pod_cidr: Some("10.96.0.0/11".into()),
        tunnel: true,
        cluster_domain: "cluster.local".into(),
        advertised_host: "api.demo.dev.example.com".into(),
        images: Images::default(),
        owner: Some(OwnerReference {
            api_version: "extensions.gardener.cloud/v1alpha1".into(),
            kind: "Cluster".into(),
            name: "shoot--dev--demo".into(),
            uid: "1234".into(),
            controller: Some(false),
            block_owner_deletion: Some(false),
        }),
        apiserver: ApiServerSettings::default(),
        controller_manager: Default::default(),
        scheduler: Default::default(),
        secret_checksums: BTreeMap::from([("kube-apiserver".to_string(), "abc".to_string())]),
        etcd_backup: None,
        etcd_defragmentation_schedule: "0 0 */3 * *".to_string(),
        requests_percent: 100,
    }
}

fn flag<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter().find_map(|a| a.strip_prefix(&format!("--{name}=")))
}

fn template(d: &Deployment) -> &PodTemplateSpec {
    &d.spec.as_ref().unwrap().template
}

fn mounted(t: &PodTemplateSpec) -> Vec<(String, String)> {
    let spec = t.spec.as_ref().unwrap();
    let volumes = spec.volumes.as_ref().unwrap();
    let mounts = spec.containers[0].volume_mounts.as_ref().unwrap();
    mounts
        .iter()
        .filter_map(|m| {
            let v = volumes.iter().find(|v| v.name == m.name)?;
            Some((v.secret.as_ref()?.secret_name.clone()?, m.mount_path.clone()))
        })
        .collect()
}

#[test]
fn apiserver_flags_follow_kubeadm() {
    let args = kube_apiserver::args(&values());
    let want = [
        ("authorization-mode", "Node,RBAC"),
        ("enable-bootstrap-token-auth", "true"),
        ("client-ca-file", "/srv/kubernetes/ca-client-bundle/bundle.crt"),
        ("tls-cert-file", "/srv/kubernetes/kube-apiserver/tls.crt"),
        ("tls-private-key-file", "/srv/kubernetes/kube-apiserver/tls.key"),
        ("kubelet-client-certificate", "/srv/kubernetes/kube-apiserver-kubelet/tls.crt"),
        ("service-account-key-file", "/srv/kubernetes/service-account-key/sa.pub"),
        ("service-account-signing-key-file", "/srv/kubernetes/service-account-key/sa.key"),
        ("service-account-issuer", "https://api.demo.dev.example.com"),
        ("requestheader-client-ca-file", "/srv/kubernetes/ca-front-proxy-bundle/bundle.crt"),
        ("requestheader-allowed-names", "front-proxy-client"),
        ("requestheader-username-headers", "X-Remote-User"),
        ("requestheader-group-headers", "X-Remote-Group"),
        ("requestheader-extra-headers-prefix", "X-Remote-Extra-"),
        ("proxy-client-cert-file", "/srv/kubernetes/front-proxy-client/tls.crt"),
        ("etcd-servers", "https://etcd-main-client:2379"),
        ("etcd-cafile", "/srv/kubernetes/ca-etcd-bundle/bundle.crt"),
        ("etcd-certfile", "/srv/kubernetes/etcd-client/tls.crt"),
        ("service-cluster-ip-range", "10.112.0.0/13"),
        ("allow-privileged", "true"),
        ("insecure-port", "0"),
        ("secure-port", "8443"),
    ];
    for (name, value) in want {
        assert_eq!(flag(&args, name), Some(value), "--{name}");
    }
    let plugins = flag(&args, "enable-admission-plugins").unwrap();
    assert!(plugins.contains("NodeRestriction") && plugins.contains("ServiceAccount"), "{plugins}");
    assert!(flag(&args, "feature-gates").is_none());
}

#[test]
fn apiserver_takes_shoot_settings_and_drops_removed_flags() {
    let mut v = values();
    v.kubernetes_version = "1.28.3".into();
    v.apiserver.feature_gates = BTreeMap::from([("Foo".to_string(), true), ("Bar".to_string(), false)]);
    v.apiserver.runtime_config = BTreeMap::from([("scheduling.k8s.io/v1alpha1".to_string(), true)]);
    v.apiserver.admission_plugins = vec!["PodNodeSelector".into(), "NodeRestriction".into()];
    let args = kube_apiserver::args(&v);
    assert_eq!(flag(&args, "insecure-port"), None, "removed in 1.24");
    assert_eq!(flag(&args, "feature-gates"), Some("Bar=false,Foo=true"));
    assert_eq!(flag(&args, "runtime-config"), Some("scheduling.k8s.io/v1alpha1=true"));
    let plugins = flag(&args, "enable-admission-plugins").unwrap();
    assert!(plugins.ends_with(",PodNodeSelector"), "added once, after the defaults: {plugins}");
    assert_eq!(plugins.matches("NodeRestriction").count(), 1);
}

#[test]
fn apiserver_deployment_mounts_probes_resources_labels_and_owner() {
    let d = kube_apiserver::deployment(&values());
    let meta = &d.metadata;
    assert_eq!(meta.namespace.as_deref(), Some("shoot--dev--demo"));
    assert_eq!(meta.owner_references.as_ref().unwrap()[0].kind, "Cluster");
    let labels = meta.labels.as_ref().unwrap();
    assert_eq!(labels["gardener.cloud/role"], "controlplane");
    assert_eq!(labels["role"], "apiserver");
    let spec = d.spec.as_ref().unwrap();
    assert_eq!(spec.replicas, Some(1));
    assert_eq!(spec.selector.match_labels.as_ref().unwrap()["role"], "apiserver");
    let t = template(&d);
    assert_eq!(t.metadata.as_ref().unwrap().labels.as_ref().unwrap()["role"], "apiserver");
    let mounts = mounted(t);
    assert_eq!(mounts.len(), kube_apiserver::MOUNTED_SECRETS.len());
    assert!(mounts.contains(&("kube-apiserver".to_string(), "/srv/kubernetes/kube-apiserver".to_string())));
    // Secrets with a CA key are never mounted into the API server.
    assert!(!mounts.iter().any(|(s, _)| s == secrets::CA_CLIENT), "{mounts:?}");
    let c = &t.spec.as_ref().unwrap().containers[0];
    assert_eq!(c.image.as_deref(), Some("registry.k8s.io/kube-apiserver:v1.20.2"));
    let ready = c.readiness_probe.as_ref().unwrap().http_get.as_ref().unwrap();
    assert_eq!((ready.path.as_deref(), ready.scheme.as_deref()), (Some("/readyz"), Some("HTTPS")));
    let live = c.liveness_probe.as_ref().unwrap().http_get.as_ref().unwrap();
    assert_eq!(live.path.as_deref(), Some("/livez"));
    let requests = c.resources.as_ref().unwrap().requests.as_ref().unwrap();
    assert!(requests.contains_key("cpu") && requests.contains_key("memory"));
    let annotations = t.metadata.as_ref().unwrap().annotations.as_ref().unwrap();
    assert_eq!(annotations["checksum/secret-kube-apiserver"], "abc", "a new certificate rolls the pods");
}

#[test]
fn hibernation_replicas_reach_every_component() {
    let mut v = values();
    v.replicas = 0;
    v.etcd_replicas = 0;
    for d in [kube_apiserver::deployment(&v), kube_controller_manager::deployment(&v), kube_scheduler::deployment(&v)] {
        assert_eq!(d.spec.unwrap().replicas, Some(0));
    }
    assert_eq!(etcd::statefulset(&v).spec.unwrap().replicas, Some(0));
}

#[test]
fn controller_manager_signs_with_the_client_ca_and_runs_bootstrap_controllers() {
    let args = kube_controller_manager::args(&values());
    assert_eq!(flag(&args, "cluster-signing-cert-file"), Some("/srv/kubernetes/ca-client/ca.crt"));
    assert_eq!(flag(&args, "cluster-signing-key-file"), Some("/srv/kubernetes/ca-client/ca.key"));
    assert_eq!(flag(&args, "root-ca-file"), Some("/srv/kubernetes/ca-bundle/bundle.crt"));
    assert_eq!(flag(&args, "service-account-private-key-file"), Some("/srv/kubernetes/service-account-key/sa.key"));
    assert_eq!(flag(&args, "use-service-account-credentials"), Some("true"));
    assert_eq!(flag(&args, "controllers"), Some("*,bootstrapsigner,tokencleaner"));
    assert_eq!(flag(&args, "cluster-cidr"), Some("10.96.0.0/11"));
    assert_eq!(flag(&args, "allocate-node-cidrs"), Some("true"));
    let mut v = values();
    v.pod_cidr = None;
    assert_eq!(flag(&kube_controller_manager::args(&v), "allocate-node-cidrs"), None);
    let d = kube_controller_manager::deployment(&values());
    assert_eq!(mounted(template(&d)).len(), kube_controller_manager::MOUNTED_SECRETS.len());
}

#[test]
fn scheduler_uses_its_kubeconfig() {
    // With --config kube-scheduler ignores --kubeconfig and --leader-elect: both are in the file.
    let args = kube_scheduler::args(&values());
    assert_eq!(flag(&args, "config"), Some("/var/lib/kube-scheduler-config/config.yaml"));
    assert_eq!(flag(&args, "kubeconfig"), None);
    let config: serde_json::Value =
        serde_yaml::from_str(&kube_scheduler::configuration_text(&values()).unwrap()).unwrap();
    assert_eq!(config["clientConnection"]["kubeconfig"], "/srv/kubernetes/kubeconfig-kube-scheduler/kubeconfig");
    assert_eq!(config["leaderElection"]["leaderElect"], true);
    let d = kube_scheduler::deployment(&values());
    let probe = template(&d).spec.as_ref().unwrap().containers[0].liveness_probe.clone().unwrap();
    assert_eq!(probe.http_get.unwrap().port, k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(10259));
}

#[test]
fn etcd_uses_tls_for_clients_and_peers() {
    let sts = etcd::statefulset(&values());
    let spec = sts.spec.as_ref().unwrap();
    assert_eq!(spec.service_name.as_deref(), Some("etcd-main-peer"));
    let c = &spec.template.spec.as_ref().unwrap().containers[0];
    let args = c.args.as_ref().unwrap();
    assert_eq!(flag(args, "client-cert-auth"), Some("true"));
    assert_eq!(flag(args, "peer-client-cert-auth"), Some("true"));
    assert_eq!(flag(args, "cert-file"), Some("/srv/kubernetes/etcd-server/tls.crt"));
    assert_eq!(flag(args, "trusted-ca-file"), Some("/srv/kubernetes/ca-etcd-bundle/bundle.crt"));
    assert_eq!(
        flag(args, "initial-cluster"),
        Some("etcd-main-0=https://etcd-main-0.etcd-main-peer.shoot--dev--demo.svc:2380")
    );
    assert!(flag(args, "listen-client-urls").unwrap().starts_with("https://"));
    assert_eq!(spec.volume_claim_templates.as_ref().unwrap()[0].metadata.name.as_deref(), Some("data"));
    assert_eq!(etcd::peer_service(&values()).spec.unwrap().cluster_ip.as_deref(), Some("None"));
    assert_eq!(etcd::client_service(&values()).spec.unwrap().ports.unwrap()[0].port, 2379);
}

#[test]
fn a_highly_available_etcd_has_three_members_kept_apart() {
    use super::common::FailureToleranceType;
    let plain = etcd::statefulset(&values());
    assert_eq!(plain.spec.as_ref().unwrap().template.spec.as_ref().unwrap().topology_spread_constraints, None);
    for (tolerance, keys) in [
        (FailureToleranceType::Node, vec!["kubernetes.io/hostname"]),
        (FailureToleranceType::Zone, vec!["kubernetes.io/hostname", "topology.kubernetes.io/zone"]),
    ] {
        let mut v = values();
        v.failure_tolerance = Some(tolerance);
        v.etcd_replicas = v.etcd_members();
        let sts = etcd::statefulset(&v);
        let spec = sts.spec.as_ref().unwrap();
        assert_eq!(spec.replicas, Some(3));
        let pod = spec.template.spec.as_ref().unwrap();
        let args = pod.containers[0].args.as_ref().unwrap();
        let ns = "shoot--dev--demo";
        // The first member bootstraps alone; the others join through the join step, which
        // runs etcd with the etcd container's own flags and asks every member for the cluster.
        assert_eq!(
            flag(args, "initial-cluster"),
            Some(format!("etcd-main-0=https://etcd-main-0.etcd-main-peer.{ns}.svc:2380").as_str())
        );
        let init = pod.init_containers.as_ref().unwrap();
        assert_eq!(init.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["data-dir", "join"]);
        let join = init[1].args.as_ref().unwrap();
        let members: Vec<String> =
            (0..3).map(|i| format!("etcd-main-{i}=https://etcd-main-{i}.etcd-main-peer.{ns}.svc:2379")).collect();
        assert_eq!(flag(join, "members"), Some(members.join(",").as_str()));
        assert_eq!(flag(join, "peer-url"), Some(format!("https://$(POD_NAME).etcd-main-peer.{ns}.svc:2380").as_str()));
        let dashes = join.iter().position(|a| a == "--").unwrap();
        assert_eq!(&join[dashes + 1..], args.as_slice(), "the join runs etcd with etcd's own flags");
        assert_eq!(init[1].volume_mounts, pod.containers[0].volume_mounts, "and its mounts");
        let spread = pod.topology_spread_constraints.as_ref().unwrap();
        assert_eq!(spread.iter().map(|c| c.topology_key.as_str()).collect::<Vec<_>>(), keys, "{tolerance:?}");
        for c in spread {
            assert_eq!((c.max_skew, c.when_unsatisfiable.as_str()), (1, "DoNotSchedule"));
            assert_eq!(c.label_selector, Some(super::common::selector(etcd::APP, etcd::ROLE)));
        }
    }
}

#[test]
fn a_highly_available_control_plane_spreads_every_component_and_lets_one_pod_go_at_a_time() {
    use super::availability;
    use super::common::FailureToleranceType;
    let plain = values();
    for d in [kube_apiserver::deployment(&plain), kube_controller_manager::deployment(&plain)] {
        assert_eq!(template(&d).spec.as_ref().unwrap().topology_spread_constraints, None);
    }
    assert_eq!(etcd::disruption_budget(&plain), None, "no budget without a failure tolerance");
    let mut v = values();
    v.failure_tolerance = Some(FailureToleranceType::Node);
    v.replicas = availability::HA_REPLICAS;
    for d in [kube_apiserver::deployment(&v), kube_controller_manager::deployment(&v), kube_scheduler::deployment(&v)] {
        let spec = d.spec.as_ref().unwrap();
        assert_eq!(spec.replicas, Some(2));
        let spread = template(&d).spec.as_ref().unwrap().topology_spread_constraints.clone().unwrap();
        assert_eq!(spread.len(), 1);
        assert_eq!(spread[0].topology_key, "kubernetes.io/hostname");
        assert_eq!(spread[0].label_selector.as_ref(), Some(&spec.selector), "{:?}", d.metadata.name);
    }
    let budget = etcd::disruption_budget(&v).unwrap();
    assert_eq!(budget["apiVersion"], "policy/v1beta1");
    assert_eq!(budget["metadata"]["namespace"], "shoot--dev--demo");
    assert_eq!(budget["spec"]["maxUnavailable"], 1);
    assert_eq!(budget["spec"]["selector"]["matchLabels"]["app"], etcd::APP);
}

#[test]
fn with_a_backup_entry_etcd_restores_first_and_is_backed_up_by_a_sidecar_on_the_maintenance_schedule() {
    let mut v = values();
    v.etcd_backup = Some(super::etcd_backup::EtcdBackup {
        dir: "/var/lib/backup/bucket/entry".into(),
        settings: super::etcd_backup::EtcdBackupSettings { delta_snapshot_period_seconds: 5, ..Default::default() },
        full_snapshot_schedule: super::etcd_backup::full_snapshot_schedule(Some(22 * 3600)),
    });
    v.etcd_defragmentation_schedule = super::etcd_backup::defragmentation_schedule(Some(22 * 3600));
    let pod = etcd::statefulset(&v).spec.unwrap().template.spec.unwrap();
    let names: Vec<&str> = pod.containers.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["etcd", "backup"]);
    let sidecar = &pod.containers[1];
    let args = sidecar.args.as_ref().unwrap();
    assert_eq!(flag(args, "endpoint"), Some("https://localhost:2379"));
    assert_eq!(flag(args, "cert"), Some("/srv/kubernetes/etcd-server/tls.crt"));
    assert_eq!(flag(args, "store"), Some("/var/etcd/backup"));
    assert_eq!(flag(args, "full-snapshot-schedule"), Some("0 22 * * *"));
    assert_eq!(flag(args, "defragmentation-schedule"), Some("0 22 */3 * *"));
    assert_eq!(flag(args, "delta-snapshot-period-seconds"), Some("5"));
    assert!(sidecar.readiness_probe.is_some(), "failing backups show in the pod's readiness");
    let writable: Vec<bool> = sidecar
        .volume_mounts
        .iter()
        .flatten()
        .filter(|m| m.name == "backup")
        .map(|m| m.read_only != Some(true))
        .collect();
    assert_eq!(writable, [true], "the sidecar writes the store");
    let restore = pod.init_containers.as_ref().unwrap().iter().find(|c| c.name == "restore").unwrap();
    let args = restore.args.as_ref().unwrap();
    assert_eq!(restore.command.as_deref(), Some(&["etcd-backup".to_string(), "restore".to_string()][..]));
    assert_eq!(flag(args, "final-snapshot"), Some(etcd::FINAL_SNAPSHOT));
    assert_eq!(flag(args, "data-dir"), Some("/var/etcd/data"));
    assert_eq!(
        flag(args, "initial-cluster"),
        Some("$(POD_NAME)=https://$(POD_NAME).etcd-main-peer.shoot--dev--demo.svc:2380")
    );
    assert!(restore.volume_mounts.iter().flatten().any(|m| m.name == "backup" && m.read_only == Some(true)));
    let volume = pod.volumes.iter().flatten().find(|v| v.name == "backup").unwrap();
    assert_eq!(volume.host_path.as_ref().unwrap().path, "/var/lib/backup/bucket/entry");
    // Without a backup entry: no restore, and a sidecar without a store that only defragments
    // etcd on the maintenance schedule.
    let plain = etcd::statefulset(&values()).spec.unwrap().template.spec.unwrap();
    let names: Vec<&str> = plain.containers.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["etcd", "maintenance"]);
    let args = plain.containers[1].args.as_ref().unwrap();
    assert_eq!(flag(args, "defragmentation-schedule"), Some("0 0 */3 * *"));
    assert_eq!(flag(args, "endpoint"), Some("https://localhost:2379"));
    assert_eq!(flag(args, "store"), None, "nothing is stored");
    assert_eq!(flag(args, "full-snapshot-schedule"), None);
    assert!(plain.containers[1].volume_mounts.iter().flatten().all(|m| m.name != "backup"));
    assert!(plain.volumes.iter().flatten().all(|v| v.name != "backup"));
    assert!(!plain.init_containers.iter().flatten().any(|c| c.name == "restore"));
}

#[test]
fn service_address_depends_on_the_service_type() {
    let mut svc = kube_apiserver::service(&values(), kube_apiserver::ServiceType::ClusterIP, None);
    assert_eq!(kube_apiserver::service_address(&svc), None, "no address before the apiserver allocates one");
    svc.spec = Some(ServiceSpec { cluster_ip: Some("10.0.0.7".into()), ..svc.spec.unwrap() });
    assert_eq!(kube_apiserver::service_address(&svc).as_deref(), Some("10.0.0.7"));

    let mut lb: Service = kube_apiserver::service(&values(), kube_apiserver::ServiceType::LoadBalancer, None);
    lb.spec = Some(ServiceSpec { cluster_ip: Some("10.0.0.8".into()), ..lb.spec.unwrap() });
    assert_eq!(kube_apiserver::service_address(&lb), None, "a LoadBalancer waits for its ingress");
    lb.status = Some(
        serde_json::from_value::<ServiceStatus>(
            serde_json::json!({"loadBalancer": {"ingress": [{"hostname": "lb.example.com"}]}}),
        )
        .unwrap(),
    );
    assert_eq!(kube_apiserver::service_address(&lb).as_deref(), Some("lb.example.com"));
}

#[test]
fn an_exposure_class_handler_adds_its_service_metadata() {
    let handler: crate::config::ExposureClassHandler = serde_yaml::from_str(
        "name: internet\nloadBalancerService:\n  annotations: {lb.example/zone: public}\n  labels: {exposure: internet, app: not-kubernetes}\n",
    )
    .unwrap();
    let plain = kube_apiserver::service(&values(), kube_apiserver::ServiceType::LoadBalancer, None);
    let exposed = kube_apiserver::service(&values(), kube_apiserver::ServiceType::LoadBalancer, Some(&handler));
    assert_eq!(plain.metadata.annotations, None);
    assert!(!plain.metadata.labels.as_ref().unwrap().contains_key(kube_apiserver::LABEL_EXPOSURE_CLASS_HANDLER));
    let annotations = exposed.metadata.annotations.clone().unwrap();
    assert_eq!(annotations.get("lb.example/zone").map(String::as_str), Some("public"));
    let labels = exposed.metadata.labels.clone().unwrap();
    assert_eq!(labels.get("exposure").map(String::as_str), Some("internet"));
    assert_eq!(labels.get(kube_apiserver::LABEL_EXPOSURE_CLASS_HANDLER).map(String::as_str), Some("internet"));
    // The component's own labels (what selects and finds it) are not overridden.
    for (k, v) in plain.metadata.labels.as_ref().unwrap() {
        assert_eq!(labels.get(k), Some(v), "label {k}");
    }
    assert_eq!(exposed.spec, plain.spec, "a handler changes only metadata");

    let bare = crate::config::ExposureClassHandler { name: "internal".into(), ..Default::default() };
    let exposed = kube_apiserver::service(&values(), kube_apiserver::ServiceType::LoadBalancer, Some(&bare));
    assert_eq!(exposed.metadata.annotations, None);
    assert_eq!(
        exposed.metadata.labels.unwrap().get(kube_apiserver::LABEL_EXPOSURE_CLASS_HANDLER).map(String::as_str),
        Some("internal")
    );
}

#[test]
fn every_mounted_secret_and_key_is_produced_by_the_pki() {
    let inputs = pki::shoot_set::ShootInputs::new(
        "shoot--dev--demo",
        "api.demo.dev.internal.local",
        "10.112.0.1".parse().unwrap(),
    );
    let plan =
        pki::manager::plan(&pki::shoot_set::shoot_set(&inputs), &pki::SecretSet::new(), std::time::SystemTime::now())
            .unwrap();
    let v = values();
    // gardenlet renders the EncryptionConfiguration from pki's key; everything else is pki's.
    let mut plan = plan;
    let key = plan.secrets.value("etcd-encryption-key", "value").expect("pki makes the encryption key").to_string();
    let rendered = kube_apiserver::encryption_config_secret(&v, &key, None);
    let mut config = pki::Secret::new(kube_apiserver::ENCRYPTION_CONFIG_SECRET, "Opaque");
    for (k, value) in rendered.data.unwrap() {
        config = config.with_data(&k, String::from_utf8(value.0).unwrap());
    }
    plan.secrets.insert(config);
    let mounted = [
        (kube_apiserver::MOUNTED_SECRETS.to_vec(), kube_apiserver::args(&v)),
        (kube_controller_manager::MOUNTED_SECRETS.to_vec(), kube_controller_manager::args(&v)),
        (kube_scheduler::MOUNTED_SECRETS.to_vec(), kube_scheduler::args(&v)),
        (
            vec![secrets::CA_ETCD_BUNDLE, secrets::ETCD_SERVER],
            etcd::statefulset(&v).spec.unwrap().template.spec.unwrap().containers[0].args.clone().unwrap(),
        ),
    ];
    for (names, args) in mounted {
        for name in &names {
            assert!(plan.secrets.contains(name), "pki produces no secret {name}");
        }
        // Every file a flag points at is a key of a mounted secret.
        for arg in args {
            let Some(path) = arg.split_once('=').map(|(_, p)| p).filter(|p| p.starts_with("/srv/kubernetes/")) else {
                continue;
            };
            let mut parts = path.trim_start_matches("/srv/kubernetes/").splitn(2, '/');
            let (secret, key) = (parts.next().unwrap(), parts.next().unwrap());
            assert!(names.contains(&secret), "{arg} points at an unmounted secret");
            assert!(plan.secrets.value(secret, key).is_some(), "{arg}: pki's {secret} has no key {key}");
        }
    }
}

#[test]
fn control_plane_requests_follow_the_configured_share() {
    let cpu = |r: &k8s_openapi::api::core::v1::ResourceRequirements| {
        r.requests.as_ref().map(|q| (q["cpu"].0.clone(), q["memory"].0.clone()))
    };
    assert_eq!(cpu(&super::common::requests(100, 250, 512)), Some(("250m".into(), "512Mi".into())));
    assert_eq!(cpu(&super::common::requests(20, 250, 512)), Some(("50m".into(), "102Mi".into())));
    assert_eq!(
        cpu(&super::common::requests(0, 50, 64)),
        Some(("1m".into(), "1Mi".into())),
        "at least 1 percent, 1 unit"
    );
    assert_eq!(cpu(&super::common::requests(500, 50, 64)), Some(("50m".into(), "64Mi".into())), "at most the default");
}

#[test]
fn secrets_are_encrypted_with_the_shoot_key_and_older_data_stays_readable() {
    let key = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";
    let config: serde_json::Value = serde_yaml::from_str(&kube_apiserver::encryption_configuration(key, None)).unwrap();
    assert_eq!(config["kind"], "EncryptionConfiguration");
    let resource = &config["resources"][0];
    assert_eq!(resource["resources"], serde_json::json!(["secrets"]));
    let aescbc = &resource["providers"][0]["aescbc"]["keys"][0];
    assert_eq!(aescbc["secret"], key);
    assert_eq!(aescbc["name"], kube_apiserver::encryption_key_name(key));
    assert_ne!(kube_apiserver::encryption_key_name(key), kube_apiserver::encryption_key_name("b3RoZXI="));
    assert!(resource["providers"][1].get("identity").is_some(), "identity last: unencrypted data stays readable");
    let args = kube_apiserver::args(&values());
    assert!(args.iter().any(|a| a.starts_with("--encryption-provider-config=/srv/kubernetes/")), "{args:?}");
}

#[test]
fn a_provider_change_encrypts_with_the_new_provider_and_reads_with_the_previous_one() {
    use kube_apiserver::{Providers, encryption_configuration_for};
    let key = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";
    let previous = "ZmVkY2JhOTg3NjU0MzIxMGZlZGNiYTk4NzY1NDMyMTA=";
    let render = |providers| -> serde_json::Value {
        serde_yaml::from_str(&encryption_configuration_for(key, Some(previous), &[], providers)).unwrap()
    };
    let names = |config: &serde_json::Value| -> Vec<String> {
        let list = config["resources"][0]["providers"].as_array().unwrap();
        list.iter().map(|p| p.as_object().unwrap().keys().next().unwrap().clone()).collect()
    };
    let changing = render(Providers { current: "secretbox", previous: "aescbc" });
    assert_eq!(names(&changing), ["secretbox", "aescbc", "identity"]);
    for (i, provider) in ["secretbox", "aescbc"].iter().enumerate() {
        let keys = &changing["resources"][0]["providers"][i][provider]["keys"];
        assert_eq!((keys[0]["secret"].as_str(), keys[1]["secret"].as_str()), (Some(key), Some(previous)), "{provider}");
    }
    assert_eq!(names(&render(Providers { current: "aesgcm", previous: "aesgcm" })), ["aesgcm", "identity"]);
    assert_eq!(names(&render(Providers::default())), ["aescbc", "identity"], "unset is aescbc");

    let mut v = values();
    v.apiserver.encryption_provider = "secretbox".into();
    v.apiserver.previous_encryption_provider = "aescbc".into();
    let secret = kube_apiserver::encryption_config_secret(&v, key, None);
    let text = String::from_utf8(secret.data.unwrap()[kube_apiserver::ENCRYPTION_CONFIG_KEY].0.clone()).unwrap();
    let config: serde_json::Value = serde_yaml::from_str(&text).unwrap();
    assert_eq!(names(&config), ["secretbox", "aescbc", "identity"]);
}

#[test]
fn during_a_key_rotation_the_previous_keys_still_verify_and_decrypt() {
    let key = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";
    let previous = "ZmVkY2JhOTg3NjU0MzIxMGZlZGNiYTk4NzY1NDMyMTA=";
    let config: serde_json::Value =
        serde_yaml::from_str(&kube_apiserver::encryption_configuration(key, Some(previous))).unwrap();
    let keys = &config["resources"][0]["providers"][0]["aescbc"]["keys"];
    assert_eq!(keys[0]["secret"], key, "the new key encrypts");
    assert_eq!(keys[1]["secret"], previous, "the previous key still decrypts");
    assert_eq!(keys[1]["name"], kube_apiserver::encryption_key_name(previous));

    let mut v = values();
    let idle = kube_apiserver::args(&v);
    assert_eq!(idle.iter().filter(|a| a.starts_with("--service-account-key-file=")).count(), 1);
    assert!(!kube_apiserver::mounted_secrets(&v).contains(&secrets::SERVICE_ACCOUNT_KEY_OLD));
    v.secret_checksums.insert(secrets::SERVICE_ACCOUNT_KEY_OLD.to_string(), "old".into());
    let rotating = kube_apiserver::args(&v);
    assert!(
        rotating.contains(&"--service-account-key-file=/srv/kubernetes/service-account-key-old/sa.pub".to_string())
    );
    assert!(kube_apiserver::mounted_secrets(&v).contains(&secrets::SERVICE_ACCOUNT_KEY_OLD));
    let pod = kube_apiserver::deployment(&v).spec.unwrap().template;
    let annotations = pod.metadata.unwrap().annotations.unwrap();
    assert_eq!(annotations["checksum/secret-service-account-key-old"], "old", "the rotation rolls the pods");
}

/// `--name=value` flags as a map (every flag once; a repeated one fails the test).
fn flag_map(args: &[String]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for a in args {
        let (name, value) = a.strip_prefix("--").and_then(|a| a.split_once('=')).unwrap();
        assert!(out.insert(name.to_string(), value.to_string()).is_none(), "--{name} twice");
    }
    out
}

#[test]
fn controller_manager_flags_carry_the_shoot_settings() {
    let defaults = flag_map(&kube_controller_manager::args(&values()));
    assert_eq!(defaults["node-cidr-mask-size"], "24");
    assert!(
        !defaults.keys().any(|k| k.starts_with("horizontal-pod-autoscaler") || k == "feature-gates"),
        "{defaults:?}"
    );
    assert!(!defaults.contains_key("node-monitor-grace-period") && !defaults.contains_key("pod-eviction-timeout"));

    let mut v = values();
    v.controller_manager = super::common::ControllerManagerSettings {
        node_cidr_mask_size: Some(26),
        horizontal_pod_autoscaler: api::core::shoot::kubernetes::HorizontalPodAutoscalerConfig {
            sync_period: Some("30s".into()),
            tolerance: Some(0.2),
            downscale_stabilization: Some("10m".into()),
            initial_readiness_delay: Some("45s".into()),
            cpu_initialization_period: Some("2m0s".into()),
            ..Default::default()
        },
        node_monitor_grace_period: Some("55s".into()),
        feature_gates: BTreeMap::from([("HPAScaleToZero".to_string(), true), ("EndpointSlice".to_string(), false)]),
    };
    let args = flag_map(&kube_controller_manager::args(&v));
    for (name, value) in [
        ("node-cidr-mask-size", "26"),
        ("horizontal-pod-autoscaler-sync-period", "30s"),
        ("horizontal-pod-autoscaler-tolerance", "0.2"),
        ("horizontal-pod-autoscaler-downscale-stabilization", "10m"),
        ("horizontal-pod-autoscaler-initial-readiness-delay", "45s"),
        ("horizontal-pod-autoscaler-cpu-initialization-period", "2m0s"),
        ("node-monitor-grace-period", "55s"),
        ("feature-gates", "EndpointSlice=false,HPAScaleToZero=true"),
    ] {
        assert_eq!(args.get(name).map(String::as_str), Some(value), "--{name}");
    }
    assert_eq!(args.len(), defaults.len() + 7, "exactly the seven settings are added: {args:?}");
    // Without a pod range nodes get no ranges: no mask either.
    v.pod_cidr = None;
    assert!(!flag_map(&kube_controller_manager::args(&v)).contains_key("node-cidr-mask-size"));
}

fn scheduler_config(v: &ControlPlaneValues) -> serde_json::Value {
    let cm = kube_scheduler::config_map(v).unwrap();
    serde_yaml::from_str(&cm.data.unwrap()[kube_scheduler::CONFIG_KEY]).unwrap()
}

#[test]
fn scheduler_bin_packing_scores_most_allocated_in_every_profile() {
    let balanced = scheduler_config(&values());
    assert_eq!(balanced["apiVersion"], "kubescheduler.config.k8s.io/v1beta1");
    assert_eq!(balanced["kind"], "KubeSchedulerConfiguration");
    assert!(balanced.get("profiles").is_none(), "balanced is kube-scheduler's default scoring");

    let mut v = values();
    v.scheduler.bin_packing = true;
    let config = scheduler_config(&v);
    let profiles = config["profiles"].as_array().unwrap();
    let names: Vec<&str> = profiles.iter().map(|p| p["schedulerName"].as_str().unwrap()).collect();
    assert_eq!(names, ["default-scheduler", "bin-packing-scheduler"]);
    for p in profiles {
        let score = &p["plugins"]["score"];
        assert_eq!(score["enabled"], serde_json::json!([{"name": "NodeResourcesMostAllocated"}]));
        assert_eq!(
            score["disabled"],
            serde_json::json!([{"name": "NodeResourcesLeastAllocated"}, {"name": "NodeResourcesBalancedAllocation"}])
        );
    }
    assert_eq!(config["clientConnection"], balanced["clientConnection"]);

    // The file is mounted from the ConfigMap, and a changed profile rolls the pods.
    let d = kube_scheduler::deployment(&v);
    let pod = template(&d).spec.clone().unwrap();
    let volume = pod.volumes.unwrap().into_iter().find(|v| v.config_map.is_some()).unwrap();
    assert_eq!(volume.config_map.unwrap().name, kube_scheduler::CONFIG_MAP);
    let mount = pod.containers[0].volume_mounts.clone().unwrap().into_iter().find(|m| m.name == volume.name).unwrap();
    assert_eq!(mount.mount_path, kube_scheduler::CONFIG_DIR);
    let checksum =
        |d: &Deployment| template(d).metadata.clone().unwrap().annotations.unwrap()["checksum/config"].clone();
    assert_ne!(checksum(&d), checksum(&kube_scheduler::deployment(&values())));
    let cm = kube_scheduler::config_map(&v).unwrap();
    assert_eq!(cm.metadata.namespace.as_deref(), Some("shoot--dev--demo"));
    assert_eq!(cm.metadata.owner_references.unwrap()[0].kind, "Cluster");
}

#[test]
fn scheduler_feature_gates_and_kube_max_pd_vols() {
    let d = kube_scheduler::deployment(&values());
    assert!(template(&d).spec.as_ref().unwrap().containers[0].env.is_none());
    assert!(!flag_map(&kube_scheduler::args(&values())).contains_key("feature-gates"));
    let mut v = values();
    v.scheduler.kube_max_pd_vols = Some("39".into());
    v.scheduler.feature_gates = BTreeMap::from([("DefaultPodTopologySpread".to_string(), false)]);
    assert_eq!(flag_map(&kube_scheduler::args(&v))["feature-gates"], "DefaultPodTopologySpread=false");
    let d = kube_scheduler::deployment(&v);
    let env = template(&d).spec.as_ref().unwrap().containers[0].env.clone().unwrap();
    assert_eq!(env.len(), 1);
    assert_eq!((env[0].name.as_str(), env[0].value.as_deref()), ("KUBE_MAX_PD_VOLS", Some("39")));
}
