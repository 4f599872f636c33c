use super::*;
use api::core::controller::{ControllerRegistrationDeployment, ControllerResource};
use api::core::{ControllerRegistrationSpec, Extension};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

fn registration(
    name: &str,
    resources: &[(&str, &str)],
    policy: Option<ControllerDeploymentPolicy>,
) -> ControllerRegistration {
    ControllerRegistration::new(
        name,
        ControllerRegistrationSpec {
            resources: resources
                .iter()
                .map(|(kind, type_)| ControllerResource {
                    kind: (*kind).into(),
                    type_: (*type_).into(),
                    ..Default::default()
                })
                .collect(),
            deployment: policy.map(|p| ControllerRegistrationDeployment { policy: Some(p), ..Default::default() }),
        },
    )
}

fn seed() -> Seed {
    let mut seed: Seed = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "local", "labels": {"region": "eu"}},
        "spec": {"provider": {"type": "local", "region": "local"}, "networks": {"pods": "10.1.0.0/16", "services": "10.2.0.0/16"},
                 "backup": {"provider": "s3like"}, "dns": {}}
    }))
    .unwrap();
    seed.metadata.name = Some("local".into());
    seed
}

fn shoot() -> Shoot {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": "demo", "namespace": "garden-dev"},
        "spec": {
            "seedName": "local", "region": "local",
            "provider": {"type": "local", "workers": [{"name": "pool", "minimum": 1, "maximum": 2,
                "machine": {"type": "local", "image": {"name": "gardenlinux", "version": "1.0.0"}},
                "cri": {"name": "containerd", "containerRuntimes": [{"type": "gvisor"}]}}]},
            "kubernetes": {"version": "1.31.1"},
            "networking": {"type": "calico"},
            "dns": {"providers": [{"type": "route53"}]},
            "extensions": [{"type": "shoot-dns-service"}, {"type": "off", "disabled": true}]
        }
    }))
    .unwrap()
}

#[test]
fn a_shoot_needs_its_provider_network_images_runtimes_dns_extensions_and_backup() {
    let needs = shoot_needs(&shoot(), &seed());
    let want: BTreeSet<Need> = [
        ("Infrastructure", "local"),
        ("ControlPlane", "local"),
        ("Worker", "local"),
        ("Network", "calico"),
        ("OperatingSystemConfig", "gardenlinux"),
        ("ContainerRuntime", "gvisor"),
        ("DNSRecord", "route53"),
        ("Extension", "shoot-dns-service"),
        ("BackupEntry", "s3like"),
    ]
    .iter()
    .map(|(k, t)| need(k, t))
    .collect();
    assert_eq!(needs, want);
    assert_eq!(seed_needs(&seed()), [need("BackupBucket", "s3like"), need("BackupEntry", "s3like")].into());
    assert!(on_seed(&shoot(), "local") && !on_seed(&shoot(), "other"));
    let mut migrating = shoot();
    migrating.spec.seed_name = Some("target".into());
    migrating.status = Some(serde_json::from_value(serde_json::json!({"seedName": "local"})).unwrap());
    assert!(on_seed(&migrating, "local") && on_seed(&migrating, "target"), "both seeds during a migration");
    let mut off = shoot();
    off.spec.extensions = vec![Extension { type_: "x".into(), disabled: Some(true), ..Default::default() }];
    assert!(!shoot_needs(&off, &seed()).iter().any(|(k, _)| k == "Extension"));
}

#[test]
fn registrations_are_required_by_need_policy_and_selector() {
    use ControllerDeploymentPolicy as P;
    let needs = shoot_needs(&shoot(), &seed());
    let mut global = registration("global-ext", &[("Extension", "audit")], None);
    global.spec.resources[0].globally_enabled = Some(true);
    let mut elsewhere = registration("elsewhere", &[("Worker", "local")], None);
    elsewhere.spec.deployment = Some(ControllerRegistrationDeployment {
        seed_selector: Some(LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "region".into(),
                operator: "In".into(),
                values: Some(vec!["us".into()]),
            }]),
            match_labels: None,
        }),
        ..Default::default()
    });
    let registrations = [
        registration("provider-local", &[("Infrastructure", "local"), ("Worker", "local")], None),
        registration("networking-calico", &[("Network", "calico")], Some(P::OnDemand)),
        registration("networking-cilium", &[("Network", "cilium")], None),
        registration("always", &[("Extension", "unused")], Some(P::Always)),
        registration("with-shoots", &[("Extension", "unused")], Some(P::AlwaysExceptNoShoots)),
        global,
        elsewhere,
    ];
    let labels = seed().metadata.labels.unwrap();
    let with_shoots = required(&registrations, &labels, &needs, true);
    assert_eq!(
        with_shoots.iter().map(String::as_str).collect::<Vec<_>>(),
        ["always", "global-ext", "networking-calico", "provider-local", "with-shoots"]
    );
    let empty = required(&registrations, &labels, &seed_needs(&seed()), false);
    assert_eq!(empty.iter().map(String::as_str).collect::<Vec<_>>(), ["always"]);
}

#[test]
fn selectors() {
    let labels: BTreeMap<String, String> = [("region".to_string(), "eu".to_string())].into();
    let req = |op: &str, values: Option<Vec<&str>>| LabelSelector {
        match_expressions: Some(vec![LabelSelectorRequirement {
            key: "region".into(),
            operator: op.into(),
            values: values.map(|v| v.into_iter().map(String::from).collect()),
        }]),
        match_labels: None,
    };
    assert!(selects(None, &labels));
    assert!(selects(Some(&req("In", Some(vec!["eu", "us"]))), &labels));
    assert!(!selects(Some(&req("NotIn", Some(vec!["eu"]))), &labels));
    assert!(selects(Some(&req("Exists", None)), &labels));
    assert!(!selects(Some(&req("DoesNotExist", None)), &labels));
    assert!(!selects(Some(&req("Bogus", None)), &labels), "an unknown operator matches nothing");
    let by_label =
        LabelSelector { match_labels: Some([("region".into(), "us".into())].into()), match_expressions: None };
    assert!(!selects(Some(&by_label), &labels));
}

#[test]
fn the_plan_installs_what_is_required_and_deletes_only_what_is_unused() {
    let required: BTreeSet<String> = ["a".to_string()].into();
    let existing: BTreeMap<String, (String, bool)> = [
        ("a-local".to_string(), ("a".to_string(), true)),
        ("b-local".to_string(), ("b".to_string(), false)),
        ("c-local".to_string(), ("c".to_string(), true)),
    ]
    .into();
    let p = plan(&required, &existing);
    assert_eq!(p.install, required);
    assert_eq!(p.delete, ["b-local".to_string()].into());
    assert_eq!(p.keep_in_use, ["c-local".to_string()].into());
    assert_eq!(installation_name("provider-local", "local"), "provider-local-local");
}
