//! What the Bastion controller wants, as pure functions: the seed's extension Bastion for an
//! `operations.gardener.cloud` Bastion (its user data creates the user `gardener` who may log
//! in with the Bastion's public key), and the status the operations Bastion reports from it.

use api::common::ConditionStatus;
use api::core::Shoot;
use api::extensions::Bastion as ExtensionBastion;
use api::extensions::bastion::{BastionIngressPolicy, BastionSpec as ExtensionBastionSpec};
use api::extensions::{DefaultSpec, ExtensionKind};
use api::helpers::conditions::{ConditionUpdate, set_condition};
use api::operations::{Bastion, BastionStatus};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use extension_sdk::deployer::{Judgement, judge};
use k8s_openapi::api::core::v1::LoadBalancerIngress;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::ResourceExt;
use std::collections::BTreeMap;

/// The condition that tells the user to connect.
pub const CONDITION_READY: &str = "BastionReady";
/// Labels on the extension Bastion naming the operations Bastion it serves.
pub const LABEL_NAMESPACE: &str = "operations.gardener.cloud/bastion-namespace";
pub const LABEL_NAME: &str = "operations.gardener.cloud/bastion-name";

/// Why no extension Bastion can be made (yet).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotYet {
    /// The spec is unusable: `field` and why (never the key itself).
    Invalid { field: &'static str, message: String },
    /// The shoot is not there yet (no technical ID).
    Waiting(String),
}

/// Single-quotes `s` for `sh`.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// The user data of a bastion whose user logs in with `ssh_public_key` (base64 of one
/// `authorized_keys` line, as the API takes it).
pub fn user_data(ssh_public_key: &str) -> Result<String, NotYet> {
    let invalid = |message: &str| NotYet::Invalid { field: "spec.sshPublicKey", message: message.to_string() };
    let decoded = STANDARD.decode(ssh_public_key.trim()).map_err(|_| invalid("is not base64"))?;
    let line = String::from_utf8(decoded).map_err(|_| invalid("is not text"))?;
    let line = line.trim();
    if line.contains(['\n', '\r']) {
        return Err(invalid("must be one public key (one authorized_keys line)"));
    }
    ssh_key::PublicKey::from_openssh(line).map_err(|_| invalid("is not an OpenSSH public key"))?;
    Ok(format!(
        "#!/bin/sh\n# The user gardener, who logs in with the Bastion's public key.\nset -eu\n\
         id gardener >/dev/null 2>&1 || useradd -m -U -p '*' -s /bin/sh gardener\n\
         mkdir -p /home/gardener/.ssh\n\
         printf '%s\\n' {} > /home/gardener/.ssh/authorized_keys\n\
         chmod 0700 /home/gardener/.ssh\nchmod 0600 /home/gardener/.ssh/authorized_keys\n\
         chown -R gardener:gardener /home/gardener/.ssh\n",
        quote(line)
    ))
}

/// The extension Bastion for `bastion` of `shoot`: in the shoot's seed namespace, of the
/// Bastion's provider type, with its ingress ranges and the user data.
pub fn desired(bastion: &Bastion, shoot: &Shoot) -> Result<ExtensionBastion, NotYet> {
    let Some(namespace) = shoot.status.as_ref().map(|s| s.technical_id.clone()).filter(|t| !t.is_empty()) else {
        return Err(NotYet::Waiting(format!("shoot {} has no technical ID yet", shoot.name_any())));
    };
    let type_ = bastion.spec.provider_type.clone().unwrap_or_else(|| shoot.spec.provider.type_.clone());
    let user_data = user_data(&bastion.spec.ssh_public_key)?;
    let labels = BTreeMap::from([
        (LABEL_NAMESPACE.to_string(), bastion.namespace().unwrap_or_default()),
        (LABEL_NAME.to_string(), bastion.name_any()),
    ]);
    Ok(ExtensionBastion {
        metadata: ObjectMeta {
            name: Some(bastion.name_any()),
            namespace: Some(namespace),
            labels: Some(labels),
            ..Default::default()
        },
        spec: ExtensionBastionSpec {
            default: DefaultSpec { type_, class: None, provider_config: None },
            user_data: STANDARD.encode(user_data),
            ingress: bastion
                .spec
                .ingress
                .iter()
                .map(|i| BastionIngressPolicy { ip_block: i.ip_block.clone() })
                .collect(),
        },
        status: None,
    })
}

/// Whether `current` must be (re)applied to become `desired`.
pub fn needs_apply(current: Option<&ExtensionBastion>, desired: &ExtensionBastion) -> bool {
    current.is_none_or(|c| c.spec != desired.spec || c.metadata.deletion_timestamp.is_some())
}

/// Where the extension Bastion stands.
#[derive(Debug, Clone, PartialEq)]
pub enum Progress {
    Ready(LoadBalancerIngress),
    Pending(String),
    Failed(String),
}

/// Judges the extension Bastion by the extension contract; ready needs an address too.
pub fn progress(current: &ExtensionBastion) -> Progress {
    match judge(&current.metadata, current.default_status(), None) {
        Judgement::Done => match current.status.as_ref().and_then(|s| s.ingress.clone()) {
            Some(ingress) => Progress::Ready(ingress),
            None => Progress::Pending("the bastion has no address yet".into()),
        },
        Judgement::Pending(why) => Progress::Pending(why),
        Judgement::Failed(e) => Progress::Failed(e.description),
        Judgement::BadTimestamp(v) => Progress::Failed(format!("unusable timestamp annotation {v:?}")),
    }
}

/// The status gardenlet owns (ingress, `BastionReady`, observed generation) for `progress`, or
/// `None` when `current` already says it.
pub fn status(
    current: Option<&BastionStatus>,
    generation: Option<i64>,
    progress: &Progress,
    now: &Time,
) -> Option<BastionStatus> {
    let mut next = current.cloned().unwrap_or_default();
    let (status, reason, message) = match progress {
        Progress::Ready(_) => (ConditionStatus::True, "SuccessfullyReconciled", "The bastion is ready.".to_string()),
        Progress::Pending(why) => {
            (ConditionStatus::False, "Reconciling", format!("The bastion is being set up: {why}."))
        }
        Progress::Failed(why) => (ConditionStatus::False, "FailedReconciling", format!("The bastion failed: {why}")),
    };
    let mut changed = set_condition(
        &mut next.conditions,
        ConditionUpdate { type_: CONDITION_READY, status, reason, message: &message, codes: &[] },
        now,
    );
    if let Progress::Ready(ingress) = progress
        && next.ingress.as_ref() != Some(ingress)
    {
        next.ingress = Some(ingress.clone());
        changed = true;
    }
    if next.observed_generation != generation {
        next.observed_generation = generation;
        changed = true;
    }
    changed.then_some(next)
}

/// The status for a spec that cannot become an extension Bastion.
pub fn not_yet_status(
    current: Option<&BastionStatus>,
    generation: Option<i64>,
    why: &NotYet,
    now: &Time,
) -> Option<BastionStatus> {
    let progress = match why {
        NotYet::Invalid { field, message } => Progress::Failed(format!("{field} {message}")),
        NotYet::Waiting(why) => Progress::Pending(why.clone()),
    };
    status(current, generation, &progress, now)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

    use super::*;
    use api::common::{LastOperation, LastOperationState, LastOperationType};
    use api::extensions::BastionStatus as ExtensionStatus;
    use api::operations::{BastionIngressPolicy as Ingress, BastionSpec};
    use k8s_openapi::api::networking::v1::IPBlock;

    const KEY: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMvRjR1zPZ0cLUS1pGE4mG4E/ZfY4Uq0bk8rOl3TIwCz user@host";

    fn at(s: &str) -> Time {
        Time(s.parse().unwrap())
    }

    fn bastion(key: &str) -> Bastion {
        let mut b = Bastion::new(
            "b1",
            BastionSpec {
                shoot_ref: api::common::LocalObjectReference { name: "demo".into() },
                seed_name: Some("local".into()),
                provider_type: Some("local".into()),
                ssh_public_key: STANDARD.encode(key),
                ingress: vec![Ingress { ip_block: IPBlock { cidr: "10.1.0.0/16".into(), except: None } }],
            },
        );
        b.metadata.namespace = Some("garden-dev".into());
        b.metadata.generation = Some(1);
        b
    }

    fn shoot() -> Shoot {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "core.gardener.cloud/v1beta1", "kind": "Shoot",
            "metadata": {"name": "demo", "namespace": "garden-dev"},
            "spec": {"provider": {"type": "local"}, "region": "local", "kubernetes": {"version": "1.20.2"}},
            "status": {"technicalID": "shoot--dev--demo"}
        }))
        .unwrap()
    }

    #[test]
    fn the_extension_bastion_is_in_the_shoot_namespace_with_the_users_key_quoted() {
        let ext = desired(&bastion(KEY), &shoot()).unwrap();
        assert_eq!(ext.metadata.namespace.as_deref(), Some("shoot--dev--demo"));
        assert_eq!(ext.metadata.name.as_deref(), Some("b1"));
        assert_eq!(ext.labels()[LABEL_NAMESPACE], "garden-dev");
        assert_eq!(ext.spec.ingress[0].ip_block.cidr, "10.1.0.0/16");
        let script = String::from_utf8(STANDARD.decode(&ext.spec.user_data).unwrap()).unwrap();
        assert!(script.contains(&format!("printf '%s\\n' '{KEY}' > /home/gardener/.ssh/authorized_keys")), "{script}");
        assert!(script.contains("useradd -m -U -p '*'"), "an unlocked account without password: {script}");
    }

    #[test]
    fn unusable_keys_are_refused_naming_the_field_and_not_the_key() {
        for bad in ["not a key", "ssh-ed25519 AAAA'; rm -rf /", &format!("{KEY}\n{KEY}")] {
            match desired(&bastion(bad), &shoot()) {
                Err(NotYet::Invalid { field, message }) => {
                    assert_eq!(field, "spec.sshPublicKey");
                    assert!(!message.contains("rm -rf"), "{message}");
                }
                other => panic!("{bad:?}: {other:?}"),
            }
        }
        let mut not_b64 = bastion(KEY);
        not_b64.spec.ssh_public_key = "%%%".into();
        assert!(matches!(desired(&not_b64, &shoot()), Err(NotYet::Invalid { .. })));
        let mut new_shoot = shoot();
        new_shoot.status = None;
        assert!(matches!(desired(&bastion(KEY), &new_shoot), Err(NotYet::Waiting(_))));
    }

    #[test]
    fn ready_needs_a_succeeded_operation_and_an_address_and_unchanged_status_writes_nothing() {
        let mut ext = desired(&bastion(KEY), &shoot()).unwrap();
        ext.metadata.generation = Some(1);
        assert!(matches!(progress(&ext), Progress::Pending(_)));
        let done = |ingress: Option<&str>| ExtensionStatus {
            default: api::extensions::DefaultStatus {
                observed_generation: Some(1),
                last_operation: Some(LastOperation {
                    type_: LastOperationType::Create,
                    state: LastOperationState::Succeeded,
                    progress: 100,
                    last_update_time: at("2026-01-01T00:00:00Z"),
                    description: "done".into(),
                }),
                ..Default::default()
            },
            ingress: ingress.map(|ip| LoadBalancerIngress { ip: Some(ip.into()), ..Default::default() }),
        };
        ext.status = Some(done(None));
        assert!(matches!(progress(&ext), Progress::Pending(_)), "no address yet");
        ext.status = Some(done(Some("10.2.0.7")));
        let ready = progress(&ext);
        assert!(matches!(&ready, Progress::Ready(i) if i.ip.as_deref() == Some("10.2.0.7")));

        let now = at("2026-01-01T00:01:00Z");
        let first = status(None, Some(1), &ready, &now).unwrap();
        assert_eq!(first.conditions[0].status, ConditionStatus::True);
        assert_eq!(first.ingress.as_ref().and_then(|i| i.ip.as_deref()), Some("10.2.0.7"));
        assert_eq!(status(Some(&first), Some(1), &ready, &at("2026-01-01T00:02:00Z")), None);
        let failed = status(Some(&first), Some(1), &Progress::Failed("boom".into()), &now).unwrap();
        assert_eq!(failed.conditions[0].reason, "FailedReconciling");
        assert!(needs_apply(None, &ext));
        let same = ext.clone();
        assert!(!needs_apply(Some(&same), &ext));
    }
}
