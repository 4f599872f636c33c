//! Reading a Shoot's `gardener.cloud/operation` annotation (pure), shared by admission (which
//! judges each part) and gardenlet (which acts on each part): one operation, or several
//! separated by `;` (`rotate-ca-start;rotate-serviceaccount-key-start`); and the
//! `shoot.gardener.cloud/ignore` annotation.

use crate::core::Shoot;
use crate::helpers::constants::{ANNOTATION_IGNORE, ANNOTATION_OPERATION, operation as op};

/// The annotation's value on `shoot`, if any.
pub fn value(shoot: &Shoot) -> Option<&str> {
    shoot.metadata.annotations.as_ref()?.get(ANNOTATION_OPERATION).map(String::as_str)
}

/// The operations of a value, trimmed, in order; an empty part (`a;;b`, a trailing `;`) is
/// returned as `""` so that admission can refuse it.
pub fn parts(value: &str) -> impl Iterator<Item = &str> {
    value.split(op::SEPARATOR).map(str::trim)
}

/// Whether `value` asks for `operation` (as one of its parts).
pub fn has(value: Option<&str>, operation: &str) -> bool {
    value.is_some_and(|v| parts(v).any(|p| p == operation))
}

/// The pools a `rollout-workers=<pool>[,<pool>...]` part names (`["*"]` for every pool); `None`
/// for any other part. Names are trimmed; empty names are kept for admission to refuse.
pub fn rollout_pools(part: &str) -> Option<Vec<&str>> {
    let rest = part.strip_prefix(op::ROLLOUT_WORKERS)?;
    let pools = rest.strip_prefix('=')?;
    Some(pools.split(',').map(str::trim).collect())
}

/// The pools every `rollout-workers` part of `value` names, `*` expanded to `all`.
pub fn rollout_requested<'a>(value: Option<&'a str>, all: &[&'a str]) -> Vec<&'a str> {
    let mut pools: Vec<&str> = Vec::new();
    for part in value.into_iter().flat_map(parts) {
        for pool in rollout_pools(part).unwrap_or_default() {
            let named: &[&str] = if pool == "*" { all } else { std::slice::from_ref(&pool) };
            for p in named {
                if !p.is_empty() && !pools.contains(p) {
                    pools.push(p);
                }
            }
        }
    }
    pools
}

/// Whether `shoot.gardener.cloud/ignore` is `"true"`: gardenlet leaves the shoot alone.
pub fn ignored(shoot: &Shoot) -> bool {
    shoot.metadata.annotations.as_ref().and_then(|a| a.get(ANNOTATION_IGNORE)).is_some_and(|v| v == "true")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_split_on_semicolons_and_trimmed() {
        assert_eq!(
            parts("rotate-ca-start; rotate-serviceaccount-key-start").collect::<Vec<_>>(),
            ["rotate-ca-start", "rotate-serviceaccount-key-start"]
        );
        assert_eq!(parts("reconcile;").collect::<Vec<_>>(), ["reconcile", ""]);
        assert!(has(Some("reconcile;retry"), "retry"));
        assert!(!has(Some("reconcile-now"), "reconcile"));
        assert!(!has(None, "retry"));
    }

    #[test]
    fn rollout_pools_name_pools_or_every_pool() {
        assert_eq!(rollout_pools("rollout-workers=a, b"), Some(vec!["a", "b"]));
        assert_eq!(rollout_pools("rollout-workers="), Some(vec![""]));
        assert_eq!(rollout_pools("rollout-workers"), None);
        assert_eq!(rollout_pools("rollout-workersx=a"), None);
        assert_eq!(rollout_requested(Some("rollout-workers=b;rollout-workers=*"), &["a", "b"]), ["b", "a"]);
        assert_eq!(rollout_requested(Some("reconcile"), &["a"]), Vec::<&str>::new());
    }
}
