//! The operation annotation of a Shoot (`gardener.cloud/operation`), judged when it is set:
//! one operation or several separated by `;`, each of which must be one a user may ask for
//! ([`judge_part`]: Gardener's list, minus what this system does not do, with the reason); parts
//! that exclude each other (a start and a completion of the same rotation; `maintain` or
//! `force-restore` with anything else) are refused; and a credential rotation is refused when
//! it cannot run now (see [`api::helpers::rotation`]: a start while one is under way, a
//! completion before `Prepared`, any step before the shoot exists or while it sleeps). Every
//! refusal names the annotation.

use crate::field::{ErrorList, FieldError, Path};
use crate::identity::{Identities, UserInfo};
use api::core::Shoot;
use api::helpers::constants::{ANNOTATION_OPERATION, operation as op};
use api::helpers::rotation::{self, Lifecycle};
use api::helpers::shoot_operation::{self, parts};

/// The operations a user may ask for on a Shoot (`rollout-workers=<pool>[,<pool>...]` aside).
pub const ALLOWED: [&str; 16] = [
    op::RECONCILE,
    op::RETRY,
    op::MAINTAIN,
    op::ROTATE_CREDENTIALS_START,
    op::ROTATE_CREDENTIALS_COMPLETE,
    op::ROTATE_CA_START,
    op::ROTATE_CA_COMPLETE,
    op::ROTATE_SERVICE_ACCOUNT_KEY_START,
    op::ROTATE_SERVICE_ACCOUNT_KEY_COMPLETE,
    op::ROTATE_ETCD_ENCRYPTION_KEY_START,
    op::ROTATE_ETCD_ENCRYPTION_KEY_COMPLETE,
    op::ROTATE_ETCD_ENCRYPTION_KEY,
    op::ROTATE_SSH_KEYPAIR,
    "rollout-workers=<pool>[,<pool>...]",
    // Operators only (the identities that may assign seeds).
    op::FORCE_RESTORE,
    // Listed for completeness of the message; refused with its reason below.
    op::ROTATE_OBSERVABILITY_CREDENTIALS,
];

/// Operations that must stand alone: whoever acts on them removes the whole annotation.
const ALONE: [&str; 2] = [op::MAINTAIN, op::FORCE_RESTORE];

/// Who asks, as far as the annotation cares.
#[derive(Clone, Copy, Debug)]
pub struct Requester<'a> {
    pub user: &'a UserInfo,
    /// Operators (and the scheduler): the identities that may assign and move shoots
    /// ([`crate::review::RulesConfig::seed_assigners`]); only they may force a takeover.
    pub operators: &'a Identities,
}

fn path() -> Path {
    Path::new("metadata").child("annotations").key(ANNOTATION_OPERATION)
}

/// Pure: why one part of the annotation may not be set by `who` on `shoot`; `None` when it may.
pub fn judge_part(part: &str, shoot: &Shoot, who: Requester<'_>) -> Option<FieldError> {
    if let Some(pools) = shoot_operation::rollout_pools(part) {
        return judge_rollout(part, &pools, shoot);
    }
    let forbidden = |why: String| Some(FieldError::forbidden(path(), format!("{part}: {why}")));
    match part {
        "" => Some(FieldError::invalid(path(), part, "an empty operation (a stray ';')")),
        op::FORCE_RESTORE if !who.operators.contains(who.user) => forbidden(format!(
            "only operators take over a shoot from a seed that is gone; user {:?} may not",
            who.user.username
        )),
        op::ROTATE_OBSERVABILITY_CREDENTIALS => forbidden(
            "not supported: this system deploys no monitoring or logging stack (Plutono, Prometheus, Vali) whose \
             credentials could be rotated"
                .into(),
        ),
        op::ROTATE_KUBECONFIG_CREDENTIALS => forbidden(
            "removed from Gardener: shoots have no static kubeconfig token; request a kubeconfig with an \
             AdminKubeconfigRequest and rotate the CA (rotate-ca-start) to revoke issued ones"
                .into(),
        ),
        op::MIGRATE | op::RESTORE | op::WAIT_FOR_STATE | op::KEEPALIVE => forbidden(
            "an operation gardenlet and gardener-controller-manager set on extension objects and Bastions, not on \
             Shoots; a control plane migration is asked for by changing spec.seedName"
                .into(),
        ),
        p if ALLOWED.contains(&p) => None,
        p => Some(FieldError::unsupported(path(), p, &ALLOWED)),
    }
}

/// `rollout-workers=<pools>`: at least one pool, each named once and existing (or `*` alone),
/// not while the shoot sleeps.
fn judge_rollout(part: &str, pools: &[&str], shoot: &Shoot) -> Option<FieldError> {
    let invalid = |why: String| Some(FieldError::invalid(path(), part, why));
    if pools.iter().any(|p| p.is_empty()) {
        return invalid(format!("name at least one pool: {}=<pool>[,<pool>...] (or =*)", op::ROLLOUT_WORKERS));
    }
    if pools.contains(&"*") && pools.len() > 1 {
        return invalid("'*' means every pool and stands alone".into());
    }
    let workers = &shoot.spec.provider.workers;
    for (i, pool) in pools.iter().enumerate() {
        if pools[..i].contains(pool) {
            return invalid(format!("pool {pool} is named twice"));
        }
        if *pool != "*" && !workers.iter().any(|w| w.name == *pool) {
            return invalid(format!("pool {pool} does not exist in spec.provider.workers[]"));
        }
    }
    if workers.is_empty() {
        return invalid("the shoot has no worker pools".into());
    }
    if shoot.spec.hibernation_enabled() || shoot.status.as_ref().is_some_and(|s| s.hibernated) {
        return Some(FieldError::forbidden(
            path(),
            format!("{part}: not while the shoot is hibernated or waking up: it has no machines"),
        ));
    }
    None
}

/// Pure: parts that exclude each other.
fn conflicts(value: &str, shoot: &Shoot) -> ErrorList {
    let mut errs = ErrorList::default();
    let all: Vec<&str> = parts(value).collect();
    for alone in ALONE {
        if all.contains(&alone) && all.len() > 1 {
            errs.push(FieldError::forbidden(
                path(),
                format!("{value}: {alone} cannot be combined with other operations: it is carried out on its own"),
            ));
        }
    }
    if let Some(request) = rotation::request(value, shoot.spec.provider.ssh_access()) {
        for credential in rotation::conflicts(&request) {
            errs.push(FieldError::forbidden(
                path(),
                format!(
                    "{value}: asks for two steps of the rotation of the {credential} at once (a start and a completion); \
                     ask for one, then for the other"
                ),
            ));
        }
    }
    errs
}

/// Pure: the errors of the operation `new` asks for (none when it asks for none, or for the
/// same as `old` did: a request is judged once, when it is made).
pub fn validate(new: &Shoot, old: Option<&Shoot>, who: Requester<'_>) -> ErrorList {
    let mut errs = ErrorList::default();
    let Some(value) = shoot_operation::value(new) else { return errs };
    if old.and_then(shoot_operation::value) == Some(value) {
        return errs;
    }
    errs.0.extend(parts(value).filter_map(|p| judge_part(p, new, who)));
    errs.extend(conflicts(value, new));
    if !errs.is_empty() {
        return errs;
    }
    let Some(request) = rotation::request(value, new.spec.provider.ssh_access()) else { return errs };
    for why in rotation::allowed(&request, rotation::status(new), Lifecycle::of(new)) {
        errs.push(FieldError::forbidden(path(), format!("{value}: {why}")));
    }
    errs
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code: a panic is the failure report
    use super::*;

    fn shoot(op: Option<&str>, status: serde_json::Value) -> Shoot {
        let mut s = crate::fixtures::shoot();
        if let Some(op) = op {
            s.metadata.annotations = Some([(ANNOTATION_OPERATION.to_string(), op.to_string())].into());
        }
        s.status = serde_json::from_value(status).unwrap();
        s
    }

    fn created() -> serde_json::Value {
        serde_json::json!({"lastOperation": {"type": "Reconcile", "state": "Succeeded", "progress": 100,
                                             "description": "", "lastUpdateTime": "2026-01-01T00:00:00Z"}})
    }

    fn user() -> UserInfo {
        UserInfo::new("alice", &["system:authenticated"])
    }

    fn judged(value: &str, user: &UserInfo) -> Vec<String> {
        let ops = Identities::default_seed_assigners();
        let who = Requester { user, operators: &ops };
        validate(&shoot(Some(value), created()), Some(&shoot(None, created())), who)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn a_rotation_request_is_judged_once_against_the_rotation_status() {
        let (u, ops) = (user(), Identities::default_seed_assigners());
        let who = Requester { user: &u, operators: &ops };
        let old = shoot(None, created());
        assert!(validate(&shoot(Some("rotate-ca-start"), created()), Some(&old), who).is_empty());
        let errs = validate(&shoot(Some("rotate-ca-complete"), created()), Some(&old), who);
        assert_eq!(
            errs.iter().map(ToString::to_string).collect::<Vec<_>>(),
            [
                "metadata.annotations[gardener.cloud/operation]: Forbidden: rotate-ca-complete: the rotation of the certificate authorities can only be completed in phase Prepared, not before it started"
            ]
        );
        // The same request, already accepted, is not judged again on later updates.
        let pending = shoot(Some("rotate-ca-complete"), created());
        assert!(validate(&pending, Some(&pending), who).is_empty());
        assert!(validate(&shoot(Some("reconcile"), serde_json::Value::Null), Some(&old), who).is_empty());
    }

    #[test]
    fn no_rotation_before_the_shoot_exists() {
        let (u, ops) = (user(), Identities::default_seed_assigners());
        let who = Requester { user: &u, operators: &ops };
        let errs = validate(&shoot(Some("rotate-credentials-start"), serde_json::Value::Null), None, who);
        assert!(errs.iter().any(|e| e.to_string().contains("before the shoot was created")), "{errs:?}");
    }

    #[test]
    fn unknown_values_are_refused_with_the_allowed_ones() {
        let errs = judged("reconcile-now", &user());
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(
            errs[0].starts_with(
                "metadata.annotations[gardener.cloud/operation]: Unsupported value: \"reconcile-now\": supported values: \"reconcile\", \"retry\", \"maintain\""
            ),
            "{}",
            errs[0]
        );
        assert!(errs[0].contains("\"rollout-workers=<pool>[,<pool>...]\""), "{}", errs[0]);
        for ok in
            ["reconcile", "retry", "maintain", "rotate-ca-start", "rotate-etcd-encryption-key", "rotate-ssh-keypair"]
        {
            assert_eq!(judged(ok, &user()), Vec::<String>::new(), "{ok}");
        }
    }

    #[test]
    fn values_this_system_does_not_serve_are_refused_with_the_reason() {
        let observability = judged("rotate-observability-credentials", &user());
        assert!(
            observability[0].contains("Forbidden: rotate-observability-credentials: not supported"),
            "{observability:?}"
        );
        let kubeconfig = judged("rotate-kubeconfig-credentials", &user());
        assert!(kubeconfig[0].contains("removed from Gardener"), "{kubeconfig:?}");
        for system in ["migrate", "restore", "wait-for-state", "keepalive"] {
            let errs = judged(system, &user());
            assert!(errs[0].contains("set on extension objects and Bastions, not on Shoots"), "{errs:?}");
        }
    }

    #[test]
    fn only_operators_force_a_takeover() {
        let refused = judged("force-restore", &user());
        assert_eq!(
            refused,
            [
                "metadata.annotations[gardener.cloud/operation]: Forbidden: force-restore: only operators take over a shoot from a seed that is gone; user \"alice\" may not"
            ]
        );
        let operator = UserInfo::new("bob", &["system:masters"]);
        assert!(judged("force-restore", &operator).is_empty());
    }

    #[test]
    fn every_part_of_a_list_is_judged_and_conflicts_are_refused() {
        assert!(judged("rotate-ca-start;rotate-serviceaccount-key-start", &user()).is_empty());
        assert!(judged("reconcile; rotate-ssh-keypair", &user()).is_empty());
        let bad = judged("rotate-ca-start;bogus", &user());
        assert_eq!(bad.len(), 1, "{bad:?}");
        assert!(bad[0].contains("Unsupported value: \"bogus\""), "{bad:?}");
        let stray = judged("reconcile;", &user());
        assert!(stray[0].contains("an empty operation"), "{stray:?}");
        let clash = judged("rotate-ca-start;rotate-ca-complete", &user());
        assert_eq!(
            clash,
            [
                "metadata.annotations[gardener.cloud/operation]: Forbidden: rotate-ca-start;rotate-ca-complete: asks for two steps of the rotation of the certificate authorities at once (a start and a completion); ask for one, then for the other"
            ]
        );
        let single = judged("rotate-etcd-encryption-key;rotate-credentials-start", &user());
        assert!(single[0].contains("etcd encryption key at once"), "{single:?}");
        let alone = judged("maintain;reconcile", &user());
        assert!(alone[0].contains("maintain cannot be combined"), "{alone:?}");
        // The rotation check sees every part: the CA completion is not possible yet.
        let later = judged("rotate-serviceaccount-key-start;rotate-ca-complete", &user());
        assert_eq!(later.len(), 1, "{later:?}");
        assert!(later[0].contains("can only be completed in phase Prepared"), "{later:?}");
    }

    #[test]
    fn a_rollout_names_existing_pools() {
        assert!(judged("rollout-workers=pool", &user()).is_empty());
        assert!(judged("rollout-workers=*", &user()).is_empty());
        assert!(judged("reconcile;rollout-workers=pool", &user()).is_empty());
        let missing = judged("rollout-workers=pool,other", &user());
        assert_eq!(
            missing,
            [
                "metadata.annotations[gardener.cloud/operation]: Invalid value: \"rollout-workers=pool,other\": pool other does not exist in spec.provider.workers[]"
            ]
        );
        assert!(judged("rollout-workers=", &user())[0].contains("name at least one pool"));
        assert!(judged("rollout-workers=pool,pool", &user())[0].contains("named twice"));
        let mut sleeping = shoot(Some("rollout-workers=pool"), created());
        sleeping.spec.hibernation = Some(api::core::shoot::Hibernation { enabled: Some(true), ..Default::default() });
        let (u, ops) = (user(), Identities::default_seed_assigners());
        let errs = validate(&sleeping, None, Requester { user: &u, operators: &ops });
        assert!(errs.iter().any(|e| e.to_string().contains("hibernated")), "{errs:?}");
    }
}
