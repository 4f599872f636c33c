//! Credential rotations as gardenlet carries them out (pure). The Shoot's
//! `status.credentials.rotation` says what is asked (`Preparing`: phase one, `Completing`: phase
//! two; see [`api::helpers::rotation`]); the secret set says what is done (`<name>-old` exists
//! between the phases). Together they give the `pki` steps of this reconcile, so a retried or
//! restarted operation never takes a step twice.
//!
//! | credential | phase one | phase two |
//! |---|---|---|
//! | certificate authorities | new CAs; bundles with both; clients re-issued | old CAs dropped; servers re-issued |
//! | service account key | new key signs; old and new verify | old key no longer verifies |
//! | etcd encryption key | new key encrypts; old decrypts; every Secret rewritten | old key dropped |

use api::core::shoot::credentials::{RotationPhase, ShootCredentialsRotation, TwoPhaseRotation};
use api::helpers::rotation::{Credential, of};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use pki::rotation::{Phase, Step, Steps, key_phase};
use pki::shoot_set::names::{ETCD_ENCRYPTION_KEY, SERVICE_ACCOUNT_KEY};
use pki::{SecretConfig, SecretSet};
use serde_json::{Value, json};

/// The pki steps that bring `set` to what `rotation` asks for.
pub fn steps(
    rotation: Option<&ShootCredentialsRotation>,
    configs: &[SecretConfig],
    set: &SecretSet,
) -> Result<Steps, pki::Error> {
    let cas = step(of(rotation, Credential::CertificateAuthorities), pki::rotation::phase(configs, set)?);
    let mut steps = Steps { cas, ..Default::default() };
    for (credential, key) in
        [(Credential::ServiceAccountKey, SERVICE_ACCOUNT_KEY), (Credential::EtcdEncryptionKey, ETCD_ENCRYPTION_KEY)]
    {
        if let Some(s) = step(of(rotation, credential), key_phase(set, key)) {
            steps.keys.insert(key.to_string(), s);
        }
    }
    Ok(steps)
}

/// A step only when the status asks for one the set has not taken yet.
fn step(status: Option<&TwoPhaseRotation>, done: Phase) -> Option<Step> {
    match (status.map(|s| s.phase), done) {
        (Some(RotationPhase::Preparing), Phase::Idle) => Some(Step::Start),
        (Some(RotationPhase::Completing), Phase::Prepared) => Some(Step::Complete),
        _ => None,
    }
}

/// Whether this operation must rewrite every Secret of the shoot: phase one of the etcd
/// encryption key, until it has succeeded once.
pub fn reencrypt(rotation: Option<&ShootCredentialsRotation>) -> bool {
    of(rotation, Credential::EtcdEncryptionKey).is_some_and(|r| r.phase == RotationPhase::Preparing)
}

/// Where a service-account key rotation needs work on the shoot's token Secrets (see
/// [`crate::shoot::credentials::service_account_tokens`]): its phase (`Preparing` or `Completing`, until that phase
/// has succeeded once) and when the rotation began.
pub fn token_secrets(rotation: Option<&ShootCredentialsRotation>) -> Option<(RotationPhase, &Time)> {
    of(rotation, Credential::ServiceAccountKey)
        .filter(|r| matches!(r.phase, RotationPhase::Preparing | RotationPhase::Completing))
        .and_then(|r| Some((r.phase, r.last_initiation_time.as_ref()?)))
}

/// The SSH key-pair rotation the pair must be made for: the start time of the last one in
/// whole seconds since the epoch, empty before the first (see [`pki::SshKeypairConfig`]). Whole
/// seconds, because the status stores the time to the second: the operation that begins the
/// rotation holds it with a fraction, every later one without.
pub fn ssh_keypair(rotation: Option<&ShootCredentialsRotation>) -> String {
    rotation
        .and_then(|r| r.ssh_keypair.as_ref())
        .and_then(|s| s.last_initiation_time.as_ref())
        .map(|t| t.0.as_second().to_string())
        .unwrap_or_default()
}

/// `status.credentials` as a merge patch: every field of each two-phase rotation is written,
/// `null` where it has no value, so that a new rotation clears the previous one's times.
pub fn status_patch(rotation: &ShootCredentialsRotation) -> Value {
    let two = |r: &Option<TwoPhaseRotation>| match r {
        None => Value::Null,
        Some(r) => json!({
            "phase": r.phase,
            "lastInitiationTime": r.last_initiation_time,
            "lastInitiationFinishedTime": r.last_initiation_finished_time,
            "lastCompletionTriggeredTime": r.last_completion_triggered_time,
            "lastCompletionTime": r.last_completion_time,
        }),
    };
    let mut out = json!({ "rotation": {
        "certificateAuthorities": two(&rotation.certificate_authorities),
        "serviceAccountKey": two(&rotation.service_account_key),
        "etcdEncryptionKey": two(&rotation.etcd_encryption_key),
    }});
    if let Some(ssh) = &rotation.ssh_keypair {
        out["rotation"]["sshKeypair"] = json!(ssh);
    }
    // Absent rotations stay absent (a `null` would only delete what is not there).
    if let Some(r) = out["rotation"].as_object_mut() {
        r.retain(|_, v| !v.is_null());
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code: a panic is the failure report
    use super::*;
    use api::helpers::rotation::{begin, request};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use std::time::SystemTime;

    fn at(s: &str) -> Time {
        Time(s.parse().unwrap())
    }

    fn configs() -> Vec<SecretConfig> {
        pki::shoot_set::shoot_set(&pki::shoot_set::ShootInputs::new(
            "shoot--p--s",
            "api.internal",
            "10.0.0.1".parse().unwrap(),
        ))
    }

    #[test]
    fn each_phase_is_taken_once_even_when_retried() {
        let configs = configs();
        let idle = pki::manager::plan(&configs, &SecretSet::new(), SystemTime::now()).unwrap().secrets;
        assert!(steps(None, &configs, &idle).unwrap().is_empty(), "nothing asked, nothing done");

        let preparing = begin(&request("rotate-credentials-start", true).unwrap(), None, &at("2026-01-01T00:00:00Z"));
        let first = steps(Some(&preparing), &configs, &idle).unwrap();
        assert_eq!(first.cas, Some(Step::Start));
        assert_eq!(first.keys.values().collect::<Vec<_>>(), [&Step::Start, &Step::Start]);
        assert!(reencrypt(Some(&preparing)));

        // The operation failed after the secrets were written: the retry takes no step again.
        let mid = pki::rotation::rotate(&configs, &idle, &first, SystemTime::now()).unwrap().secrets;
        assert!(steps(Some(&preparing), &configs, &mid).unwrap().is_empty());

        let mut prepared = preparing.clone();
        api::helpers::rotation::finish(&mut prepared, &at("2026-01-01T00:05:00Z"));
        assert!(steps(Some(&prepared), &configs, &mid).unwrap().is_empty(), "Prepared waits for the completion");
        assert!(!reencrypt(Some(&prepared)));

        let completing =
            begin(&request("rotate-ca-complete", true).unwrap(), Some(prepared.clone()), &at("2026-01-02T00:00:00Z"));
        let second = steps(Some(&completing), &configs, &mid).unwrap();
        assert_eq!(second, Steps { cas: Some(Step::Complete), keys: Default::default() }, "only the CAs complete");
        let done = pki::rotation::rotate(&configs, &mid, &second, SystemTime::now()).unwrap().secrets;
        assert!(steps(Some(&completing), &configs, &done).unwrap().is_empty());
    }

    #[test]
    fn the_key_pair_rotation_is_the_same_before_and_after_the_status_round_trip() {
        let now = Time(k8s_openapi::jiff::Timestamp::from_nanosecond(1_767_225_600_123_456_789).unwrap());
        let begun = begin(&request("rotate-ssh-keypair", true).unwrap(), None, &now);
        let stored: ShootCredentialsRotation = serde_json::from_value(serde_json::to_value(&begun).unwrap()).unwrap();
        assert_eq!(ssh_keypair(Some(&begun)), "1767225600");
        assert_eq!(ssh_keypair(Some(&stored)), ssh_keypair(Some(&begun)), "a retry renews nothing");
        assert_eq!(ssh_keypair(None), "");
    }

    #[test]
    fn the_status_patch_clears_the_previous_rotations_times() {
        let previous = begin(&request("rotate-ca-start", true).unwrap(), None, &at("2026-01-01T00:00:00Z"));
        let mut r = previous.clone();
        api::helpers::rotation::finish(&mut r, &at("2026-01-01T00:05:00Z"));
        let again = begin(&request("rotate-ca-start", true).unwrap(), Some(r), &at("2026-02-01T00:00:00Z"));
        let patch = status_patch(&again);
        let ca = &patch["rotation"]["certificateAuthorities"];
        assert_eq!(ca["phase"], "Preparing");
        assert_eq!(ca["lastInitiationTime"], "2026-02-01T00:00:00Z");
        assert!(ca["lastInitiationFinishedTime"].is_null() && ca.get("lastInitiationFinishedTime").is_some());
        assert!(patch["rotation"].get("serviceAccountKey").is_none(), "untouched rotations are not in the patch");
    }
}
