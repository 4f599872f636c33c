//! The kubelet settings of a shoot (`spec.kubernetes.kubelet`) and of its worker pools
//! (`spec.provider.workers[].kubernetes.kubelet`, which replace the shoot's for that pool): the
//! value checks of Gardener's `ValidateKubeletConfig` (`pkg/apis/core/validation/shoot.go`), the
//! refusal of fields the pool's Kubernetes version cannot do, of values the kubelet would
//! silently replace by its default or refuse to start with, and of settings that cannot take
//! effect on this system's machines (nested machine pods sharing the seed's kernel and CPUs,
//! running containerd). gardenlet maps every field that passes into the pool's
//! KubeletConfiguration (`crates/gardenlet/src/shoot/objects/kubelet.rs`). Pure.

use super::components::{feature_gates, parse_go_duration};
use crate::common::non_negative_quantity;
use crate::field::{ErrorList, FieldError, Path};
use api::core::Shoot;
use api::core::shoot::kubelet::{EvictionSignals, KubeletConfig, KubeletConfigReserved, SwapBehavior};
use api::helpers::quantity;

/// Why `protectKernelDefaults: true` is refused (evidence in docs/machines.md, "Kubelet settings").
pub const PROTECT_KERNEL_DEFAULTS_REFUSAL: &str = "protectKernelDefaults: true is not supported here: it makes the kubelet refuse to start unless the kernel already has the kubelet's values (vm.overcommit_memory=1, vm.panic_on_oom=0, kernel.panic=10, kernel.panic_on_oops=1, kernel.keys.root_maxkeys=1000000, kernel.keys.root_maxbytes=25000000), which Gardener sets on its own nodes; the local provider's machines share the seed's kernel, and its sysctls are not the shoot's to set, so whether the nodes start would depend on the seed host. Leave it unset or false";

/// Why `cpuManagerPolicy: static` is refused.
pub const STATIC_CPU_MANAGER_REFUSAL: &str = "cpuManagerPolicy static cannot take effect here: it exists to give Guaranteed pods CPUs of their own, but a machine is a pod on the seed's node that sees all of the host's CPUs, shared with every other machine and the seed's own pods, so each machine's kubelet would hand out the same CPUs as exclusive. Use none";

/// Why `imagePullProgressDeadline` is refused.
pub const IMAGE_PULL_PROGRESS_DEADLINE_REFUSAL: &str = "imagePullProgressDeadline only ever applied to the dockershim; the nodes here run containerd, where it has no effect";

/// Gardener's minimum of `podPidsLimit`.
pub const POD_PIDS_LIMIT_MINIMUM: i64 = 100;

/// The kubelet's image GC thresholds when the configuration sets none (high, low). gardenlet
/// writes neither of them when a shoot or pool sets one (the pair is one setting).
pub const KUBELET_DEFAULT_IMAGE_GC: (i32, i32) = (85, 80);

const SECOND: i128 = 1_000_000_000;
/// The kubelet's `imageMinimumGCAge` when unset (2m).
const KUBELET_DEFAULT_IMAGE_MINIMUM_GC_AGE: i128 = 120 * SECOND;

/// Every kubelet rule of `shoot`: its own settings against its version, each pool's settings
/// against the pool's version, and the shoot's settings against the version of every pool that
/// inherits them on a version of its own.
pub fn validate(shoot: &Shoot) -> ErrorList {
    let version = shoot.spec.kubernetes.version.as_str();
    let shoot_path = Path::new("spec").child("kubernetes").child("kubelet");
    let shoot_kubelet = shoot.spec.kubernetes.kubelet.as_ref();
    let mut errs = ErrorList::default();
    if shoot_kubelet.is_some() && shoot.spec.provider.workers.is_empty() {
        // Gardener's rule for workerless shoots: there is no kubelet to configure.
        errs.push(FieldError::forbidden(
            shoot_path,
            "this field should not be set for workerless Shoot clusters: they have no kubelets",
        ));
        return errs;
    }
    if let Some(k) = shoot_kubelet {
        errs.extend(validate_config(k, version, &shoot_path));
    }
    let workers = Path::new("spec").child("provider").child("workers");
    for (i, w) in shoot.spec.provider.workers.iter().enumerate() {
        let pool = w.kubernetes.as_ref();
        let pool_version = pool.and_then(|k| k.version.as_deref()).unwrap_or(version);
        match (pool.and_then(|k| k.kubelet.as_ref()), shoot_kubelet) {
            (Some(k), _) => {
                errs.extend(validate_config(k, pool_version, &workers.index(i).child("kubernetes").child("kubelet")))
            }
            (None, Some(k)) if pool_version != version => {
                // Only what the pool's own version adds is new (the rest was reported above).
                for e in validate_config(k, pool_version, &shoot_path).0 {
                    if !errs.iter().any(|known| known.path == e.path && known.type_ == e.type_) {
                        errs.push(FieldError {
                            detail: format!(
                                "{} (worker pool {:?}, {}, inherits these settings on Kubernetes {pool_version})",
                                e.detail,
                                w.name,
                                workers.index(i)
                            ),
                            ..e
                        });
                    }
                }
            }
            _ => {}
        }
    }
    errs
}

/// `(major, minor)` of a Kubernetes version (`1.20.2`, `v1.20`); `None` when it is not one.
fn minor(version: &str) -> Option<(u64, u64)> {
    let mut parts = version.trim_start_matches('v').split('.');
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// Whether `version` is older than `min` (`None`: unknown version, the rule is not applied).
fn older_than(version: &str, min: (u64, u64)) -> Option<bool> {
    minor(version).map(|v| v < min)
}

fn too_old(path: Path, field: &str, min: (u64, u64), version: &str, why: &str) -> FieldError {
    FieldError::forbidden(
        path,
        format!("{field} needs Kubernetes {}.{} or later{why}; this kubelet runs Kubernetes {version}", min.0, min.1),
    )
}

/// One kubelet configuration for a kubelet of Kubernetes `version`.
pub fn validate_config(k: &KubeletConfig, version: &str, path: &Path) -> ErrorList {
    let mut errs = ErrorList::default();
    errs.extend(version_rules(k, version, path));
    errs.extend(environment_rules(k, path));
    errs.extend(value_rules(k, path));
    errs.extend(eviction_rules(k, path));
    errs.extend(feature_gates::validate(&k.feature_gates, version, &path.child("featureGates")));
    for name in k.unmodeled.keys() {
        errs.push(FieldError::forbidden(
            path.child(name),
            "not a kubelet setting this system knows; it would be stored and ignored",
        ));
    }
    errs
}

/// Fields newer than the kubelet, or only for some versions.
fn version_rules(k: &KubeletConfig, version: &str, path: &Path) -> ErrorList {
    let mut errs = ErrorList::default();
    if let Some(seccomp) = k.seccomp_default {
        let p = path.child("seccompDefault");
        if older_than(version, (1, 25)) == Some(true) {
            errs.push(too_old(
                p.clone(),
                "seccompDefault",
                (1, 25),
                version,
                " (Gardener's rule; older kubelets do not know the field or need an alpha feature gate)",
            ));
        }
        if seccomp && k.feature_gates.get("SeccompDefault") == Some(&false) {
            errs.push(FieldError::forbidden(
                p,
                "seccomp defaulting is not available when kubelet's 'SeccompDefault' feature gate is disabled",
            ));
        }
    }
    if let Some(swap) = &k.memory_swap {
        let p = path.child("memorySwap");
        if older_than(version, (1, 22)) == Some(true) {
            errs.push(too_old(p.clone(), "memorySwap", (1, 22), version, " (the kubelet's swap support)"));
        } else {
            if k.fail_swap_on == Some(true) {
                errs.push(FieldError::forbidden(
                    p.clone(),
                    "configuring swap behaviour is not available when the kubelet is configured with 'FailSwapOn=true'",
                ));
            }
            if let Some(behavior) = swap.swap_behavior {
                if k.feature_gates.get("NodeSwap") != Some(&true) {
                    errs.push(FieldError::forbidden(
                        p.clone(),
                        "configuring swap behaviour is not available when kubelet's 'NodeSwap' feature gate is not set",
                    ));
                }
                let supported: &[(SwapBehavior, &str)] = if older_than(version, (1, 30)) == Some(false) {
                    &[(SwapBehavior::NoSwap, "NoSwap"), (SwapBehavior::LimitedSwap, "LimitedSwap")]
                } else {
                    &[(SwapBehavior::LimitedSwap, "LimitedSwap"), (SwapBehavior::UnlimitedSwap, "UnlimitedSwap")]
                };
                if !supported.iter().any(|(b, _)| *b == behavior) {
                    let names: Vec<&str> = supported.iter().map(|(_, n)| *n).collect();
                    errs.push(FieldError::unsupported(p.child("swapBehavior"), &format!("{behavior:?}"), &names));
                }
            }
        }
    }
    if let Some(age) = &k.image_maximum_gc_age {
        let p = path.child("imageMaximumGCAge");
        if older_than(version, (1, 29)) == Some(true) {
            errs.push(too_old(p.clone(), "imageMaximumGCAge", (1, 29), version, ""));
        } else if minor(version) == Some((1, 29)) && k.feature_gates.get("ImageMaximumGCAge") != Some(&true) {
            errs.push(FieldError::forbidden(
                p.clone(),
                "on Kubernetes 1.29 imageMaximumGCAge needs the kubelet's feature gate ImageMaximumGCAge",
            ));
        }
        if let Some(max) = duration(&p, age, &mut errs)
            && max > 0
        {
            let min = k
                .image_minimum_gc_age
                .as_deref()
                .and_then(|m| parse_go_duration(m).ok())
                .unwrap_or(KUBELET_DEFAULT_IMAGE_MINIMUM_GC_AGE);
            if max <= min {
                errs.push(FieldError::invalid(
                    p,
                    age,
                    "must be greater than imageMinimumGCAge (2m when unset), or 0 for no maximum",
                ));
            }
        }
    }
    if let Some(pulls) = k.max_parallel_image_pulls {
        let p = path.child("maxParallelImagePulls");
        if older_than(version, (1, 27)) == Some(true) {
            errs.push(too_old(p.clone(), "maxParallelImagePulls", (1, 27), version, ""));
        }
        if pulls < 1 {
            errs.push(FieldError::invalid(p.clone(), &pulls.to_string(), "value must be >= 1"));
        }
        if k.serialize_image_pulls == Some(true) && pulls > 1 {
            errs.push(FieldError::forbidden(
                p,
                "maxParallelImagePulls cannot be larger than 1 when serializeImagePulls is set to true",
            ));
        }
    }
    if k.system_reserved.is_some() && older_than(version, (1, 31)) == Some(false) {
        errs.push(FieldError::forbidden(
            path.child("systemReserved"),
            format!("systemReserved is no longer supported by Gardener starting from Kubernetes 1.31; this kubelet runs Kubernetes {version}; use kubeReserved"),
        ));
    }
    if k.image_pull_progress_deadline.is_some() {
        errs.push(FieldError::forbidden(path.child("imagePullProgressDeadline"), IMAGE_PULL_PROGRESS_DEADLINE_REFUSAL));
    }
    errs
}

/// Settings that cannot take effect on this system's machines.
fn environment_rules(k: &KubeletConfig, path: &Path) -> ErrorList {
    let mut errs = ErrorList::default();
    if k.protect_kernel_defaults == Some(true) {
        errs.push(FieldError::forbidden(path.child("protectKernelDefaults"), PROTECT_KERNEL_DEFAULTS_REFUSAL));
    }
    match k.cpu_manager_policy.as_deref() {
        None | Some("none") => {}
        Some("static") => {
            let p = path.child("cpuManagerPolicy");
            errs.push(FieldError::forbidden(p.clone(), STATIC_CPU_MANAGER_REFUSAL));
            let reserved_cpu = |r: &Option<KubeletConfigReserved>| {
                r.as_ref().and_then(|r| r.cpu.as_ref()).and_then(|q| quantity::parse(&q.0)).is_some_and(|c| c > 0.0)
            };
            if !reserved_cpu(&k.kube_reserved) && !reserved_cpu(&k.system_reserved) {
                errs.push(FieldError::invalid(
                    p,
                    "static",
                    "the static policy needs kubeReserved.cpu or systemReserved.cpu above 0: the kubelet refuses to start without reserved CPUs",
                ));
            }
        }
        Some(other) => {
            errs.push(FieldError::unsupported(path.child("cpuManagerPolicy"), other, &["none", "static"]));
        }
    }
    errs
}

/// Parses a Go duration, reporting what does not parse or is negative.
fn duration(path: &Path, value: &str, errs: &mut ErrorList) -> Option<i128> {
    match parse_go_duration(value) {
        Err(problem) => {
            errs.push(FieldError::invalid(path.clone(), value, format!("not a duration: {problem}")));
            None
        }
        Ok(n) if n < 0 => {
            errs.push(FieldError::invalid(path.clone(), value, "must be non-negative"));
            None
        }
        Ok(n) => Some(n),
    }
}

/// A non-negative duration the kubelet would replace by its default when zero.
fn duration_not_zero(path: &Path, value: &str, default: &str, errs: &mut ErrorList) {
    if duration(path, value, errs) == Some(0) {
        errs.push(FieldError::invalid(
            path.clone(),
            value,
            format!("the kubelet replaces 0 by its default ({default}); set the duration you want"),
        ));
    }
}

fn non_negative(path: Path, value: i64, errs: &mut ErrorList) {
    if value < 0 {
        errs.push(FieldError::invalid(path, &value.to_string(), "must be greater than or equal to 0"));
    }
}

/// A quantity that parses and is not negative ([`non_negative_quantity`]).
fn quantity(path: Path, value: &str, errs: &mut ErrorList) -> Option<f64> {
    non_negative_quantity(&path, value).map_err(|e| errs.push(e)).ok()
}

/// The single-field value checks (Gardener's, and the kubelet's where Gardener has none).
fn value_rules(k: &KubeletConfig, path: &Path) -> ErrorList {
    let mut errs = ErrorList::default();
    if let Some(max) = k.max_pods {
        non_negative(path.child("maxPods"), i64::from(max), &mut errs);
        if max == 0 {
            errs.push(FieldError::invalid(path.child("maxPods"), "0", "the kubelet replaces 0 by its default (110)"));
        }
    }
    if let Some(limit) = k.pod_pids_limit
        && limit < POD_PIDS_LIMIT_MINIMUM
    {
        errs.push(FieldError::invalid(
            path.child("podPidsLimit"),
            &limit.to_string(),
            format!("podPidsLimit value must be at least {POD_PIDS_LIMIT_MINIMUM}"),
        ));
    }
    for (field, value) in [("kubeReserved", &k.kube_reserved), ("systemReserved", &k.system_reserved)] {
        let Some(r) = value else { continue };
        let p = path.child(field);
        for (name, q) in
            [("cpu", &r.cpu), ("memory", &r.memory), ("ephemeralStorage", &r.ephemeral_storage), ("pid", &r.pid)]
        {
            if let Some(q) = q {
                quantity(p.child(name), &q.0, &mut errs);
            }
        }
    }
    if let Some(age) = &k.image_minimum_gc_age {
        duration_not_zero(&path.child("imageMinimumGCAge"), age, "2m", &mut errs);
    }
    let (high, low) = (k.image_gc_high_threshold_percent, k.image_gc_low_threshold_percent);
    let mut percents_valid = true;
    for (field, value) in [("imageGCHighThresholdPercent", high), ("imageGCLowThresholdPercent", low)] {
        if let Some(v) = value
            && !(0..=100).contains(&v)
        {
            percents_valid = false;
            errs.push(FieldError::invalid(path.child(field), &v.to_string(), "value must be in [0,100]"));
        }
    }
    if percents_valid && (high.is_some() || low.is_some()) {
        let effective_high = high.unwrap_or(KUBELET_DEFAULT_IMAGE_GC.0);
        let effective_low = low.unwrap_or(KUBELET_DEFAULT_IMAGE_GC.1);
        if effective_low >= effective_high {
            let unset = match (high, low) {
                (None, _) => format!(" (imageGCHighThresholdPercent is unset: the kubelet's default {effective_high})"),
                (_, None) => format!(" (imageGCLowThresholdPercent is unset: the kubelet's default {effective_low})"),
                _ => String::new(),
            };
            let field = if low.is_some() { "imageGCLowThresholdPercent" } else { "imageGCHighThresholdPercent" };
            errs.push(FieldError::forbidden(
                path.child(field),
                format!("imageGCLowThresholdPercent must be less than imageGCHighThresholdPercent{unset}"),
            ));
        }
    }
    if let Some(qps) = k.registry_pull_qps {
        non_negative(path.child("registryPullQPS"), i64::from(qps), &mut errs);
    }
    if let Some(burst) = k.registry_burst {
        non_negative(path.child("registryBurst"), i64::from(burst), &mut errs);
        if burst == 0 {
            errs.push(FieldError::invalid(
                path.child("registryBurst"),
                "0",
                "the kubelet replaces 0 by its default (10)",
            ));
        }
    }
    if let Some(files) = k.container_log_max_files
        && files < 2
    {
        errs.push(FieldError::invalid(path.child("containerLogMaxFiles"), &files.to_string(), "value must be >= 2."));
    }
    if let Some(size) = &k.container_log_max_size {
        let p = path.child("containerLogMaxSize");
        if let Some(bytes) = quantity(p.clone(), &size.0, &mut errs)
            && bytes.fract() != 0.0
        {
            errs.push(FieldError::invalid(
                p,
                &size.0,
                "must be a whole number of bytes (the kubelet refuses to start otherwise)",
            ));
        }
    }
    if let Some(timeout) = &k.streaming_connection_idle_timeout {
        let p = path.child("streamingConnectionIdleTimeout");
        if let Some(d) = duration(&p, timeout, &mut errs)
            && !(30 * SECOND..=4 * 3600 * SECOND).contains(&d)
        {
            errs.push(FieldError::invalid(p, timeout, "value must be between 30s and 4h"));
        }
    }
    errs
}

/// The eviction settings, signal by signal (the API's names of the signals).
fn eviction_rules(k: &KubeletConfig, path: &Path) -> ErrorList {
    let mut errs = ErrorList::default();
    for (field, thresholds) in [("evictionHard", &k.eviction_hard), ("evictionSoft", &k.eviction_soft)] {
        for (signal, value) in thresholds.as_ref().map(signals).into_iter().flatten() {
            if let Some(e) = threshold(&path.child(field).child(signal), value) {
                errs.push(e);
            }
        }
    }
    let grace = path.child("evictionSoftGracePeriod");
    for (signal, value) in k.eviction_soft_grace_period.as_ref().map(signals).into_iter().flatten() {
        duration(&grace.child(signal), value, &mut errs);
    }
    let reclaim = path.child("evictionMinimumReclaim");
    for (signal, value) in k.eviction_minimum_reclaim.as_ref().map(signals).into_iter().flatten() {
        quantity(reclaim.child(signal), &value.0, &mut errs);
    }
    if let Some(period) = &k.eviction_pressure_transition_period {
        duration_not_zero(&path.child("evictionPressureTransitionPeriod"), period, "5m", &mut errs);
    }
    if let Some(grace) = k.eviction_max_pod_grace_period {
        non_negative(path.child("evictionMaxPodGracePeriod"), i64::from(grace), &mut errs);
    }
    errs
}

/// The signals a setting sets, by the API's names.
fn signals<T>(s: &EvictionSignals<T>) -> impl Iterator<Item = (&'static str, &T)> {
    [
        ("memoryAvailable", s.memory_available.as_ref()),
        ("imageFSAvailable", s.image_fs_available.as_ref()),
        ("imageFSInodesFree", s.image_fs_inodes_free.as_ref()),
        ("nodeFSAvailable", s.node_fs_available.as_ref()),
        ("nodeFSInodesFree", s.node_fs_inodes_free.as_ref()),
    ]
    .into_iter()
    .filter_map(|(name, value)| Some((name, value?)))
}

/// An eviction threshold: a positive quantity (the kubelet refuses to start with zero) or a
/// whole percentage from 0% to 100% (Gardener's rule).
fn threshold(path: &Path, value: &str) -> Option<FieldError> {
    if let Some(number) = value.strip_suffix('%') {
        return match number.parse::<u32>() {
            Ok(p) if number.bytes().all(|b| b.is_ascii_digit()) && p <= 100 => None,
            Ok(_) if number.bytes().all(|b| b.is_ascii_digit()) => {
                Some(FieldError::invalid(path.clone(), value, "must not be greater than 100% and not smaller than 0%"))
            }
            _ => Some(FieldError::invalid(
                path.clone(),
                value,
                "field must be either a valid resource quantity (e.g 200Mi) or a percentage (e.g '5%')",
            )),
        };
    }
    match quantity::parse(value) {
        Some(q) if q > 0.0 => None,
        Some(_) => Some(FieldError::invalid(
            path.clone(),
            value,
            "an eviction threshold quantity must be greater than 0 (the kubelet refuses to start otherwise); 0% turns the signal off",
        )),
        None => Some(FieldError::invalid(
            path.clone(),
            value,
            "field must be either a valid resource quantity (e.g 200Mi) or a percentage (e.g '5%')",
        )),
    }
}

#[cfg(test)]
mod tests;
