//! The task lists of the shoot flows as Markdown, generated from the flows themselves
//! (`docs/gardenlet-flows.md`; a test fails when the file drifts).

use crate::config::GardenletConfig;
use crate::flow::Flow;
use crate::shoot::operation::context::OperationContext;
use crate::shoot::operation::values::ShootValues;
use std::sync::Arc;

/// A Markdown table of a flow's tasks and dependencies.
pub fn table(flow: &Flow) -> String {
    let mut out = format!("## {}\n\n| task | depends on | skipped when |\n|---|---|---|\n", flow.name());
    for (task, deps, _) in flow.describe() {
        let skip = match task.as_str() {
            "Deploying shoot system resources" => "hibernated",
            "Deploying OperatingSystemConfigs" | "Deploying Worker" => "no worker pools",
            "Waiting until kube-controller-manager's controllers run" => "no worker pools, or hibernated",
            "Deploying Network" => "no `spec.networking.type`",
            "Deploying BackupEntry" | "Migrating BackupEntry" => "the seed has no backup",
            "Completing the etcd restore" => "no unrestored final etcd snapshot, or hibernated",
            "Rewriting Secrets with the new etcd encryption key" => {
                "no etcd encryption key rotation in phase one, or hibernated"
            }
            "Issuing service-account tokens of the new key" => {
                "no service-account key rotation in phase one, or hibernated"
            }
            "Deleting service-account tokens of the old key" => {
                "no service-account key rotation in phase two, or hibernated"
            }
            _ => "",
        };
        out.push_str(&format!("| {task} | {} | {skip} |\n", deps.join(", ")));
    }
    out
}

/// The whole generated document.
pub fn document() -> Result<String, Box<dyn std::error::Error>> {
    let config: GardenletConfig = serde_yaml::from_str(
        "seed:\n  name: docs\n  spec:\n    provider: {type: local, region: local}\n    networks: {pods: 10.1.0.0/16, services: 10.2.0.0/16}\n",
    )?;
    let shoot: api::core::Shoot = serde_yaml::from_str(
        "apiVersion: core.gardener.cloud/v1beta1\nkind: Shoot\nmetadata: {name: docs, namespace: garden-docs}\nspec:\n  region: local\n  provider: {type: local}\n  kubernetes: {version: 1.20.2}\n  networking: {services: 10.112.0.0/13}\n",
    )?;
    // A client that is never used: building a flow does no I/O.
    let client = kube::Client::try_from(kube::Config::new("http://127.0.0.1:9".parse()?))?;
    let values = ShootValues::new(&shoot, None)?;
    let deployer = extension_sdk::Deployer::new(client.clone());
    let ctx = Arc::new(OperationContext::new(
        client.clone(),
        client,
        Arc::new(config),
        deployer,
        shoot,
        None,
        values,
        false,
        std::time::Duration::from_secs(1),
    ));
    Ok(format!(
        "# gardenlet flows\n\nGenerated from the code by `UPDATE_FLOW_DOCS=1 cargo test -p gardenlet --test flow_docs`; do not edit.\nTasks start as soon as everything they depend on is done; independent tasks run in parallel.\n\n{}\n{}\n{}\n{}\n{}",
        table(&crate::shoot::flows::reconcile::flow(&ctx)?),
        table(&crate::shoot::flows::hibernate::flow(&ctx)?),
        table(&crate::shoot::flows::migrate::flow(&ctx)?),
        table(&crate::shoot::flows::delete::flow(&ctx)?),
        waits()
    ))
}

/// How the waits of the flows end, with the bounds from the code.
fn waits() -> String {
    use crate::shoot::operation::apply::served::UNSERVED_AFTER;
    let after = UNSERVED_AFTER.as_secs();
    format!(
        "## Waits\n\n\
         A wait for an object watches it (no polling) and is bounded by gardenlet's wait timeout \
         (ten minutes). A wait for an extension object ends earlier when no controller can serve it: if the \
         object was not picked up (no status, or the operation annotation still set) after {after} s, \
         gardenlet reads the ControllerRegistrations and this seed's ControllerInstallations once. \
         Without an `Installed` ControllerInstallation of a registration that is primary for the \
         object's kind and type, the task fails with `<Kind> <namespace>/<name> was not picked up \
         within {after}s: no controller installed for it on seed <seed>: ...`: with \
         `ERR_CONFIGURATION_PROBLEM` when no ControllerRegistration serves the kind and type at all \
         (the shoot is `Failed`, no automatic retry), with `ERR_RETRYABLE_CONFIGURATION_PROBLEM` when \
         one does but its installation on this seed is missing or not installed (retried with \
         backoff). An object that is picked up, or served, is left to the wait and its timeout.\n\n\
         A deletion issued while a reconcile runs cancels that reconcile as soon as gardenlet's watch \
         sees the deletion timestamp: the reconcile's flow is dropped where it is (its running tasks \
         are aborted, as a restart of gardenlet would), nothing more is written for it, and the \
         deletion flow runs next. The first deletion after a failed reconcile does not wait for that \
         reconcile's retry backoff. In the same way, confirming a force-deletion \
         (`confirmation.gardener.cloud/force-deletion: \"true\"`) while the normal deletion runs \
         cancels that deletion (which may be waiting for an object that never goes) and the \
         force-deletion flow runs next; a force-deletion itself is never cancelled \
         (`crates/gardenlet/src/shoot/controller/cancel.rs`: `gives_way`; `tests/force_deletion.rs` \
         holds the Infrastructure with a foreign finalizer while gardenlet would wait an hour).\n"
    )
}
