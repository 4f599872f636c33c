//! Which credential rotation a reconcile begins, and the second phase of a rotation that runs
//! both phases in one operation. Pure.

use api::core::Shoot;
use api::core::shoot::credentials::ShootCredentialsRotation;
use api::helpers::constants::ANNOTATION_OPERATION;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;

/// The rotation status this operation works with, and whether it begins a rotation now: a
/// requested rotation the shoot allows begins (admission refuses the others; one that got past
/// it is logged and the shoot only reconciled).
pub(super) fn rotation_for(shoot: &Shoot, requested: bool, now: &Time) -> (Option<ShootCredentialsRotation>, bool) {
    use api::helpers::rotation as r;
    let current = r::status(shoot).cloned();
    let operation = shoot.annotations().get(ANNOTATION_OPERATION).map(String::as_str);
    let Some((operation, request)) =
        operation.filter(|_| requested).and_then(|o| Some((o, r::request(o, shoot.spec.provider.ssh_access())?)))
    else {
        return (current, false);
    };
    let refused = r::allowed(&request, current.as_ref(), r::Lifecycle::of(shoot));
    if !refused.is_empty() {
        tracing::warn!(operation, reasons = ?refused, "credential rotation not possible now; reconciling without it");
        return (current, false);
    }
    (Some(r::begin(&request, current, now)), true)
}

/// The credentials the shoot's operation annotation asks to rotate through both phases in one
/// operation (`rotate-etcd-encryption-key`).
pub(super) fn at_once(shoot: &Shoot) -> Vec<api::helpers::rotation::Credential> {
    let value = api::helpers::shoot_operation::value(shoot);
    let request = value.and_then(|v| api::helpers::rotation::request(v, shoot.spec.provider.ssh_access()));
    request.map(|r| api::helpers::rotation::at_once(&r)).unwrap_or_default()
}

/// What a change of the encryption provider (`encryptionConfig.provider.type` against
/// `status.credentials.encryptionAtRest`) asks of this operation, as Gardener does it: an etcd
/// encryption key rotation through both phases, which rewrites every encrypted object under the
/// new provider and key. Returns the rotation status to work with, whether the operation begins
/// a step of it, and the credentials whose phase two follows phase one; `None` when the provider
/// does not change or the rotation cannot run now (hibernated: admission refuses the change
/// then, and it runs once the shoot is awake).
pub(super) fn provider_change(
    shoot: &Shoot,
    now: &Time,
) -> Option<(Option<ShootCredentialsRotation>, bool, Vec<api::helpers::rotation::Credential>)> {
    use api::core::shoot::credentials::RotationPhase;
    use api::helpers::rotation as r;
    if !api::helpers::encryption::changing(shoot) {
        return None;
    }
    let key = r::Credential::EtcdEncryptionKey;
    let current = r::status(shoot).cloned();
    let step = match r::of(current.as_ref(), key).map(|k| k.phase) {
        None | Some(RotationPhase::Completed) => r::Step::StartAndComplete,
        // Phase one failed and is retried: phase two still follows it.
        Some(RotationPhase::Preparing) => return Some((current, false, vec![key])),
        Some(RotationPhase::Prepared) => r::Step::Complete,
        Some(RotationPhase::Completing) => return Some((current, false, Vec::new())),
    };
    let request = r::Request { steps: vec![(key, step)], ssh_keypair: false };
    let refused = r::allowed(&request, current.as_ref(), r::Lifecycle::of(shoot));
    if !refused.is_empty() {
        tracing::info!(reasons = ?refused, "the encryption provider changes once its key rotation can run");
        return None;
    }
    Some((Some(r::begin(&request, current, now)), true, r::at_once(&request)))
}

/// Whether this operation's etcd encryption key rotation reached phase two (`rotation` as it
/// ran, before its phases were finished): then every encrypted object was rewritten under the
/// provider the spec asks for, which the status may then record.
pub(super) fn rewrote_for_provider(rotation: Option<&ShootCredentialsRotation>) -> bool {
    use api::core::shoot::credentials::RotationPhase;
    use api::helpers::rotation as r;
    r::of(rotation, r::Credential::EtcdEncryptionKey).is_some_and(|k| k.phase == RotationPhase::Completing)
}

/// The status with which phase two of `at_once` begins after phase one succeeded: what was
/// `Preparing` is `Prepared`, and `at_once` is `Completing`; `None` when nothing is asked.
pub(super) fn second_phase(
    rotation: Option<&ShootCredentialsRotation>,
    at_once: &[api::helpers::rotation::Credential],
    now: &Time,
) -> Option<ShootCredentialsRotation> {
    use api::helpers::rotation as r;
    if at_once.is_empty() {
        return None;
    }
    let mut prepared = rotation?.clone();
    r::finish(&mut prepared, now);
    let complete = r::Request { steps: at_once.iter().map(|c| (*c, r::Step::Complete)).collect(), ssh_keypair: false };
    Some(r::begin(&complete, Some(prepared), now))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code: a panic is the failure report
    use super::*;
    use crate::shoot::operate::now;
    use api::core::shoot::credentials::RotationPhase;
    use serde_json::json;

    fn shoot(operation: Option<&str>, hibernated: bool, created: bool) -> Shoot {
        let state = if created { "Succeeded" } else { "Processing" };
        let mut s: Shoot = serde_json::from_value(json!({
            "apiVersion": "core.gardener.cloud/v1beta1", "kind": "Shoot",
            "metadata": {"name": "s", "namespace": "garden-dev"},
            "spec": {"region": "local", "provider": {"type": "local"}, "kubernetes": {"version": "1.20.2"},
                     "hibernation": {"enabled": hibernated}},
            "status": {"lastOperation": {"type": "Create", "state": state, "progress": 100,
                                         "description": "", "lastUpdateTime": "2026-01-01T00:00:00Z"}},
        }))
        .unwrap();
        if let Some(op) = operation {
            s.metadata.annotations = Some([(ANNOTATION_OPERATION.to_string(), op.to_string())].into());
        }
        s
    }

    #[test]
    fn the_single_step_etcd_rotation_goes_on_to_phase_two_in_the_same_operation() {
        let at = now();
        let s = shoot(Some("rotate-etcd-encryption-key;rotate-ca-start"), false, true);
        let (rotation, begins) = rotation_for(&s, true, &at);
        assert!(begins);
        let once = at_once(&s);
        assert_eq!(once, [api::helpers::rotation::Credential::EtcdEncryptionKey]);
        let second = second_phase(rotation.as_ref(), &once, &at).unwrap();
        assert_eq!(second.etcd_encryption_key.as_ref().unwrap().phase, RotationPhase::Completing);
        assert_eq!(second.certificate_authorities.as_ref().unwrap().phase, RotationPhase::Prepared, "phase one only");
        let mut done = second;
        api::helpers::rotation::finish(&mut done, &at);
        assert_eq!(done.etcd_encryption_key.unwrap().phase, RotationPhase::Completed);
        assert!(at_once(&shoot(Some("rotate-etcd-encryption-key-start"), false, true)).is_empty());
        assert_eq!(second_phase(rotation.as_ref(), &[], &at), None);
    }

    #[test]
    fn a_requested_rotation_begins_only_when_the_shoot_allows_it() {
        let at = now();
        let (rotation, begins) = rotation_for(&shoot(Some("rotate-ca-start"), false, true), true, &at);
        assert!(begins);
        assert_eq!(rotation.unwrap().certificate_authorities.unwrap().phase, RotationPhase::Preparing);
        for s in [
            shoot(Some("rotate-ca-start"), true, true),
            shoot(Some("rotate-ca-start"), false, false),
            shoot(Some("rotate-ca-complete"), false, true),
            shoot(Some("reconcile"), false, true),
            shoot(None, false, true),
        ] {
            assert_eq!(rotation_for(&s, true, &at), (None, false), "{:?} {:?}", s.metadata.annotations, s.status);
        }
        let (_, begins) = rotation_for(&shoot(Some("rotate-ca-start"), false, true), false, &at);
        assert!(!begins, "only a requested reconcile takes the request");
    }

    /// A created shoot asking for `wanted`, its data under `in_use`, its etcd encryption key
    /// rotation in `phase`.
    fn changing(wanted: &str, in_use: &str, phase: Option<&str>, hibernated: bool) -> Shoot {
        let mut s = shoot(None, hibernated, true);
        s.spec.kubernetes.kube_api_server =
            Some(serde_json::from_value(json!({"encryptionConfig": {"provider": {"type": wanted}}})).unwrap());
        let mut credentials = json!({"encryptionAtRest": {"provider": {"type": in_use}}});
        if let Some(phase) = phase {
            credentials["rotation"] = json!({"etcdEncryptionKey": {"phase": phase}});
        }
        s.status.as_mut().unwrap().credentials = Some(serde_json::from_value(credentials).unwrap());
        s
    }

    #[test]
    fn a_provider_change_rotates_the_etcd_key_through_both_phases() {
        use api::helpers::rotation::Credential::EtcdEncryptionKey;
        let at = now();
        let phase =
            |r: &Option<ShootCredentialsRotation>| r.as_ref().unwrap().etcd_encryption_key.as_ref().unwrap().phase;

        let (r, begins, both) = provider_change(&changing("secretbox", "aescbc", None, false), &at).unwrap();
        assert!(begins);
        assert_eq!((phase(&r), both), (RotationPhase::Preparing, vec![EtcdEncryptionKey]));
        let (r, begins, _) = provider_change(&changing("secretbox", "aescbc", Some("Completed"), false), &at).unwrap();
        assert!(begins && phase(&r) == RotationPhase::Preparing, "after an earlier rotation");

        // A failed phase one is retried, and phase two still follows.
        let (r, begins, both) =
            provider_change(&changing("secretbox", "aescbc", Some("Preparing"), false), &at).unwrap();
        assert!(!begins);
        assert_eq!((phase(&r), both), (RotationPhase::Preparing, vec![EtcdEncryptionKey]));
        // Stopped between the phases: phase two begins.
        let (r, begins, both) =
            provider_change(&changing("secretbox", "aescbc", Some("Prepared"), false), &at).unwrap();
        assert!(begins && both.is_empty());
        assert_eq!(phase(&r), RotationPhase::Completing);

        assert!(provider_change(&changing("aescbc", "aescbc", None, false), &at).is_none(), "no change");
        assert!(provider_change(&changing("secretbox", "aescbc", None, true), &at).is_none(), "waits while hibernated");
        let mut unrecorded = changing("secretbox", "aescbc", None, false);
        unrecorded.status.as_mut().unwrap().credentials = None;
        assert!(provider_change(&unrecorded, &at).is_none(), "a shoot without a recorded provider starts with its own");
    }

    #[test]
    fn only_a_rotation_that_reached_phase_two_rewrote_the_data() {
        let with = |phase: RotationPhase| {
            let r = serde_json::from_value(json!({"etcdEncryptionKey": {"phase": phase}})).unwrap();
            rewrote_for_provider(Some(&r))
        };
        assert!(with(RotationPhase::Completing));
        assert!(!with(RotationPhase::Preparing) && !with(RotationPhase::Prepared));
        assert!(!rewrote_for_provider(None));
    }
}
