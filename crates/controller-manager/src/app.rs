//! The controllers as tasks of the SDK's [`Runner`]: the runner serves `/healthz`, `/readyz`
//! (ready once every controller's caches synced and, with leader election, while leading) and
//! `/metrics`, holds the leader Lease, and stops the controllers on shutdown. The binary and the
//! tests wire it the same way.

use crate::clock::Clock;
use crate::config::Config;
use crate::metrics::Metrics;
use crate::runtime::Common;
use ::runtime::Runner;
use std::sync::Arc;

/// Adds every controller to `runner`, their metrics to its registry; returns the metrics (for
/// tests).
pub fn add_to(
    runner: &mut Runner,
    client: kube::Client,
    config: &Config,
    clock: Arc<dyn Clock>,
) -> Result<Metrics, prometheus::Error> {
    let metrics = crate::metrics::new(runner.registry())?;
    let common = {
        let (client, clock, metrics) = (client.clone(), clock.clone(), metrics.clone());
        move |name| Common::new(client.clone(), clock.clone(), metrics.clone(), name)
    };

    let (c, project) = (common(crate::project::reconcile::NAME), config.controllers.project.clone());
    runner.add_task_with_readiness(move |stop, ready| crate::project::run(c, project, stop, ready));
    let (c, seeds) = (common(crate::seed_lifecycle::reconcile::NAME), config.controllers.seed_lifecycle.clone());
    runner.add_task_with_readiness(move |stop, ready| crate::seed_lifecycle::run(c, seeds, stop, ready));
    let (c, bastions) = (common(crate::bastion::reconcile::NAME), config.controllers.bastion.clone());
    runner.add_task_with_readiness(move |stop, ready| crate::bastion::run(c, bastions, stop, ready));
    let (c, requests) = (common(crate::adminkubeconfig::reconcile::NAME), config.controllers.admin_kubeconfig.clone());
    runner.add_task_with_readiness(move |stop, ready| crate::adminkubeconfig::run(c, requests, stop, ready));
    let (c, hibernation) = (common(crate::hibernation::reconcile::NAME), config.controllers.shoot_hibernation.clone());
    runner.add_task_with_readiness(move |stop, ready| crate::hibernation::run(c, hibernation, stop, ready));
    let (c, maintenance) = (common(crate::maintenance::reconcile::NAME), config.controllers.shoot_maintenance.clone());
    runner.add_task_with_readiness(move |stop, ready| crate::maintenance::run(c, maintenance, stop, ready));
    let (c, n) =
        (common(crate::installation::reconcile::NAME), config.controllers.controller_installation.concurrent_syncs);
    runner.add_task_with_readiness(move |stop, ready| crate::installation::run(c, n, stop, ready));
    let (c, n) = (
        common(crate::namespacedcloudprofile::reconcile::NAME),
        config.controllers.namespaced_cloud_profile.concurrent_syncs,
    );
    runner.add_task_with_readiness(move |stop, ready| crate::namespacedcloudprofile::run(c, n, stop, ready));
    let (c, n) = (common(crate::shootseedlabels::NAME), config.controllers.shoot_seed_labels.concurrent_syncs);
    runner.add_task_with_readiness(move |stop, ready| crate::shootseedlabels::run(c, n, stop, ready));
    let (c, n) = (common(crate::managedseedset::reconcile::NAME), config.controllers.managed_seed_set.concurrent_syncs);
    runner.add_task_with_readiness(move |stop, ready| crate::managedseedset::run(c, n, stop, ready));
    let (c, n) = (common.clone(), config.controllers.protection.concurrent_syncs);
    runner.add_task_with_readiness(move |stop, ready| crate::protection::run(c, n, stop, ready));
    Ok(metrics)
}
