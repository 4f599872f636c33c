//! The controllers as tasks of the SDK's [`Runner`]: the runner serves `/healthz`, `/readyz`
//! (ready once every controller's caches synced and, with leader election, while leading) and
//! `/metrics`, holds the leader Lease, and stops the controllers on shutdown. The binary and the
//! tests wire it the same way.

use crate::clock::Clock;
use crate::config::Config;
use crate::metrics::Metrics;
use crate::runtime::Common;
use crate::{adminkubeconfig, bastion, csr, hibernation, installation, maintenance, managedseedset};
use crate::{namespacedcloudprofile, project, protection, seed_lifecycle, shootseedlabels};
use ::runtime::Runner;
use ::runtime::runner::Stop;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

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

    let c = &config.controllers;
    add(runner, common(project::reconcile::NAME), c.project.clone(), project::run);
    add(runner, common(seed_lifecycle::reconcile::NAME), c.seed_lifecycle.clone(), seed_lifecycle::run);
    add(runner, common(bastion::reconcile::NAME), c.bastion.clone(), bastion::run);
    add(runner, common(adminkubeconfig::reconcile::NAME), c.admin_kubeconfig.clone(), adminkubeconfig::run);
    add(runner, common(hibernation::reconcile::NAME), c.shoot_hibernation.clone(), hibernation::run);
    add(runner, common(maintenance::reconcile::NAME), c.shoot_maintenance.clone(), maintenance::run);
    add(runner, common(installation::reconcile::NAME), c.controller_installation.concurrent_syncs, installation::run);
    add(
        runner,
        common(namespacedcloudprofile::reconcile::NAME),
        c.namespaced_cloud_profile.concurrent_syncs,
        namespacedcloudprofile::run,
    );
    add(runner, common(shootseedlabels::NAME), c.shoot_seed_labels.concurrent_syncs, shootseedlabels::run);
    add(runner, common(managedseedset::reconcile::NAME), c.managed_seed_set.concurrent_syncs, managedseedset::run);
    add(runner, common(csr::reconcile::NAME), c.certificate_signing_request.clone(), csr::run);
    let n = c.protection.concurrent_syncs;
    runner.add_task_with_readiness(move |stop, ready| protection::run(common, n, stop, ready));
    Ok(metrics)
}

/// Adds the controller that `run` runs with its shared parts and `config` to `runner`.
fn add<C, Fut>(
    runner: &mut Runner,
    common: Common,
    config: C,
    run: impl FnOnce(Common, C, Stop, Arc<AtomicBool>) -> Fut + Send + 'static,
) where
    C: Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    runner.add_task_with_readiness(move |stop, ready| run(common, config, stop, ready));
}
