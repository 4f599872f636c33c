//! The pure decision of the generic controller: given an object, what is known of its Cluster
//! and the controller's configuration, do nothing ([`Action::Skip`] / [`Action::Wait`]), fetch
//! the Cluster first ([`Action::LoadCluster`]), or act with a [`Plan`].
//!
//! Deciding from the object's state rather than from the watch event kind makes the "when to
//! act" predicates hold across restarts: a new instance sees every object once and acts only
//! on those that ask for it.

use api::common::{LastOperationState, LastOperationType};
use api::extensions::{DefaultSpec, DefaultStatus, ExtensionClass};
use api::helpers::constants::{ANNOTATION_OPERATION, operation};
use api::helpers::extension_operation::{is_migrated, operation_type};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// Annotation that turns a deletion into a forced one (`"true"`).
pub const ANNOTATION_FORCE_DELETION: &str = "confirmation.gardener.cloud/force-deletion";

/// When the controller acts on an object that has succeeded before.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// The contract's default: act when asked by the `gardener.cloud/operation` annotation (or
    /// on deletion, or when the last operation did not succeed).
    #[default]
    Annotation,
    /// Ignore the `reconcile` annotation as a trigger; act when `generation` moved past
    /// `observedGeneration` or the Cluster's shoot/seed/cloud profile spec changed.
    Generation,
}

/// What the controller is configured to handle.
#[derive(Clone, Debug)]
pub struct Filter<'a> {
    pub types: &'a [String],
    pub class: ExtensionClass,
    pub mode: Mode,
    /// Whether the kind takes part in migration.
    pub migratable: bool,
    pub finalizer: &'a str,
}

/// What is known about the object's Cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClusterView {
    /// Not read yet; the decision needs it.
    NotLoaded,
    /// The kind has no Cluster (BackupBucket), or none was found where one is optional.
    Absent,
    /// Read. `changed`: its fingerprint differs from the one this controller last acted on (or
    /// this controller has not acted on the object since it started).
    Loaded { failed: bool, changed: bool },
}

/// Why nothing is done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SkipReason {
    OtherType,
    OtherClass,
    /// Being deleted but our finalizer is gone: nothing left to clean up.
    NotOurs,
    /// Migrated away from this seed; only `migrate` or `restore` bring it back.
    Migrated,
    /// The shoot has failed finally.
    ShootFailed,
    /// Succeeded and nothing asks for a new operation.
    UpToDate,
}

impl SkipReason {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OtherType => "other type",
            Self::OtherClass => "other class",
            Self::NotOurs => "being deleted without our finalizer",
            Self::Migrated => "migrated",
            Self::ShootFailed => "shoot failed",
            Self::UpToDate => "up to date",
        }
    }
}

/// What to do with an object the controller acts on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub operation: LastOperationType,
    /// Remove a `reconcile` annotation before calling the actuator.
    pub remove_reconcile_annotation: bool,
    /// Remove this operation annotation (`migrate`/`restore`) after success.
    pub remove_annotation_after: Option<&'static str>,
    /// A deletion with force-deletion confirmed.
    pub force: bool,
    /// A new request (new annotation, new generation, new operation, changed Cluster) rather
    /// than a retry of the same failed or requeued operation: retry pacing does not apply.
    pub fresh: bool,
}

/// The decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    Skip(SkipReason),
    /// `wait-for-state`: gardenlet is about to write `status.state`.
    Wait,
    /// Read the Cluster and decide again.
    LoadCluster,
    Act(Plan),
}

/// Decides what to do with an object.
pub fn decide(
    meta: &ObjectMeta,
    spec: &DefaultSpec,
    status: Option<&DefaultStatus>,
    cluster: ClusterView,
    filter: &Filter<'_>,
) -> Action {
    if !filter.types.contains(&spec.type_) {
        return Action::Skip(SkipReason::OtherType);
    }
    if spec.class.unwrap_or_default() != filter.class {
        return Action::Skip(SkipReason::OtherClass);
    }
    let annotations = meta.annotations.as_ref();
    let raw_annotation = annotations.and_then(|a| a.get(ANNOTATION_OPERATION)).map(String::as_str);
    // Kinds outside migration treat `migrate`/`restore` like `reconcile`.
    let annotation = match raw_annotation {
        Some(operation::MIGRATE | operation::RESTORE) if !filter.migratable => Some(operation::RECONCILE),
        other => other,
    };
    let deleting = meta.deletion_timestamp.is_some();
    let has_finalizer = meta.finalizers.as_ref().is_some_and(|f| f.iter().any(|f| f == filter.finalizer));
    let last = status.and_then(|s| s.last_operation.as_ref());

    if annotation == Some(operation::WAIT_FOR_STATE) && !deleting {
        return Action::Wait;
    }
    let migrate_or_restore = matches!(annotation, Some(operation::MIGRATE | operation::RESTORE));
    if deleting && !has_finalizer {
        return Action::Skip(SkipReason::NotOurs);
    }
    if is_migrated(last) && !migrate_or_restore {
        return Action::Skip(SkipReason::Migrated);
    }

    let cluster_changed = match cluster {
        ClusterView::NotLoaded => return Action::LoadCluster,
        ClusterView::Absent => false,
        // A failed shoot is left alone, except that its deletion goes through: the shoot's
        // deletion must be able to remove what its failed creation left.
        ClusterView::Loaded { failed: true, .. } if !deleting => return Action::Skip(SkipReason::ShootFailed),
        ClusterView::Loaded { changed, .. } => changed,
    };

    let generation_moved = status.and_then(|s| s.observed_generation) != meta.generation;
    let unfinished = last.is_none_or(|l| l.state != LastOperationState::Succeeded);
    let reconcile_requested = annotation == Some(operation::RECONCILE) && filter.mode == Mode::Annotation;
    let generation_trigger = filter.mode == Mode::Generation && (generation_moved || cluster_changed);
    let act = deleting || migrate_or_restore || unfinished || reconcile_requested || generation_trigger;
    if !act {
        return Action::Skip(SkipReason::UpToDate);
    }

    let op = operation_type(annotation, deleting, last);
    let remove_annotation_after = match (op, annotation) {
        (LastOperationType::Migrate, Some(operation::MIGRATE)) => Some(operation::MIGRATE),
        (LastOperationType::Restore, Some(operation::RESTORE)) => Some(operation::RESTORE),
        _ => None,
    };
    let remove_reconcile_annotation = annotation == Some(operation::RECONCILE)
        && !matches!(op, LastOperationType::Delete | LastOperationType::Migrate);
    let force = deleting && annotations.and_then(|a| a.get(ANNOTATION_FORCE_DELETION)).is_some_and(|v| v == "true");
    let fresh = reconcile_requested
        || migrate_or_restore
        || generation_moved
        || generation_trigger
        || last.is_none_or(|l| l.type_ != op);
    Action::Act(Plan { operation: op, remove_reconcile_annotation, remove_annotation_after, force, fresh })
}

#[cfg(test)]
mod tests {
    use super::*;
    use LastOperationState as S;
    use LastOperationType as T;
    use api::common::LastOperation;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::Timestamp;

    const FIN: &str = "extensions.gardener.cloud/infrastructure";

    fn types() -> Vec<String> {
        vec!["example".to_string()]
    }

    fn filter(types: &[String], mode: Mode) -> Filter<'_> {
        Filter { types, class: ExtensionClass::Shoot, mode, migratable: true, finalizer: FIN }
    }

    fn meta(annotation: Option<&str>, deleting: bool, finalizer: bool, generation: i64) -> ObjectMeta {
        ObjectMeta {
            generation: Some(generation),
            annotations: annotation.map(|a| [(ANNOTATION_OPERATION.to_string(), a.to_string())].into()),
            deletion_timestamp: deleting.then_some(Time(Timestamp::UNIX_EPOCH)),
            finalizers: finalizer.then(|| vec![FIN.to_string()]),
            ..Default::default()
        }
    }

    fn status(op: Option<(T, S)>, observed: i64) -> DefaultStatus {
        DefaultStatus {
            observed_generation: Some(observed),
            last_operation: op.map(|(type_, state)| LastOperation {
                description: String::new(),
                last_update_time: Time(Timestamp::UNIX_EPOCH),
                progress: 100,
                state,
                type_,
            }),
            ..Default::default()
        }
    }

    fn spec(t: &str) -> DefaultSpec {
        DefaultSpec { type_: t.into(), ..Default::default() }
    }

    const LOADED: ClusterView = ClusterView::Loaded { failed: false, changed: false };

    fn op_of(a: Action) -> Option<T> {
        match a {
            Action::Act(p) => Some(p.operation),
            _ => None,
        }
    }

    #[test]
    fn filters_by_type_and_class() {
        let t = types();
        let f = filter(&t, Mode::Annotation);
        assert_eq!(
            decide(&meta(None, false, false, 1), &spec("other"), None, LOADED, &f),
            Action::Skip(SkipReason::OtherType)
        );
        let mut s = spec("example");
        s.class = Some(ExtensionClass::Seed);
        assert_eq!(decide(&meta(None, false, false, 1), &s, None, LOADED, &f), Action::Skip(SkipReason::OtherClass));
        s.class = Some(ExtensionClass::Shoot);
        assert!(matches!(decide(&meta(None, false, false, 1), &s, None, LOADED, &f), Action::Act(_)));
    }

    #[test]
    fn operations_follow_the_contract() {
        let t = types();
        let f = filter(&t, Mode::Annotation);
        let ok = Some((T::Reconcile, S::Succeeded));
        let cases: Vec<(ObjectMeta, Option<DefaultStatus>, Option<T>)> = vec![
            (meta(None, false, false, 1), None, Some(T::Create)),
            (meta(Some("reconcile"), false, true, 1), Some(status(ok, 1)), Some(T::Reconcile)),
            (meta(None, false, true, 1), Some(status(ok, 1)), None),
            (meta(None, false, true, 2), Some(status(ok, 1)), None),
            (meta(None, true, true, 1), Some(status(ok, 1)), Some(T::Delete)),
            (meta(None, true, false, 1), Some(status(ok, 1)), None),
            (meta(Some("migrate"), false, true, 1), Some(status(ok, 1)), Some(T::Migrate)),
            (meta(Some("migrate"), true, true, 1), Some(status(ok, 1)), Some(T::Migrate)),
            (meta(Some("restore"), false, false, 1), Some(status(None, 0)), Some(T::Restore)),
            (meta(None, false, true, 1), Some(status(Some((T::Create, S::Error)), 1)), Some(T::Create)),
            (meta(None, false, true, 1), Some(status(Some((T::Reconcile, S::Processing)), 1)), Some(T::Reconcile)),
            (meta(None, false, false, 1), Some(status(Some((T::Migrate, S::Succeeded)), 1)), None),
            (meta(Some("reconcile"), false, false, 1), Some(status(Some((T::Migrate, S::Succeeded)), 1)), None),
            (
                meta(Some("restore"), false, false, 1),
                Some(status(Some((T::Migrate, S::Succeeded)), 1)),
                Some(T::Restore),
            ),
            (meta(Some("wait-for-state"), false, false, 1), None, None),
        ];
        for (m, s, want) in cases {
            let got = decide(&m, &spec("example"), s.as_ref(), LOADED, &f);
            assert_eq!(
                op_of(got.clone()),
                want,
                "{:?} {:?} -> {got:?}",
                m.annotations,
                s.and_then(|s| s.last_operation)
            );
        }
    }

    #[test]
    fn wait_for_state_and_migrated_and_failed_are_left_alone() {
        let t = types();
        let f = filter(&t, Mode::Annotation);
        assert_eq!(
            decide(&meta(Some("wait-for-state"), false, false, 1), &spec("example"), None, LOADED, &f),
            Action::Wait
        );
        let migrated = status(Some((T::Migrate, S::Succeeded)), 1);
        assert_eq!(
            decide(&meta(None, false, false, 1), &spec("example"), Some(&migrated), LOADED, &f),
            Action::Skip(SkipReason::Migrated)
        );
        let failed = ClusterView::Loaded { failed: true, changed: false };
        assert_eq!(
            decide(&meta(None, false, false, 1), &spec("example"), None, failed, &f),
            Action::Skip(SkipReason::ShootFailed)
        );
        // The deletion of a failed shoot's object goes through.
        assert!(matches!(
            decide(&meta(None, true, true, 1), &spec("example"), None, failed, &f),
            Action::Act(Plan { operation: T::Delete, .. })
        ));
    }

    #[test]
    fn cluster_is_loaded_only_when_it_matters() {
        let t = types();
        let f = filter(&t, Mode::Annotation);
        assert_eq!(
            decide(&meta(None, false, false, 1), &spec("other"), None, ClusterView::NotLoaded, &f),
            Action::Skip(SkipReason::OtherType)
        );
        assert_eq!(
            decide(&meta(None, false, false, 1), &spec("example"), None, ClusterView::NotLoaded, &f),
            Action::LoadCluster
        );
        assert!(matches!(
            decide(&meta(None, false, false, 1), &spec("example"), None, ClusterView::Absent, &f),
            Action::Act(_)
        ));
    }

    #[test]
    fn annotation_protocol_in_the_plan() {
        let t = types();
        let f = filter(&t, Mode::Annotation);
        let ok = status(Some((T::Reconcile, S::Succeeded)), 1);
        let Action::Act(p) = decide(&meta(Some("reconcile"), false, true, 1), &spec("example"), Some(&ok), LOADED, &f)
        else {
            panic!("should act")
        };
        assert!(p.remove_reconcile_annotation && p.fresh && p.remove_annotation_after.is_none());
        let Action::Act(p) = decide(&meta(Some("migrate"), false, true, 1), &spec("example"), Some(&ok), LOADED, &f)
        else {
            panic!("should act")
        };
        assert!(!p.remove_reconcile_annotation);
        assert_eq!(p.remove_annotation_after, Some("migrate"));
        let Action::Act(p) = decide(&meta(Some("restore"), false, true, 1), &spec("example"), Some(&ok), LOADED, &f)
        else {
            panic!("should act")
        };
        assert_eq!(p.remove_annotation_after, Some("restore"));
    }

    #[test]
    fn retries_of_the_same_operation_are_not_fresh() {
        let t = types();
        let f = filter(&t, Mode::Annotation);
        let failed = status(Some((T::Reconcile, S::Error)), 1);
        let Action::Act(p) = decide(&meta(None, false, true, 1), &spec("example"), Some(&failed), LOADED, &f) else {
            panic!("should act")
        };
        assert!(!p.fresh);
        let Action::Act(p) = decide(&meta(None, true, true, 1), &spec("example"), Some(&failed), LOADED, &f) else {
            panic!("should act")
        };
        assert!(p.fresh, "deletion is a new operation");
        assert_eq!(p.operation, T::Delete);
    }

    #[test]
    fn force_deletion_needs_the_confirmation() {
        let t = types();
        let f = filter(&t, Mode::Annotation);
        let mut m = meta(None, true, true, 1);
        m.annotations = Some([(ANNOTATION_FORCE_DELETION.to_string(), "true".to_string())].into());
        let Action::Act(p) = decide(&m, &spec("example"), None, LOADED, &f) else { panic!("should act") };
        assert!(p.force);
    }

    #[test]
    fn generation_mode_ignores_the_annotation_and_follows_generation_and_cluster() {
        let t = types();
        let f = filter(&t, Mode::Generation);
        let ok = status(Some((T::Reconcile, S::Succeeded)), 1);
        assert_eq!(
            decide(&meta(Some("reconcile"), false, true, 1), &spec("example"), Some(&ok), LOADED, &f),
            Action::Skip(SkipReason::UpToDate)
        );
        assert_eq!(
            op_of(decide(&meta(None, false, true, 2), &spec("example"), Some(&ok), LOADED, &f)),
            Some(T::Reconcile)
        );
        let changed = ClusterView::Loaded { failed: false, changed: true };
        assert_eq!(
            op_of(decide(&meta(None, false, true, 1), &spec("example"), Some(&ok), changed, &f)),
            Some(T::Reconcile)
        );
        // Migrate and restore still work in this mode.
        assert_eq!(
            op_of(decide(&meta(Some("migrate"), false, true, 1), &spec("example"), Some(&ok), LOADED, &f)),
            Some(T::Migrate)
        );
    }

    #[test]
    fn kinds_without_migration_treat_migrate_as_reconcile() {
        let t = types();
        let mut f = filter(&t, Mode::Annotation);
        f.migratable = false;
        let ok = status(Some((T::Reconcile, S::Succeeded)), 1);
        let Action::Act(p) = decide(&meta(Some("migrate"), false, true, 1), &spec("example"), Some(&ok), LOADED, &f)
        else {
            panic!("should act")
        };
        assert_eq!(p.operation, T::Reconcile);
        assert!(p.remove_reconcile_annotation);
    }
}
