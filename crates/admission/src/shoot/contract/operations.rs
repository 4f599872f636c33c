//! The contract of how the shoot is operated over time: hibernation, maintenance, monitoring.

use super::{Field, honoured, only_as, refused};

/// Hibernation: by hand or by schedule.
pub const HIBERNATION: &[Field] = &[
    honoured(
        "spec.hibernation.enabled",
        "scales the control plane and the workers to zero and back",
        "a_shoot_hibernates_keeps_its_data_and_wakes_up",
    ),
    honoured(
        "spec.hibernation.schedules",
        "cron schedules (with a time zone) set `enabled` at start and end",
        "schedules_hibernate_and_wake_up_and_a_missed_tick_is_applied_after_downtime",
    ),
];

/// Maintenance: automatic updates and their window.
pub const MAINTENANCE: &[Field] = &[
    honoured(
        "spec.maintenance.autoUpdate",
        "in the window, maintenance updates the Kubernetes patch version and the machine image version",
        "maintenance_forces_expired_versions_and_auto_updates_patches_in_the_window_or_when_asked",
    ),
    honoured(
        "spec.maintenance.timeWindow",
        "maintenance runs once per window",
        "maintenance_runs_once_per_window_or_when_asked",
    ),
    only_as(
        "spec.maintenance.confineSpecUpdateRollout",
        &["false"],
        "spec changes roll out at once",
        "the_contract_accepts_what_the_system_does_anyway",
        "confining spec roll-outs to the maintenance window is not supported yet",
    ),
];

/// Monitoring.
pub const MONITORING: &[Field] = &[refused("spec.monitoring", "this system runs no alerting for shoots")];
