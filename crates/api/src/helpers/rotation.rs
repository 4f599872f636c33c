//! What a rotation request (an operation annotation) means for a shoot's
//! `status.credentials.rotation`, as pure functions shared by admission (is the request
//! allowed now?) and gardenlet (the status when the operation begins and when it succeeds).
//!
//! Two-phase rotations (GEP-18: the CAs, the service account key, the etcd encryption key) go
//! `Preparing` → `Prepared` (old and new both valid) → `Completing` → `Completed` (only the new
//! valid). A start is allowed when no rotation of that credential is under way (no phase yet,
//! or `Completed`); a completion only in `Prepared`. No step while the shoot is not yet
//! created, or is hibernated or about to be: every step changes running components. The SSH
//! key pair rotates in one step. `rotate-credentials-start`/`-complete` take every two-phase
//! rotation at once, and are allowed only when each one is.
//!
//! The SSH key pair exists only when the nodes are reached over SSH (workers, and
//! `spec.provider.workersSettings.sshAccess.enabled` not false): only then is
//! `rotate-ssh-keypair` allowed and part of `rotate-credentials-start`, so the status never
//! reports a rotation that did not happen.

use crate::common::{LastOperationState, LastOperationType};
use crate::core::Shoot;
use crate::core::shoot::credentials::{OnePhaseRotation, RotationPhase, ShootCredentialsRotation, TwoPhaseRotation};
use crate::helpers::constants::operation as op;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use std::fmt;

/// A credential rotated in two phases.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Credential {
    CertificateAuthorities,
    ServiceAccountKey,
    EtcdEncryptionKey,
}

impl fmt::Display for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::CertificateAuthorities => "certificate authorities",
            Self::ServiceAccountKey => "service account key",
            Self::EtcdEncryptionKey => "etcd encryption key",
        })
    }
}

const ALL: [Credential; 3] =
    [Credential::CertificateAuthorities, Credential::ServiceAccountKey, Credential::EtcdEncryptionKey];

/// Which phase a request asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    Start,
    Complete,
    /// Both phases in one operation (`rotate-etcd-encryption-key`): it begins as a start, and
    /// the operation completes it once phase one succeeded.
    StartAndComplete,
}

/// What an operation annotation asks to rotate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    pub steps: Vec<(Credential, Step)>,
    pub ssh_keypair: bool,
}

/// The rotation an operation annotation asks for on a shoot whose nodes are (`ssh_access`) or
/// are not reached over SSH; `None` when it asks for none. A value of several operations
/// separated by `;` asks for the rotations of all its parts (a step asked for twice once).
pub fn request(operation: &str, ssh_access: bool) -> Option<Request> {
    let mut merged: Option<Request> = None;
    for part in crate::helpers::shoot_operation::parts(operation) {
        let Some(one) = request_one(part, ssh_access) else { continue };
        let all = merged.get_or_insert_with(|| Request { steps: Vec::new(), ssh_keypair: false });
        for step in one.steps {
            if !all.steps.contains(&step) {
                all.steps.push(step);
            }
        }
        all.ssh_keypair |= one.ssh_keypair;
    }
    merged
}

/// The rotation one operation asks for.
pub fn request_one(operation: &str, ssh_access: bool) -> Option<Request> {
    let one = |c, s| Some(Request { steps: vec![(c, s)], ssh_keypair: false });
    match operation {
        op::ROTATE_CA_START => one(Credential::CertificateAuthorities, Step::Start),
        op::ROTATE_CA_COMPLETE => one(Credential::CertificateAuthorities, Step::Complete),
        op::ROTATE_SERVICE_ACCOUNT_KEY_START => one(Credential::ServiceAccountKey, Step::Start),
        op::ROTATE_SERVICE_ACCOUNT_KEY_COMPLETE => one(Credential::ServiceAccountKey, Step::Complete),
        op::ROTATE_ETCD_ENCRYPTION_KEY_START => one(Credential::EtcdEncryptionKey, Step::Start),
        op::ROTATE_ETCD_ENCRYPTION_KEY_COMPLETE => one(Credential::EtcdEncryptionKey, Step::Complete),
        op::ROTATE_ETCD_ENCRYPTION_KEY => one(Credential::EtcdEncryptionKey, Step::StartAndComplete),
        op::ROTATE_CREDENTIALS_START => {
            Some(Request { steps: ALL.iter().map(|c| (*c, Step::Start)).collect(), ssh_keypair: ssh_access })
        }
        op::ROTATE_CREDENTIALS_COMPLETE => {
            Some(Request { steps: ALL.iter().map(|c| (*c, Step::Complete)).collect(), ssh_keypair: false })
        }
        op::ROTATE_SSH_KEYPAIR => Some(Request { steps: Vec::new(), ssh_keypair: true }),
        _ => None,
    }
}

/// The credentials `request` asks to take through both phases in one operation.
pub fn at_once(request: &Request) -> Vec<Credential> {
    request.steps.iter().filter(|(_, s)| *s == Step::StartAndComplete).map(|(c, _)| *c).collect()
}

/// The credentials for which `request` asks for steps that exclude each other (a start and a
/// completion of the same rotation in one operation).
pub fn conflicts(request: &Request) -> Vec<Credential> {
    ALL.into_iter()
        .filter(|c| {
            let steps: Vec<Step> = request.steps.iter().filter(|(x, _)| x == c).map(|(_, s)| *s).collect();
            steps.len() > 1
        })
        .collect()
}

/// The status of one two-phase credential.
pub fn of(rotation: Option<&ShootCredentialsRotation>, credential: Credential) -> Option<&TwoPhaseRotation> {
    let r = rotation?;
    match credential {
        Credential::CertificateAuthorities => r.certificate_authorities.as_ref(),
        Credential::ServiceAccountKey => r.service_account_key.as_ref(),
        Credential::EtcdEncryptionKey => r.etcd_encryption_key.as_ref(),
    }
}

fn of_mut(rotation: &mut ShootCredentialsRotation, credential: Credential) -> &mut Option<TwoPhaseRotation> {
    match credential {
        Credential::CertificateAuthorities => &mut rotation.certificate_authorities,
        Credential::ServiceAccountKey => &mut rotation.service_account_key,
        Credential::EtcdEncryptionKey => &mut rotation.etcd_encryption_key,
    }
}

/// Where the shoot is in its life, as far as rotations care.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Lifecycle {
    /// Its first Create has not succeeded yet.
    pub creating: bool,
    /// Hibernated, or asked to hibernate.
    pub hibernated: bool,
    /// Its nodes are reached over SSH, so it has an SSH key pair.
    pub ssh_access: bool,
}

impl Lifecycle {
    /// Where `shoot` is: creating until a Create succeeded; hibernated as the status reports
    /// it or as the spec asks.
    pub fn of(shoot: &Shoot) -> Self {
        let status = shoot.status.as_ref();
        let creating = status
            .and_then(|s| s.last_operation.as_ref())
            .is_none_or(|l| l.type_ == LastOperationType::Create && l.state != LastOperationState::Succeeded);
        let hibernated = status.is_some_and(|s| s.hibernated) || shoot.spec.hibernation_enabled();
        Self { creating, hibernated, ssh_access: shoot.spec.provider.ssh_access() }
    }
}

/// Where the rotations of `shoot` stand (`status.credentials.rotation`).
pub fn status(shoot: &Shoot) -> Option<&ShootCredentialsRotation> {
    shoot.status.as_ref()?.credentials.as_ref()?.rotation.as_ref()
}

/// Whether `request` may run now; the errors name the credential and why not.
pub fn allowed(request: &Request, rotation: Option<&ShootCredentialsRotation>, shoot: Lifecycle) -> Vec<String> {
    let mut errors = Vec::new();
    if shoot.creating {
        errors.push("credentials cannot be rotated before the shoot was created successfully".to_string());
    }
    if shoot.hibernated {
        errors.push("credentials cannot be rotated while the shoot is hibernated or hibernating".to_string());
    }
    if request.ssh_keypair && !shoot.ssh_access {
        errors.push(
            "the shoot has no SSH key pair to rotate: its nodes are not reached over SSH (it has no workers, or \
             spec.provider.workersSettings.sshAccess.enabled is false)"
                .to_string(),
        );
    }
    for (credential, step) in &request.steps {
        let phase = of(rotation, *credential).map(|r| r.phase);
        match (step, phase) {
            (Step::Start | Step::StartAndComplete, None | Some(RotationPhase::Completed)) => {}
            (Step::Start | Step::StartAndComplete, Some(p)) => {
                errors.push(format!("the rotation of the {credential} cannot start in phase {p:?}; it is under way"))
            }
            (Step::Complete, Some(RotationPhase::Prepared)) => {}
            (Step::Complete, p) => errors.push(format!(
                "the rotation of the {credential} can only be completed in phase Prepared, not {}",
                p.map_or_else(|| "before it started".to_string(), |p| format!("{p:?}"))
            )),
        }
    }
    errors
}

/// The status when an operation for `request` begins: `Preparing` (or `Completing`) with the
/// time of the request; the SSH key pair's initiation time.
pub fn begin(request: &Request, rotation: Option<ShootCredentialsRotation>, now: &Time) -> ShootCredentialsRotation {
    let mut rotation = rotation.unwrap_or_default();
    for (credential, step) in &request.steps {
        let slot = of_mut(&mut rotation, *credential);
        let previous = slot.take();
        *slot = Some(match step {
            Step::Start | Step::StartAndComplete => TwoPhaseRotation {
                phase: RotationPhase::Preparing,
                last_initiation_time: Some(now.clone()),
                last_initiation_finished_time: None,
                last_completion_triggered_time: None,
                last_completion_time: previous.and_then(|p| p.last_completion_time),
            },
            Step::Complete => TwoPhaseRotation {
                phase: RotationPhase::Completing,
                last_completion_triggered_time: Some(now.clone()),
                ..previous.unwrap_or_else(|| empty(RotationPhase::Completing))
            },
        });
    }
    if request.ssh_keypair {
        let previous = rotation.ssh_keypair.take().unwrap_or_default();
        rotation.ssh_keypair = Some(OnePhaseRotation { last_initiation_time: Some(now.clone()), ..previous });
    }
    rotation
}

fn empty(phase: RotationPhase) -> TwoPhaseRotation {
    TwoPhaseRotation {
        phase,
        last_initiation_time: None,
        last_initiation_finished_time: None,
        last_completion_triggered_time: None,
        last_completion_time: None,
    }
}

/// The status after an operation succeeded: `Preparing` → `Prepared`, `Completing` →
/// `Completed`, each with its finishing time; an SSH key pair rotation initiated after its last
/// completion is complete now. Returns whether anything changed.
pub fn finish(rotation: &mut ShootCredentialsRotation, now: &Time) -> bool {
    let mut changed = false;
    for credential in ALL {
        if let Some(r) = of_mut(rotation, credential).as_mut() {
            match r.phase {
                RotationPhase::Preparing => {
                    r.phase = RotationPhase::Prepared;
                    r.last_initiation_finished_time = Some(now.clone());
                    changed = true;
                }
                RotationPhase::Completing => {
                    r.phase = RotationPhase::Completed;
                    r.last_completion_time = Some(now.clone());
                    changed = true;
                }
                RotationPhase::Prepared | RotationPhase::Completed => {}
            }
        }
    }
    if let Some(ssh) = rotation.ssh_keypair.as_mut()
        && let Some(initiated) = &ssh.last_initiation_time
        && ssh.last_completion_time.as_ref().is_none_or(|done| done.0 < initiated.0)
    {
        ssh.last_completion_time = Some(now.clone());
        changed = true;
    }
    changed
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code: a panic is the failure report
    use super::*;

    fn at(s: &str) -> Time {
        Time(s.parse().unwrap())
    }

    const RUNNING: Lifecycle = Lifecycle { creating: false, hibernated: false, ssh_access: true };
    const NO_SSH: Lifecycle = Lifecycle { ssh_access: false, ..RUNNING };

    #[test]
    fn annotations_map_to_requests() {
        let ca = request("rotate-ca-start", true).unwrap();
        assert_eq!(ca.steps, [(Credential::CertificateAuthorities, Step::Start)]);
        let all = request("rotate-credentials-start", true).unwrap();
        assert_eq!(all.steps.len(), 3);
        assert!(all.ssh_keypair, "the SSH key pair is part of all credentials");
        assert!(!request("rotate-credentials-start", false).unwrap().ssh_keypair, "when the nodes run sshd");
        let complete = request("rotate-credentials-complete", true).unwrap();
        assert!(complete.steps.iter().all(|(_, s)| *s == Step::Complete) && !complete.ssh_keypair);
        assert_eq!(request("rotate-ssh-keypair", true).unwrap(), Request { steps: vec![], ssh_keypair: true });
        assert_eq!(request("reconcile", true), None);
    }

    #[test]
    fn a_list_of_operations_asks_for_every_rotation_in_it() {
        let both = request("rotate-ca-start;rotate-serviceaccount-key-start; reconcile", true).unwrap();
        assert_eq!(
            both.steps,
            [(Credential::CertificateAuthorities, Step::Start), (Credential::ServiceAccountKey, Step::Start)]
        );
        assert!(conflicts(&both).is_empty());
        let ssh = request("rotate-ssh-keypair;rotate-ca-start", true).unwrap();
        assert!(ssh.ssh_keypair);
        let twice = request("rotate-credentials-start;rotate-ca-start", true).unwrap();
        assert_eq!(twice.steps.len(), 3, "a step asked for twice is taken once");
        let clash = request("rotate-ca-start;rotate-ca-complete", true).unwrap();
        assert_eq!(conflicts(&clash), [Credential::CertificateAuthorities]);
        assert_eq!(request("reconcile;retry", true), None);
    }

    #[test]
    fn the_single_step_etcd_key_rotation_starts_like_a_start_and_is_completed_by_the_operation() {
        let once = request("rotate-etcd-encryption-key", true).unwrap();
        assert_eq!(at_once(&once), [Credential::EtcdEncryptionKey]);
        assert!(allowed(&once, None, RUNNING).is_empty());
        let r = begin(&once, None, &at("2026-01-01T10:00:00Z"));
        assert_eq!(r.etcd_encryption_key.as_ref().unwrap().phase, RotationPhase::Preparing);
        assert_eq!(allowed(&once, Some(&r), RUNNING).len(), 1, "not while one is under way");
        let clash = request("rotate-etcd-encryption-key;rotate-etcd-encryption-key-start", true).unwrap();
        assert_eq!(conflicts(&clash), [Credential::EtcdEncryptionKey]);
    }

    #[test]
    fn a_ca_rotation_walks_its_four_phases_with_gardeners_timestamps() {
        let start = request("rotate-ca-start", true).unwrap();
        assert!(allowed(&start, None, RUNNING).is_empty());
        let mut r = begin(&start, None, &at("2026-01-01T10:00:00Z"));
        let ca = r.certificate_authorities.clone().unwrap();
        assert_eq!((ca.phase, ca.last_initiation_time), (RotationPhase::Preparing, Some(at("2026-01-01T10:00:00Z"))));
        assert!(finish(&mut r, &at("2026-01-01T10:05:00Z")));
        assert!(!finish(&mut r, &at("2026-01-01T10:06:00Z")), "a second success changes nothing");
        let ca = r.certificate_authorities.clone().unwrap();
        assert_eq!(ca.phase, RotationPhase::Prepared);
        assert_eq!(ca.last_initiation_finished_time, Some(at("2026-01-01T10:05:00Z")));

        let again = allowed(&start, Some(&r), RUNNING);
        assert_eq!(
            again,
            ["the rotation of the certificate authorities cannot start in phase Prepared; it is under way"]
        );
        let complete = request("rotate-ca-complete", true).unwrap();
        assert!(allowed(&complete, Some(&r), RUNNING).is_empty());
        let mut r = begin(&complete, Some(r), &at("2026-01-02T10:00:00Z"));
        assert_eq!(r.certificate_authorities.as_ref().unwrap().phase, RotationPhase::Completing);
        finish(&mut r, &at("2026-01-02T10:03:00Z"));
        let ca = r.certificate_authorities.clone().unwrap();
        assert_eq!(ca.phase, RotationPhase::Completed);
        assert_eq!(ca.last_initiation_time, Some(at("2026-01-01T10:00:00Z")), "phase one's times are kept");
        assert_eq!(ca.last_completion_triggered_time, Some(at("2026-01-02T10:00:00Z")));
        assert_eq!(ca.last_completion_time, Some(at("2026-01-02T10:03:00Z")));
        assert!(allowed(&start, Some(&r), RUNNING).is_empty(), "a completed rotation may start again");
        assert_eq!(r.service_account_key, None, "other credentials are untouched");
    }

    #[test]
    fn completing_needs_prepared_and_nothing_runs_on_a_sleeping_or_new_shoot() {
        let complete = request("rotate-serviceaccount-key-complete", true).unwrap();
        assert_eq!(
            allowed(&complete, None, RUNNING),
            ["the rotation of the service account key can only be completed in phase Prepared, not before it started"]
        );
        let start = request("rotate-etcd-encryption-key-start", true).unwrap();
        assert_eq!(allowed(&start, None, Lifecycle { creating: true, ..RUNNING }).len(), 1);
        assert_eq!(allowed(&start, None, Lifecycle { hibernated: true, ..RUNNING }).len(), 1);
    }

    #[test]
    fn all_credentials_at_once_need_each_to_be_ready() {
        let ca_only = begin(&request("rotate-ca-start", true).unwrap(), None, &at("2026-01-01T10:00:00Z"));
        let all = request("rotate-credentials-start", true).unwrap();
        assert_eq!(allowed(&all, Some(&ca_only), RUNNING).len(), 1, "the CA rotation is under way");
        let mut r = begin(&all, None, &at("2026-01-01T10:00:00Z"));
        finish(&mut r, &at("2026-01-01T10:04:00Z"));
        assert!(ALL.iter().all(|c| of(Some(&r), *c).unwrap().phase == RotationPhase::Prepared));
        assert_eq!(r.ssh_keypair.unwrap().last_completion_time, Some(at("2026-01-01T10:04:00Z")));
    }

    #[test]
    fn an_ssh_key_pair_rotation_needs_ssh_access_and_completes_in_one_step() {
        let ssh = request("rotate-ssh-keypair", true).unwrap();
        assert!(allowed(&ssh, None, RUNNING).is_empty());
        assert_eq!(
            allowed(&ssh, None, NO_SSH),
            ["the shoot has no SSH key pair to rotate: its nodes are not reached over SSH (it has no workers, or \
              spec.provider.workersSettings.sshAccess.enabled is false)"]
        );
        let mut r = begin(&ssh, None, &at("2026-01-01T10:00:00Z"));
        assert_eq!(r.ssh_keypair.as_ref().unwrap().last_completion_time, None);
        finish(&mut r, &at("2026-01-01T10:04:00Z"));
        assert_eq!(r.ssh_keypair.as_ref().unwrap().last_completion_time, Some(at("2026-01-01T10:04:00Z")));
    }
}
