//! `gardener.cloud/operation: rollout-workers=<pool>[,<pool>...]` (or `=*`): the named pools'
//! machines are replaced (pure). A requested pool gets a stamp, the time of the request, that
//! is put among the pool's annotations in the Worker ([`POOL_ROLLOUT`]); the pool's annotations
//! are part of its machine class (provider-local's `class_hash`), so a new stamp replaces the
//! machines one by one as any class change does, and a kept stamp changes nothing. Each
//! reconcile carries the stamps the Worker has forward.
//!
//! Until the reconcile that writes the Worker succeeded, the new stamps wait in the Shoot's
//! [`PENDING`] annotation (written with the consumption of the operation annotation), so a
//! failed or restarted reconcile rolls the pools once, with the same stamp, and a request is
//! never lost.

use api::core::Shoot;
use api::extensions::Worker;
use api::helpers::shoot_operation;
use std::collections::BTreeMap;

/// Annotation on a Worker pool (and so on its machine class and Nodes): the time of the
/// pool's last requested rollout.
pub const POOL_ROLLOUT: &str = "worker.gardener.cloud/rollout";
/// Annotation on the Shoot: `pool=stamp,...` of rollouts requested and not yet written to the
/// Worker by a successful reconcile.
pub const PENDING: &str = "worker.gardener.cloud/pending-rollouts";

/// Pool name to stamp.
pub type Stamps = BTreeMap<String, String>;

fn pool_names(shoot: &Shoot) -> Vec<&str> {
    shoot.spec.provider.workers.iter().map(|w| w.name.as_str()).collect()
}

/// The stamps waiting in the Shoot's [`PENDING`] annotation.
pub fn pending(shoot: &Shoot) -> Stamps {
    let value = shoot.metadata.annotations.as_ref().and_then(|a| a.get(PENDING));
    value
        .into_iter()
        .flat_map(|v| v.split(','))
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .filter(|(k, v)| !k.is_empty() && !v.is_empty())
        .collect()
}

/// [`PENDING`]'s value for `stamps`.
pub fn encode(stamps: &Stamps) -> String {
    stamps.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")
}

/// The pending stamps after this request: those waiting, and `now` for every pool a
/// `requested` operation annotation names (a pool named again gets the new time).
pub fn requested(shoot: &Shoot, requested: bool, now: &str) -> Stamps {
    let mut stamps = pending(shoot);
    if requested {
        let all = pool_names(shoot);
        for pool in shoot_operation::rollout_requested(shoot_operation::value(shoot), &all) {
            stamps.insert(pool.to_string(), now.to_string());
        }
    }
    stamps
}

/// The stamps the deployed Worker's pools carry.
pub fn deployed(worker: Option<&Worker>) -> Stamps {
    worker
        .into_iter()
        .flat_map(|w| w.spec.pools.iter())
        .filter_map(|p| Some((p.name.clone(), p.annotations.get(POOL_ROLLOUT)?.clone())))
        .collect()
}

/// The shoot as the operation builds its Worker from: each existing pool with its stamp
/// (`pending` over `deployed`) among its annotations; `None` when no pool has one.
pub fn stamped(shoot: &Shoot, deployed: &Stamps, pending: &Stamps) -> Option<Shoot> {
    let mut stamps = deployed.clone();
    stamps.extend(pending.iter().map(|(k, v)| (k.clone(), v.clone())));
    let mut out = shoot.clone();
    let mut any = false;
    for w in &mut out.spec.provider.workers {
        if let Some(stamp) = stamps.get(&w.name) {
            w.annotations.insert(POOL_ROLLOUT.to_string(), stamp.clone());
            any = true;
        }
    }
    any.then_some(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code: a panic is the failure report
    use super::*;

    fn shoot(annotations: serde_json::Value) -> Shoot {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "s", "namespace": "garden-dev", "annotations": annotations},
            "spec": {"region": "local", "provider": {"type": "local", "workers": [
                {"name": "a", "minimum": 1, "maximum": 1, "machine": {"type": "local"}},
                {"name": "b", "minimum": 1, "maximum": 1, "machine": {"type": "local"}}]},
                "kubernetes": {"version": "1.20.2"}},
        }))
        .unwrap()
    }

    fn stamps(pairs: &[(&str, &str)]) -> Stamps {
        pairs.iter().map(|(k, v)| ((*k).to_string(), (*v).to_string())).collect()
    }

    #[test]
    fn a_requested_pool_gets_a_stamp_that_waits_until_the_worker_has_it() {
        let s = shoot(serde_json::json!({"gardener.cloud/operation": "reconcile;rollout-workers=b"}));
        let new = requested(&s, true, "T1");
        assert_eq!(new, stamps(&[("b", "T1")]));
        assert!(requested(&s, false, "T1").is_empty(), "only a requested operation takes the request");
        // A retried reconcile (annotation consumed) keeps the waiting stamp: the pool rolls once.
        let retried = shoot(serde_json::json!({PENDING: encode(&new)}));
        assert_eq!(requested(&retried, false, "T2"), stamps(&[("b", "T1")]));
        let all = shoot(serde_json::json!({"gardener.cloud/operation": "rollout-workers=*", PENDING: "b=T1"}));
        assert_eq!(requested(&all, true, "T3"), stamps(&[("a", "T3"), ("b", "T3")]));
    }

    #[test]
    fn the_pools_carry_their_stamps_forward_and_new_ones_replace_them() {
        let s = shoot(serde_json::json!({}));
        assert_eq!(stamped(&s, &Stamps::new(), &Stamps::new()), None, "nothing ever rolled: unchanged");
        let worker: Worker = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "s", "namespace": "shoot--dev--s"},
            "spec": {"type": "local", "region": "local", "secretRef": {"name": "cloudprovider", "namespace": "shoot--dev--s"},
                     "pools": [{"name": "a", "machineType": "local", "machineImage": {"name": "local", "version": "1"},
                                "minimum": 1, "maximum": 1, "userData": "", "annotations": {POOL_ROLLOUT: "T0"}}]}
        }))
        .unwrap();
        let deployed = deployed(Some(&worker));
        assert_eq!(deployed, stamps(&[("a", "T0")]));
        let out = stamped(&s, &deployed, &stamps(&[("b", "T1"), ("gone", "T1")])).unwrap();
        let pools = &out.spec.provider.workers;
        assert_eq!(pools[0].annotations.get(POOL_ROLLOUT).unwrap(), "T0", "kept: no new rollout of a");
        assert_eq!(pools[1].annotations.get(POOL_ROLLOUT).unwrap(), "T1", "b rolls");
        assert_eq!(pools.len(), 2, "a pool that no longer exists is not created");
    }
}
