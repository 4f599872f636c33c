//! The shoot's `spec.kubernetes.kubeAPIServer` from the Shoot to the API server's flags, files
//! and pod template: values come from a Shoot manifest the way gardenlet derives them.

use super::*;
use crate::shoot::operation::values::ShootValues;
use k8s_openapi::api::core::v1::PodTemplateSpec;

const SHOOT: &str = "apiVersion: core.gardener.cloud/v1beta1\nkind: Shoot\nmetadata:\n  name: demo\n  namespace: garden-dev\nspec:\n  region: local\n  provider:\n    type: local\n  kubernetes:\n    version: 1.20.2\n  networking:\n    pods: 10.96.0.0/11\n    services: 10.112.0.0/13\n  dns:\n    domain: demo.dev.example.com\n";

/// The shoot with `spec.kubernetes.kubeAPIServer` from YAML.
fn shoot_with(kube_api_server: &str) -> api::core::Shoot {
    let mut shoot: api::core::Shoot = serde_yaml::from_str(SHOOT).unwrap();
    shoot.spec.kubernetes.kube_api_server = Some(serde_yaml::from_str(kube_api_server).unwrap());
    shoot
}

/// Control-plane values of the shoot with `spec.kubernetes.kubeAPIServer` from YAML.
fn values_with(kube_api_server: &str) -> ControlPlaneValues {
    ShootValues::new(&shoot_with(kube_api_server), None).unwrap().control_plane(&Images::default(), true, 100)
}

/// The flags as `name -> [values]`, in order, for exact comparison.
fn flags(args: &[String]) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for a in args {
        let (name, value) = a.strip_prefix("--").and_then(|a| a.split_once('=')).unwrap();
        out.entry(name.to_string()).or_default().push(value.to_string());
    }
    out
}

fn one(args: &BTreeMap<String, Vec<String>>, name: &str) -> Option<String> {
    let values = args.get(name)?;
    assert_eq!(values.len(), 1, "--{name} {values:?}");
    values.first().cloned()
}

fn template(values: &ControlPlaneValues) -> PodTemplateSpec {
    deployment(values).spec.unwrap().template
}

/// `(volume name, ConfigMap name, mount path)` of the ConfigMap volumes of the pod.
fn config_map_mounts(t: &PodTemplateSpec) -> Vec<(String, String, String)> {
    let spec = t.spec.as_ref().unwrap();
    let volumes = spec.volumes.as_ref().unwrap();
    spec.containers[0]
        .volume_mounts
        .as_ref()
        .unwrap()
        .iter()
        .filter_map(|m| {
            let v = volumes.iter().find(|v| v.name == m.name)?;
            Some((m.name.clone(), v.config_map.as_ref()?.name.clone(), m.mount_path.clone()))
        })
        .collect()
}

fn annotations(t: &PodTemplateSpec) -> BTreeMap<String, String> {
    t.metadata.as_ref().and_then(|m| m.annotations.clone()).unwrap_or_default()
}

#[test]
fn without_settings_only_the_defaults() {
    let v = values_with("{}");
    let args = flags(&args(&v));
    assert_eq!(one(&args, "anonymous-auth").as_deref(), Some("true"));
    assert_eq!(one(&args, "enable-admission-plugins").unwrap(), DEFAULT_ADMISSION_PLUGINS.join(","));
    for absent in [
        "disable-admission-plugins",
        "admission-control-config-file",
        "audit-policy-file",
        "audit-log-path",
        "api-audiences",
        "event-ttl",
        "oidc-issuer-url",
        "v",
        "vmodule",
        "max-requests-inflight",
        "watch-cache-sizes",
    ] {
        assert!(!args.contains_key(absent), "--{absent}");
    }
    assert!(config_maps(&v).is_empty());
    assert!(config_map_mounts(&template(&v)).is_empty());
}

#[test]
fn a_disabled_plugin_leaves_the_enable_list_and_joins_the_disable_list() {
    let v = values_with(
        "admissionPlugins:\n- name: DefaultStorageClass\n  disabled: true\n- name: DefaultIngressClass\n  disabled: true\n- name: PodNodeSelector\n",
    );
    let args = flags(&args(&v));
    let enabled: Vec<String> = one(&args, "enable-admission-plugins").unwrap().split(',').map(String::from).collect();
    let mut want: Vec<String> =
        DEFAULT_ADMISSION_PLUGINS.iter().filter(|p| **p != "DefaultStorageClass").map(|p| p.to_string()).collect();
    want.push("PodNodeSelector".into());
    assert_eq!(enabled, want);
    assert_eq!(one(&args, "disable-admission-plugins").as_deref(), Some("DefaultStorageClass,DefaultIngressClass"));
}

#[test]
fn plugin_configurations_become_a_mounted_admission_configuration() {
    let v = values_with(
        "admissionPlugins:\n- name: PodNodeSelector\n  config:\n    podNodeSelectorPluginConfig:\n      clusterDefaultNodeSelector: env=prod\n- name: EventRateLimit\n  config: |\n    apiVersion: eventratelimit.admission.k8s.io/v1alpha1\n    kind: Configuration\n    limits:\n    - type: Server\n      qps: 10\n      burst: 20\n- name: ResourceQuota\n  disabled: true\n  config:\n    ignored: true\n",
    );
    let args = flags(&args(&v));
    assert_eq!(
        one(&args, "admission-control-config-file").as_deref(),
        Some("/etc/kubernetes/admission/admission-configuration.yaml")
    );
    let maps = config_maps(&v);
    assert_eq!(maps.len(), 1);
    assert_eq!(maps[0].metadata.name.as_deref(), Some(ADMISSION_CONFIG_MAP));
    assert_eq!(maps[0].metadata.namespace.as_deref(), Some("shoot--dev--demo"));
    let text = &maps[0].data.as_ref().unwrap()[ADMISSION_CONFIG_KEY];
    let config: serde_json::Value = serde_yaml::from_str(text).unwrap();
    assert_eq!(
        config,
        serde_json::json!({
            "apiVersion": "apiserver.config.k8s.io/v1",
            "kind": "AdmissionConfiguration",
            "plugins": [
                {"name": "EventRateLimit", "configuration": {
                    "apiVersion": "eventratelimit.admission.k8s.io/v1alpha1",
                    "kind": "Configuration",
                    "limits": [{"type": "Server", "qps": 10, "burst": 20}]
                }},
                {"name": "PodNodeSelector", "configuration": {
                    "podNodeSelectorPluginConfig": {"clusterDefaultNodeSelector": "env=prod"}
                }}
            ]
        }),
        "a disabled plugin's configuration is left out"
    );
    let t = template(&v);
    assert_eq!(
        config_map_mounts(&t),
        vec![(ADMISSION_CONFIG_MAP.to_string(), ADMISSION_CONFIG_MAP.to_string(), ADMISSION_CONFIG_DIR.to_string())]
    );
    assert_eq!(annotations(&t)[&format!("checksum/configmap-{ADMISSION_CONFIG_MAP}")], common::checksum(text));
}

#[test]
fn a_plugin_configuration_that_is_not_yaml_fails_naming_the_field() {
    let shoot = shoot_with("admissionPlugins:\n- name: PodNodeSelector\n  config: \"a: [\"\n");
    let err = ShootValues::new(&shoot, None).unwrap_err().to_string();
    assert!(err.starts_with("shoot demo: spec.kubernetes.kubeAPIServer.admissionPlugins[0].config: not YAML"), "{err}");
}

#[test]
fn the_audit_policy_is_mounted_logged_to_stdout_and_rolls_the_pods() {
    let mut v = values_with("auditConfig:\n  auditPolicy:\n    configMapRef:\n      name: audit-policy\n");
    assert_eq!(v.apiserver.audit_policy_config_map.as_deref(), Some("audit-policy"));
    assert!(!flags(&args(&v)).contains_key("audit-policy-file"), "no policy read yet, no audit flags");
    let policy = "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n";
    v.apiserver.audit_policy = Some(policy.to_string());
    let args = flags(&args(&v));
    assert_eq!(one(&args, "audit-policy-file").as_deref(), Some("/etc/kubernetes/audit/audit-policy.yaml"));
    assert_eq!(one(&args, "audit-log-path").as_deref(), Some("-"));
    let maps = config_maps(&v);
    assert_eq!(maps.len(), 1);
    assert_eq!(maps[0].metadata.name.as_deref(), Some(AUDIT_POLICY_CONFIG_MAP));
    assert_eq!(maps[0].data.as_ref().unwrap()[AUDIT_POLICY_KEY], policy);
    let t = template(&v);
    assert_eq!(
        config_map_mounts(&t),
        vec![(AUDIT_POLICY_CONFIG_MAP.into(), AUDIT_POLICY_CONFIG_MAP.into(), AUDIT_POLICY_DIR.into())]
    );
    let key = format!("checksum/configmap-{AUDIT_POLICY_CONFIG_MAP}");
    let before = annotations(&t)[&key].clone();
    v.apiserver.audit_policy = Some(policy.replace("Metadata", "RequestResponse"));
    let changed = template(&v);
    assert_ne!(annotations(&changed)[&key], before, "a changed policy changes the pod template");
    let others = |t: &PodTemplateSpec| annotations(t).into_iter().filter(|(k, _)| *k != key).collect::<Vec<_>>();
    assert_eq!(others(&changed), others(&t), "only the policy's checksum changes");
}

#[test]
fn every_flag_setting_becomes_its_flag() {
    let v = values_with(
        "apiAudiences: [kubernetes, gardener]\neventTTL: 24h\nrequests:\n  maxNonMutatingInflight: 600\n  maxMutatingInflight: 300\nwatchCacheSizes:\n  default: 50\n  resources:\n  - resource: secrets\n    size: 500\n  - apiGroup: apps\n    resource: deployments\n    size: 80\nlogging:\n  verbosity: 3\n  httpAccessVerbosity: 5\ndefaultNotReadyTolerationSeconds: 120\ndefaultUnreachableTolerationSeconds: 90\nenableAnonymousAuthentication: true\nserviceAccountConfig:\n  extendTokenExpiration: false\n  maxTokenExpiration: 720h\n",
    );
    let args = flags(&args(&v));
    let want = [
        ("api-audiences", "kubernetes,gardener"),
        ("event-ttl", "24h"),
        ("max-requests-inflight", "600"),
        ("max-mutating-requests-inflight", "300"),
        ("default-watch-cache-size", "50"),
        ("watch-cache-sizes", "secrets#500,deployments.apps#80"),
        ("v", "3"),
        ("vmodule", "httplog=5"),
        ("default-not-ready-toleration-seconds", "120"),
        ("default-unreachable-toleration-seconds", "90"),
        ("anonymous-auth", "true"),
        ("service-account-extend-token-expiration", "false"),
        ("service-account-max-token-expiration", "720h"),
        ("service-account-issuer", "https://api.demo.dev.example.com"),
    ];
    for (name, value) in want {
        assert_eq!(one(&args, name).as_deref(), Some(value), "--{name}");
    }
}

#[test]
fn oidc_settings_become_flags_and_the_ca_a_mounted_file() {
    let v = values_with(
        "oidcConfig:\n  issuerURL: https://issuer.example.com/dex\n  clientID: shoot\n  caBundle: |\n    -----BEGIN CERTIFICATE-----\n    MIIB\n    -----END CERTIFICATE-----\n  usernameClaim: email\n  usernamePrefix: 'oidc:'\n  groupsClaim: groups\n  groupsPrefix: 'oidc:'\n  signingAlgs: [RS256, ES256]\n  requiredClaims:\n    hd: example.com\n    tier: gold\n",
    );
    let args = flags(&args(&v));
    let want = [
        ("oidc-issuer-url", "https://issuer.example.com/dex"),
        ("oidc-client-id", "shoot"),
        ("oidc-username-claim", "email"),
        ("oidc-username-prefix", "oidc:"),
        ("oidc-groups-claim", "groups"),
        ("oidc-groups-prefix", "oidc:"),
        ("oidc-signing-algs", "RS256,ES256"),
        ("oidc-ca-file", "/etc/kubernetes/oidc/ca.crt"),
    ];
    for (name, value) in want {
        assert_eq!(one(&args, name).as_deref(), Some(value), "--{name}");
    }
    assert_eq!(args["oidc-required-claim"], vec!["hd=example.com".to_string(), "tier=gold".to_string()]);
    let maps = config_maps(&v);
    assert_eq!(maps[0].metadata.name.as_deref(), Some(OIDC_CA_CONFIG_MAP));
    assert!(maps[0].data.as_ref().unwrap()[OIDC_CA_KEY].starts_with("-----BEGIN CERTIFICATE-----"));
    assert_eq!(
        config_map_mounts(&template(&v)),
        vec![(OIDC_CA_CONFIG_MAP.into(), OIDC_CA_CONFIG_MAP.into(), OIDC_CA_DIR.into())]
    );
}

#[test]
fn switching_anonymous_authentication_off_keeps_the_probes_working() {
    let v = values_with("enableAnonymousAuthentication: false\n");
    assert_eq!(one(&flags(&args(&v)), "anonymous-auth").as_deref(), Some("false"));
    let t = template(&v);
    let c = &t.spec.as_ref().unwrap().containers[0];
    for probe in [c.liveness_probe.as_ref().unwrap(), c.readiness_probe.as_ref().unwrap()] {
        assert!(probe.http_get.is_none(), "an anonymous HTTPS probe would get 401");
        assert_eq!(probe.tcp_socket.as_ref().unwrap().port, IntOrString::Int(SECURE_PORT));
    }
    let default = template(&values_with("{}"));
    let c = &default.spec.as_ref().unwrap().containers[0];
    assert_eq!(c.liveness_probe.as_ref().unwrap().http_get.as_ref().unwrap().path.as_deref(), Some("/livez"));
}

#[test]
fn the_service_account_issuer_on_1_20_and_from_1_22() {
    let mut v = values_with(
        "serviceAccountConfig:\n  issuer: https://issuer.example.com\n  acceptedIssuers: [https://old.example.com]\n",
    );
    assert_eq!(
        flags(&args(&v))["service-account-issuer"],
        vec!["https://issuer.example.com".to_string()],
        "1.20: one issuer"
    );
    v.kubernetes_version = "1.22.0".into();
    assert_eq!(
        flags(&args(&v))["service-account-issuer"],
        vec![
            "https://issuer.example.com".to_string(),
            "https://api.demo.dev.example.com".to_string(),
            "https://old.example.com".to_string()
        ],
        "the configured issuer signs; the default and the accepted ones still verify"
    );
}

#[test]
fn encrypted_resources_join_secrets_and_roll_the_pods() {
    let key = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";
    let v = values_with("encryptionConfig:\n  resources: [configmaps., deployments.apps]\n");
    let secret = encryption_config_secret(&v, key, None);
    let text = String::from_utf8(secret.data.unwrap()[ENCRYPTION_CONFIG_KEY].0.clone()).unwrap();
    let config: serde_json::Value = serde_yaml::from_str(&text).unwrap();
    assert_eq!(config["resources"][0]["resources"], serde_json::json!(["secrets", "configmaps", "deployments.apps"]));
    assert_eq!(config["resources"][0]["providers"][0]["aescbc"]["keys"][0]["secret"], key);
    assert!(config["resources"][0]["providers"][1].get("identity").is_some());
    let plain = values_with("{}");
    assert!(!annotations(&template(&plain)).contains_key("checksum/encrypted-resources"));
    let with = annotations(&template(&v))["checksum/encrypted-resources"].clone();
    let more = values_with("encryptionConfig:\n  resources: [configmaps]\n");
    assert_ne!(annotations(&template(&more))["checksum/encrypted-resources"], with, "another list rolls the pods");
}
