#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use super::*;

fn inputs<'a>(config: &'a str, kubeconfig: &'a str) -> ShootInputs<'a> {
    ShootInputs {
        managed_seed: "ms1",
        config,
        garden_kubeconfig: kubeconfig,
        garden_token: "secret-token",
        token_expiration: "2026-11-27T22:00:00Z",
        image: "gardener-rs.local/gardenlet:v1",
        replicas: 1,
        resources: None,
        env: vec![],
        volumes: vec![json!({"name": "backup", "hostPath": {"path": "/srv/backup"}})],
        volume_mounts: vec![json!({"name": "backup", "mountPath": "/srv/backup"})],
    }
}

#[test]
fn sides_split_the_chart_rules_without_losing_one() {
    let garden = rules("s", Side::Garden);
    let seed = rules("s", Side::Seed);
    let all = rules("s", Side::Both);
    assert_eq!(all.len(), RULES.len());
    let both = RULES.iter().filter(|r| r.side == Side::Both).count();
    assert_eq!(garden.len() + seed.len(), all.len() + both);
    assert!(garden.iter().any(|r| r["resources"] == json!(["shoots"])));
    assert!(!seed.iter().any(|r| r["resources"] == json!(["shoots"])), "the shoot gets no garden rights");
    assert!(seed.iter().any(|r| r["resources"] == json!(["deployments", "statefulsets"])));
    assert!(!garden.iter().any(|r| r["resources"] == json!(["deployments", "statefulsets"])));
    let own = garden.iter().find(|r| r["resources"] == json!(["seeds/status"])).unwrap();
    assert_eq!(own["resourceNames"], json!(["s"]));
}

#[test]
fn the_garden_identity_is_a_bootstrap_account_that_may_only_ask_for_its_seeds_certificate() {
    let objects = garden_objects("ms1");
    let kinds: Vec<_> = objects.iter().map(|o| o["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["ServiceAccount", "ClusterRole", "ClusterRoleBinding"]);
    assert_eq!(objects[1]["metadata"]["name"], "gardener.cloud:system:gardenlet:ms1:bootstrap");
    assert_eq!(
        objects[1]["rules"],
        json!([
            {"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests/seedclient"],
             "resourceNames": ["ms1"], "verbs": ["create"]},
            {"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests"],
             "verbs": ["create", "get", "list", "watch"]},
        ])
    );
    assert_eq!(objects[2]["subjects"][0]["name"], "gardenlet-ms1");
    for o in &objects {
        assert_eq!(o["metadata"]["labels"][LABEL_MANAGED_SEED], "ms1");
    }
    // What earlier versions granted goes: the garden rules, the Lease Role, the token Secret.
    let legacy: Vec<_> = legacy_garden_objects("ms1")
        .iter()
        .map(|o| format!("{} {}", o["kind"].as_str().unwrap(), o["metadata"]["name"].as_str().unwrap()))
        .collect();
    assert_eq!(
        legacy,
        [
            "Secret gardenlet-ms1-token",
            "ClusterRoleBinding gardener.cloud:system:gardenlet:ms1",
            "ClusterRole gardener.cloud:system:gardenlet:ms1",
            "RoleBinding gardener.cloud:system:gardenlet:ms1:leader-election",
            "Role gardener.cloud:system:gardenlet:ms1:leader-election",
        ]
    );
    // The hosting gardenlet may bootstrap its own seed only, and the shoot gets no CSR rights.
    let seedclient = rules("s", Side::Both)
        .into_iter()
        .find(|r| r["resources"] == json!(["certificatesigningrequests/seedclient"]))
        .unwrap();
    assert_eq!(seedclient["resourceNames"], json!(["s"]));
    assert!(!rules("s", Side::Seed).iter().any(|r| r["apiGroups"] == json!(["certificates.k8s.io"])));
    // The shoot's rules let the managed gardenlet write its kubeconfig Secret.
    let secrets = rules("s", Side::Seed).into_iter().find(|r| r["resources"] == json!(["secrets"])).unwrap();
    for verb in ["get", "create", "patch"] {
        assert!(secrets["verbs"].as_array().unwrap().contains(&json!(verb)), "{verb}");
    }
}

#[test]
fn shoot_objects_mount_config_and_garden_kubeconfig() {
    let objects = shoot_objects(&inputs("seed: {}", "kubeconfig-text"));
    assert_eq!(objects[0]["kind"], "Namespace");
    let crds = objects.iter().filter(|o| o["kind"] == "CustomResourceDefinition").count();
    assert!(crds >= 8, "the extension CRDs: {crds}");
    assert!(
        objects
            .iter()
            .filter(|o| o["kind"] == "CustomResourceDefinition")
            .all(|o| o["spec"]["group"] == "extensions.gardener.cloud")
    );
    let deployment = objects.last().unwrap();
    assert_eq!(deployment["kind"], "Deployment");
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], "gardener-rs.local/gardenlet:v1");
    assert_eq!(container["args"][0], "--config=/etc/gardenlet/config/config.yaml");
    assert_eq!(container["volumeMounts"][1]["mountPath"], "/etc/gardenlet/garden");
    assert_eq!(container["volumeMounts"][2]["mountPath"], "/srv/backup", "the additional mount after ours");
    assert_eq!(deployment["spec"]["template"]["spec"]["volumes"][2]["hostPath"]["path"], "/srv/backup");
    assert!(crate::managedseed::decide::GARDEN_KUBECONFIG_PATH.starts_with("/etc/gardenlet/garden/"));
    let secret = objects.iter().find(|o| o["kind"] == "Secret").unwrap();
    assert_eq!(secret["data"]["kubeconfig"], b64("kubeconfig-text"));
    assert_eq!(secret["data"][crate::managedseed::token::TOKEN_KEY], b64("secret-token"));
    assert_eq!(
        secret["metadata"]["annotations"][crate::managedseed::token::EXPIRATION_ANNOTATION],
        "2026-11-27T22:00:00Z"
    );
    assert!(
        crate::managedseed::token::TOKEN_FILE.starts_with("/etc/gardenlet/garden/"),
        "the token is read from the Secret's mount"
    );
    let role = objects.iter().find(|o| o["kind"] == "ClusterRole").unwrap();
    assert_eq!(role["rules"], json!(rules("ms1", Side::Seed)));
}

#[test]
fn a_changed_config_or_kubeconfig_rolls_the_pods() {
    let sum = |c, k| {
        shoot_objects(&inputs(c, k)).last().unwrap()["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
            .clone()
    };
    assert_eq!(sum("a", "k"), sum("a", "k"));
    assert_ne!(sum("a", "k"), sum("b", "k"));
    assert_ne!(sum("a", "k"), sum("a", "k2"));
}

#[test]
fn kubeconfig_parses_and_reads_the_token_file() {
    let text = kubeconfig("https://10.250.0.1:6443", "-----BEGIN CERTIFICATE-----\nx\n");
    let parsed = kube::config::Kubeconfig::from_yaml(&text).unwrap();
    assert_eq!(parsed.clusters[0].cluster.as_ref().unwrap().server.as_deref(), Some("https://10.250.0.1:6443"));
    let user = parsed.auth_infos[0].auth_info.as_ref().unwrap();
    assert_eq!(user.token_file.as_deref(), Some(crate::managedseed::token::TOKEN_FILE));
    assert!(user.token.is_none());
}

#[test]
fn a_renewed_token_does_not_roll_the_pods() {
    let sum = |token| {
        let mut i = inputs("a", "k");
        i.garden_token = token;
        shoot_objects(&i).last().unwrap()["spec"]["template"]["metadata"]["annotations"]["checksum/config"].clone()
    };
    assert_eq!(sum("t1"), sum("t2"));
}

#[test]
fn the_seed_kubeconfig_is_the_service_account_in_cluster() {
    let parsed = kube::config::Kubeconfig::from_yaml(&in_cluster_kubeconfig()).unwrap();
    let user = parsed.auth_infos[0].auth_info.as_ref().unwrap();
    assert_eq!(user.token_file.as_deref(), Some("/var/run/secrets/kubernetes.io/serviceaccount/token"));
    assert_eq!(parsed.clusters[0].cluster.as_ref().unwrap().server.as_deref(), Some("https://kubernetes.default.svc"));
    let objects = shoot_objects(&inputs("c", "k"));
    let secret = objects.iter().find(|o| o["kind"] == "Secret").unwrap();
    assert!(crate::managedseed::decide::SEED_KUBECONFIG_PATH.ends_with("/seed-kubeconfig"));
    assert_eq!(secret["data"]["seed-kubeconfig"], b64(&in_cluster_kubeconfig()));
}

#[test]
fn debug_keeps_the_secrets_out() {
    let text = format!("{:?}", inputs("cfg", "secret-kubeconfig"));
    assert!(!text.contains("secret-kubeconfig"), "{text}");
    assert!(!text.contains("secret-token"), "{text}");
}
