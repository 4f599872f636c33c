//! Manager decisions, one rule per test, on the real shoot set.

use super::*;
use crate::config::{CaConfig, RandomConfig};
use crate::shoot_set::{ShootInputs, names, shoot_set};
use std::time::Duration;

fn inputs() -> ShootInputs {
    ShootInputs::new("shoot--p--s", "api.s.p.internal.example.com", "100.64.0.1".parse().unwrap())
}

fn fresh(configs: &[SecretConfig]) -> SecretSet {
    plan(configs, &SecretSet::new(), SystemTime::now()).unwrap().secrets
}

fn cert(set: &SecretSet, name: &str) -> CertInfo {
    inspect::parse(set.value(name, keys_::TLS_CERT).or_else(|| set.value(name, keys_::CA_CERT)).unwrap()).unwrap()
}

#[test]
fn first_plan_creates_everything_with_labels() {
    let configs = shoot_set(&inputs());
    let plan = plan(&configs, &SecretSet::new(), SystemTime::now()).unwrap();
    // 16 configured secrets plus 5 bundles.
    assert_eq!(plan.secrets.len(), 21);
    assert!(plan.actions.values().all(|a| *a == Action::Create));
    let apiserver = plan.secrets.get(names::KUBE_APISERVER).unwrap();
    assert_eq!(apiserver.type_, "kubernetes.io/tls");
    assert_eq!(apiserver.labels[labels::KIND], "certificate");
    assert_eq!(apiserver.labels[labels::CA], "ca");
    assert_eq!(apiserver.labels[labels::CONFIG_CHECKSUM].len(), 32);
    assert!(inspect::signed_by(&cert(&plan.secrets, names::KUBE_APISERVER), &cert(&plan.secrets, names::CA)));
    let bundle = plan.secrets.value("ca-bundle", keys_::BUNDLE).unwrap();
    assert_eq!(bundle, pem_block(plan.secrets.value(names::CA, keys_::CA_CERT).unwrap()));
}

#[test]
fn second_plan_keeps_every_byte() {
    let configs = shoot_set(&inputs());
    let first = fresh(&configs);
    let second = plan(&configs, &first, SystemTime::now()).unwrap();
    assert!(second.changed().is_empty(), "{:?}", second.actions);
    assert_eq!(second.secrets, first);
    assert!(second.obsolete.is_empty());
}

#[test]
fn new_san_reissues_only_that_certificate() {
    let first = fresh(&shoot_set(&inputs()));
    let mut changed = inputs();
    changed.extra_sans.push("api.other.example.com".into());
    let second = plan(&shoot_set(&changed), &first, SystemTime::now()).unwrap();
    assert_eq!(second.changed(), vec![names::KUBE_APISERVER]);
    assert_eq!(second.actions[names::KUBE_APISERVER], Action::Reissue { reason: "its config changed".into() });
    let info = cert(&second.secrets, names::KUBE_APISERVER);
    assert!(info.sans.contains(&San::Dns("api.other.example.com".into())));
    assert_ne!(
        second.secrets.value(names::KUBE_APISERVER, keys_::TLS_KEY),
        first.value(names::KUBE_APISERVER, keys_::TLS_KEY)
    );
}

#[test]
fn changed_ca_config_keeps_the_ca() {
    let configs = shoot_set(&inputs());
    let first = fresh(&configs);
    let changed: Vec<SecretConfig> = configs
        .iter()
        .map(|c| match c {
            SecretConfig::Ca(ca) if ca.name == names::CA => CaConfig::new("ca", "renamed").into(),
            other => other.clone(),
        })
        .collect();
    let second = plan(&changed, &first, SystemTime::now()).unwrap();
    assert!(
        matches!(second.actions[names::CA], Action::KeepDespiteChange { ref reason } if reason.contains("rotation"))
    );
    assert_eq!(second.secrets.get(names::CA).unwrap().data, first.get(names::CA).unwrap().data);
    assert_eq!(second.changed(), vec![names::CA]);
}

#[test]
fn server_address_change_rerenders_kubeconfig_only() {
    let first = fresh(&shoot_set(&inputs()));
    let mut moved = inputs();
    moved.admin_server = Some("https://api.moved.example.com".into());
    let second = plan(&shoot_set(&moved), &first, SystemTime::now()).unwrap();
    assert_eq!(second.changed(), vec![names::KUBECONFIG_ADMIN]);
    assert!(matches!(second.actions[names::KUBECONFIG_ADMIN], Action::Update { .. }));
    let (old, new) =
        (first.get(names::KUBECONFIG_ADMIN).unwrap(), second.secrets.get(names::KUBECONFIG_ADMIN).unwrap());
    assert_eq!(old.get(keys_::TLS_CERT), new.get(keys_::TLS_CERT));
    assert_eq!(old.get(keys_::TLS_KEY), new.get(keys_::TLS_KEY));
    assert!(new.get(keys_::KUBECONFIG).unwrap().contains("https://api.moved.example.com"));
}

#[test]
fn certificates_are_renewed_in_the_last_fifth_of_their_lifetime() {
    let configs = shoot_set(&inputs());
    let now = SystemTime::now();
    let first = plan(&configs, &SecretSet::new(), now).unwrap().secrets;
    let later = now + Duration::from_secs(365 * 24 * 3600 * 85 / 100);
    let second = plan(&configs, &first, later).unwrap();
    assert!(
        matches!(&second.actions[names::KUBE_APISERVER], Action::Reissue { reason } if reason.contains("expires at"))
    );
    assert_eq!(second.actions[names::CA], Action::Keep);
    let early = plan(&configs, &first, now + Duration::from_secs(365 * 24 * 3600 * 70 / 100)).unwrap();
    assert!(early.changed().is_empty());
}

#[test]
fn broken_or_foreign_certificates_are_reissued() {
    let configs = shoot_set(&inputs());
    let mut set = fresh(&configs);
    let mut broken = set.get(names::ETCD_CLIENT).unwrap().clone();
    broken.data.insert(keys_::TLS_CERT.into(), "garbage".into());
    set.insert(broken);
    // A certificate that is well-formed but signed by some other CA.
    let foreign = fresh(&configs);
    set.insert(foreign.get(names::FRONT_PROXY_CLIENT).unwrap().clone());
    // A key that does not belong to its certificate.
    let mut swapped = set.get(names::KUBECONFIG_KUBE_SCHEDULER).unwrap().clone();
    swapped
        .data
        .insert(keys_::TLS_KEY.into(), foreign.value(names::KUBECONFIG_KUBE_SCHEDULER, keys_::TLS_KEY).unwrap().into());
    set.insert(swapped);

    let p = plan(&configs, &set, SystemTime::now()).unwrap();
    let reason = |name: &str| match &p.actions[name] {
        Action::Reissue { reason } => reason.clone(),
        other => panic!("{name}: {other:?}"),
    };
    assert_eq!(reason(names::ETCD_CLIENT), "tls.crt holds no PEM certificate");
    assert!(reason(names::FRONT_PROXY_CLIENT).starts_with("it is not signed by the CA that signs it now"));
    assert_eq!(reason(names::KUBECONFIG_KUBE_SCHEDULER), "tls.key does not belong to tls.crt");
    assert_eq!(p.changed().len(), 3);
}

#[test]
fn unlabelled_certificates_are_compared_by_content() {
    let configs = shoot_set(&inputs());
    let first = fresh(&configs);
    let unlabelled: SecretSet = first
        .iter()
        .cloned()
        .map(|mut s| {
            s.labels.clear();
            s
        })
        .collect();
    assert!(plan(&configs, &unlabelled, SystemTime::now()).unwrap().changed().is_empty());
    let mut changed = inputs();
    changed.extra_sans.push("10.1.2.3".into());
    let p = plan(&shoot_set(&changed), &unlabelled, SystemTime::now()).unwrap();
    assert_eq!(p.actions[names::KUBE_APISERVER], Action::Reissue { reason: "its SANs differ from the config".into() });
}

#[test]
fn unreadable_ca_or_service_account_key_is_an_error_not_a_replacement() {
    let configs = shoot_set(&inputs());
    let first = fresh(&configs);
    let mut set = first.clone();
    let mut ca = set.get(names::CA_ETCD).unwrap().clone();
    ca.data.remove(keys_::CA_KEY);
    set.insert(ca);
    assert_eq!(
        plan(&configs, &set, SystemTime::now()).unwrap_err().to_string(),
        "CA ca-etcd: existing secret has no ca.key"
    );

    let mut set = first.clone();
    let mut sa = set.get(names::SERVICE_ACCOUNT_KEY).unwrap().clone();
    sa.data.insert(keys_::SA_KEY.into(), "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n".into());
    set.insert(sa);
    let err = plan(&configs, &set, SystemTime::now()).unwrap_err().to_string();
    assert_eq!(err, "service-account key service-account-key: existing secret sa.key is not a PKCS#8 PEM private key");
}

#[test]
fn random_values_are_made_once() {
    let configs = vec![SecretConfig::from(RandomConfig { name: "etcd-encryption-key".into(), bytes: 32 })];
    let first = fresh(&configs);
    let value = first.value("etcd-encryption-key", keys_::VALUE).unwrap();
    assert_eq!(base64::engine::general_purpose::STANDARD.decode(value).unwrap().len(), 32);
    assert!(plan(&configs, &first, SystemTime::now()).unwrap().changed().is_empty());
    let bigger = vec![SecretConfig::from(RandomConfig { name: "etcd-encryption-key".into(), bytes: 64 })];
    let p = plan(&bigger, &first, SystemTime::now()).unwrap();
    assert!(matches!(p.actions["etcd-encryption-key"], Action::KeepDespiteChange { .. }));
    assert_eq!(p.secrets.value("etcd-encryption-key", keys_::VALUE), Some(value));
}

#[test]
fn unknown_existing_secrets_are_reported_obsolete() {
    let configs = shoot_set(&inputs());
    let mut set = fresh(&configs);
    set.insert(Secret::new("leftover", secret_types::OPAQUE));
    assert_eq!(plan(&configs, &set, SystemTime::now()).unwrap().obsolete, vec!["leftover".to_string()]);
}

#[test]
fn debug_output_of_a_full_set_holds_no_private_key() {
    let configs = shoot_set(&inputs());
    let p = plan(&configs, &SecretSet::new(), SystemTime::now()).unwrap();
    assert!(p.secrets.iter().any(|s| s.data.values().any(|v| v.contains("PRIVATE KEY"))));
    for text in [format!("{p:?}"), format!("{:?}", p.secrets), format!("{:#?}", p), format!("{configs:?}")] {
        assert!(!text.contains("PRIVATE KEY"), "{text}");
        assert!(!text.contains("client-key-data"), "{text}");
    }
}

#[test]
fn an_ssh_key_pair_is_kept_until_a_new_rotation_renews_it_keeping_the_previous_one() {
    let mut i = inputs();
    i.ssh_keypair = Some(String::new());
    let first = fresh(&shoot_set(&i));
    let pair = first.get(names::SSH_KEYPAIR).unwrap().clone();
    assert!(pair.get(keys_::SSH_PRIVATE_KEY).unwrap().starts_with("-----BEGIN OPENSSH PRIVATE KEY-----"));
    assert!(pair.get(keys_::SSH_PUBLIC_KEY).unwrap().starts_with("ssh-ed25519 "));
    assert!(crate::shootstate::persistent_names(&shoot_set(&i)).contains(&"ssh-keypair-old".to_string()));

    // Unchanged rotation: every byte kept.
    let again = plan(&shoot_set(&i), &first, SystemTime::now()).unwrap();
    assert!(again.changed().is_empty(), "{:?}", again.actions);

    // A rotation: the pair moves to -old, a new one is made, once.
    i.ssh_keypair = Some("1767225600".into());
    let renewed = plan(&shoot_set(&i), &first, SystemTime::now()).unwrap();
    assert_eq!(renewed.secrets.get("ssh-keypair-old").unwrap().data, pair.data);
    assert_ne!(renewed.secrets.get(names::SSH_KEYPAIR).unwrap().data, pair.data);
    assert!(matches!(renewed.actions[names::SSH_KEYPAIR], Action::Reissue { .. }));
    assert_eq!(renewed.actions["ssh-keypair-old"], Action::Create);
    let retried = plan(&shoot_set(&i), &renewed.secrets, SystemTime::now()).unwrap();
    assert!(retried.changed().is_empty(), "a retried operation renews nothing: {:?}", retried.actions);

    // The next rotation replaces the previous -old.
    i.ssh_keypair = Some("1767229200".into());
    let next = plan(&shoot_set(&i), &renewed.secrets, SystemTime::now()).unwrap();
    assert_eq!(
        next.secrets.get("ssh-keypair-old").unwrap().data,
        renewed.secrets.get(names::SSH_KEYPAIR).unwrap().data
    );
    assert!(matches!(next.actions["ssh-keypair-old"], Action::Update { .. }));
}

#[test]
fn a_broken_ssh_key_pair_is_an_error_naming_it_without_its_content() {
    let mut i = inputs();
    i.ssh_keypair = Some(String::new());
    let mut set = fresh(&shoot_set(&i));
    let mut broken = set.get(names::SSH_KEYPAIR).unwrap().clone();
    broken.data.insert(keys_::SSH_PRIVATE_KEY.into(), "secret-bytes".into());
    set.insert(broken);
    let err = plan(&shoot_set(&i), &set, SystemTime::now()).unwrap_err().to_string();
    assert_eq!(err, "SSH key pair ssh-keypair: existing secret id_rsa is not an OpenSSH private key");

    let other = fresh(&shoot_set(&i));
    let mut mismatched = other.get(names::SSH_KEYPAIR).unwrap().clone();
    let foreign =
        fresh(&shoot_set(&i)).get(names::SSH_KEYPAIR).unwrap().get(keys_::SSH_PUBLIC_KEY).unwrap().to_string();
    mismatched.data.insert(keys_::SSH_PUBLIC_KEY.into(), foreign);
    let mut set = other.clone();
    set.insert(mismatched);
    assert!(plan(&shoot_set(&i), &set, SystemTime::now()).unwrap_err().to_string().contains("does not belong to"));
}
