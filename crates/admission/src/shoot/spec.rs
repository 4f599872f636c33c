//! The Shoot rules that need nothing but the shoot: names, required fields, networks, worker
//! pools, maintenance window, hibernation schedules, tolerations.

use crate::common::{cidr, disjoint, dns_label, dns_subdomain, non_negative_quantity};
use crate::field::{ErrorList, FieldError, Path};
use api::core::Shoot;
use api::core::shoot::ShootPurpose;
use api::core::shoot::provider::Worker;
use api::core::shoot::settings::{Hibernation, MaintenanceTimeWindow};
use api::helpers::constants::GARDEN_NAMESPACE;
use api::helpers::names::{TechnicalId, project_of_namespace};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::collections::BTreeSet;

/// Longest worker pool name (it becomes part of machine and node names).
pub const MAX_WORKER_NAME: usize = 15;

/// Every profile-independent rule of a shoot.
pub fn validate(shoot: &Shoot) -> ErrorList {
    let mut errs = ErrorList::default();
    validate_name(shoot, &mut errs);
    let spec_path = Path::new("spec");
    let spec = &shoot.spec;
    if spec.cloud_profile_name().is_none_or(str::is_empty) {
        errs.push(FieldError::required(spec_path.child("cloudProfileName"), "must name the CloudProfile"));
    }
    if spec.region.is_empty() {
        errs.push(FieldError::required(spec_path.child("region"), ""));
    }
    if spec.provider.type_.is_empty() {
        errs.push(FieldError::required(spec_path.child("provider").child("type"), ""));
    }
    let has_workers = !spec.provider.workers.is_empty();
    if has_workers
        && spec.secret_binding_name.as_deref().is_none_or(str::is_empty)
        && spec.credentials_binding_name.as_deref().is_none_or(str::is_empty)
    {
        errs.push(FieldError::required(
            spec_path.child("secretBindingName"),
            "a shoot with workers needs secretBindingName or credentialsBindingName",
        ));
    }
    // Current Gardener: the credentials come from exactly one binding.
    if spec.secret_binding_name.as_deref().is_some_and(|n| !n.is_empty())
        && spec.credentials_binding_name.as_deref().is_some_and(|n| !n.is_empty())
    {
        errs.push(FieldError::forbidden(
            spec_path.child("credentialsBindingName"),
            "credentialsBindingName must not be set together with secretBindingName",
        ));
    }
    if spec.kubernetes.version.is_empty() {
        errs.push(FieldError::required(
            spec_path.child("kubernetes").child("version"),
            "kubernetes version must not be empty",
        ));
    }
    if let Some(seed) = &spec.seed_name
        && let Some(e) = dns_subdomain(&spec_path.child("seedName"), seed)
    {
        errs.push(e);
    }
    if let Some(domain) = spec.dns.as_ref().and_then(|d| d.domain.as_deref())
        && let Some(e) = dns_subdomain(&spec_path.child("dns").child("domain"), domain)
    {
        errs.push(e);
    }
    if spec.purpose == Some(ShootPurpose::Infrastructure)
        && shoot.metadata.namespace.as_deref() != Some(GARDEN_NAMESPACE)
    {
        errs.push(FieldError::forbidden(
            spec_path.child("purpose"),
            format!("purpose \"infrastructure\" is only allowed for shoots in the {GARDEN_NAMESPACE:?} namespace"),
        ));
    }
    errs.extend(validate_networking(shoot, has_workers));
    errs.extend(validate_workers(&spec.provider.workers, &spec_path.child("provider").child("workers")));
    if let Some(w) = spec.maintenance.as_ref().and_then(|m| m.time_window.as_ref()) {
        errs.extend(validate_time_window(w, &spec_path.child("maintenance").child("timeWindow")));
    }
    if let Some(h) = &spec.hibernation {
        errs.extend(validate_hibernation(h, &spec_path.child("hibernation")));
    }
    let mut keys = BTreeSet::new();
    for (i, t) in spec.tolerations.iter().enumerate() {
        let p = spec_path.child("tolerations").index(i).child("key");
        if t.key.is_empty() {
            errs.push(FieldError::required(p, ""));
        } else if !keys.insert(t.key.as_str()) {
            errs.push(FieldError::duplicate(p, &t.key));
        }
    }
    errs
}

fn validate_name(shoot: &Shoot, errs: &mut ErrorList) {
    let meta = Path::new("metadata");
    let name = shoot.metadata.name.as_deref().unwrap_or("");
    if let Some(e) = dns_label(&meta.child("name"), name, 63) {
        errs.push(e);
        return;
    }
    // The technical ID `shoot--<project>--<name>` names the seed namespace: it must be a valid,
    // unambiguous namespace name.
    let ns = shoot.metadata.namespace.as_deref().unwrap_or("");
    let project = project_of_namespace(ns).unwrap_or(ns);
    if let Err(e) = TechnicalId::new(project, name) {
        errs.push(FieldError::invalid(meta.child("name"), name, e.to_string()));
    }
}

fn validate_networking(shoot: &Shoot, has_workers: bool) -> ErrorList {
    let mut errs = ErrorList::default();
    let p = Path::new("spec").child("networking");
    let Some(n) = &shoot.spec.networking else {
        if has_workers {
            errs.push(FieldError::required(p, "a shoot with workers needs networking"));
        }
        return errs;
    };
    if has_workers && n.type_.as_deref().is_none_or(str::is_empty) {
        errs.push(FieldError::required(p.child("type"), "a shoot with workers needs a network plugin type"));
    }
    let mut nets = Vec::new();
    for (field, value) in [("pods", &n.pods), ("services", &n.services), ("nodes", &n.nodes)] {
        if let Some(v) = value {
            match cidr(&p.child(field), v) {
                Ok(net) => nets.push((p.child(field), net)),
                Err(e) => errs.push(e),
            }
        }
    }
    errs.extend(disjoint(&nets));
    errs
}

fn validate_workers(workers: &[Worker], p: &Path) -> ErrorList {
    let mut errs = ErrorList::default();
    let mut names = BTreeSet::new();
    for (i, w) in workers.iter().enumerate() {
        let wp = p.index(i);
        if let Some(e) = dns_label(&wp.child("name"), &w.name, MAX_WORKER_NAME) {
            errs.push(e);
        } else if !names.insert(w.name.as_str()) {
            errs.push(FieldError::duplicate(wp.child("name"), &w.name));
        }
        if w.machine.type_.is_empty() {
            errs.push(FieldError::required(wp.child("machine").child("type"), ""));
        }
        if w.minimum < 0 {
            errs.push(FieldError::invalid(
                wp.child("minimum"),
                &w.minimum.to_string(),
                "must be greater than or equal to 0",
            ));
        }
        if w.maximum < w.minimum {
            errs.push(FieldError::forbidden(wp.child("maximum"), "maximum value must not be less than minimum value"));
        }
        if w.maximum > 0 && usize::try_from(w.maximum).is_ok_and(|m| m < w.zones.len()) {
            errs.push(FieldError::forbidden(
                wp.child("maximum"),
                "maximum value must not be less than number of zones",
            ));
        }
        let mut zones = BTreeSet::new();
        for (z, zone) in w.zones.iter().enumerate() {
            if zone.is_empty() {
                errs.push(FieldError::required(wp.child("zones").index(z), ""));
            } else if !zones.insert(zone.as_str()) {
                errs.push(FieldError::duplicate(wp.child("zones").index(z), zone));
            }
        }
        errs.extend(validate_rollout(w, &wp));
        errs.extend(validate_volume_sizes(w, &wp));
        errs.extend(validate_drain_timeout(w, &wp));
    }
    errs
}

/// The sizes of a pool's volumes (`volume.size`, `dataVolumes[].size`): set, a quantity, not
/// negative (a negative size would lower the quota usage of the shoot).
fn validate_volume_sizes(w: &Worker, wp: &Path) -> ErrorList {
    let mut errs = ErrorList::default();
    let root = w.volume.as_ref().map(|v| (wp.child("volume").child("size"), v.size.as_str()));
    let data = w
        .data_volumes
        .iter()
        .enumerate()
        .map(|(i, v)| (wp.child("dataVolumes").index(i).child("size"), v.size.as_str()));
    for (path, size) in root.into_iter().chain(data) {
        if size.is_empty() {
            errs.push(FieldError::required(path, ""));
        } else if let Err(e) = non_negative_quantity(&path, size) {
            errs.push(e);
        }
    }
    errs
}

/// `machineControllerManager.machineDrainTimeout`: a Go duration, not negative (how long a
/// roll-out's drain may wait for PodDisruptionBudgets before it deletes the pods).
fn validate_drain_timeout(w: &Worker, wp: &Path) -> ErrorList {
    let mut errs = ErrorList::default();
    let timeout = w.machine_controller_manager_settings.as_ref().and_then(|m| m.machine_drain_timeout.as_deref());
    if let Some(value) = timeout {
        let path = wp.child("machineControllerManager").child("machineDrainTimeout");
        match api::helpers::duration::parse_go_duration(value) {
            Err(e) => errs.push(FieldError::invalid(path, value, format!("not a duration: {e}"))),
            Ok(n) if n < 0 => errs.push(FieldError::invalid(path, value, "must not be negative")),
            Ok(_) => {}
        }
    }
    errs
}

/// `maxSurge`/`maxUnavailable`: non-negative numbers or percentages, not both zero.
fn validate_rollout(w: &Worker, wp: &Path) -> ErrorList {
    let mut errs = ErrorList::default();
    let mut zero = 0;
    for (field, value) in [("maxSurge", &w.max_surge), ("maxUnavailable", &w.max_unavailable)] {
        let amount = match value {
            None => continue,
            Some(IntOrString::Int(i)) => Some(i64::from(*i)),
            Some(IntOrString::String(s)) => {
                s.strip_suffix('%').and_then(|n| n.parse::<i64>().ok()).filter(|n| *n <= 100)
            }
        };
        match amount {
            Some(a) if a < 0 => {
                errs.push(FieldError::invalid(wp.child(field), &a.to_string(), "must be greater than or equal to 0"))
            }
            Some(0) => zero += 1,
            Some(_) => {}
            None => errs.push(FieldError::invalid(
                wp.child(field),
                &format!("{value:?}"),
                "must be an integer or a percentage between 0% and 100%",
            )),
        }
    }
    if zero == 2 {
        errs.push(FieldError::invalid(wp.child("maxUnavailable"), "0", "may not be 0 when `maxSurge` is 0, too"));
    }
    errs
}

/// Parses `HHMMSS+ZZZZ` into seconds of the UTC day.
pub fn parse_window_time(value: &str) -> Option<i64> {
    let b = value.as_bytes();
    if b.len() != 11 || !(b[6] == b'+' || b[6] == b'-') || !value.is_char_boundary(6) {
        return None;
    }
    let num =
        |r: std::ops::Range<usize>| value.get(r).filter(|s| s.bytes().all(|c| c.is_ascii_digit()))?.parse::<i64>().ok();
    let (h, m, s, zh, zm) = (num(0..2)?, num(2..4)?, num(4..6)?, num(7..9)?, num(9..11)?);
    if h > 23 || m > 59 || s > 59 || zh > 14 || zm > 59 {
        return None;
    }
    let offset = (zh * 3600 + zm * 60) * if b[6] == b'-' { -1 } else { 1 };
    Some((h * 3600 + m * 60 + s - offset).rem_euclid(86_400))
}

fn validate_time_window(w: &MaintenanceTimeWindow, p: &Path) -> ErrorList {
    let mut errs = ErrorList::default();
    let begin = parse_window_time(&w.begin);
    let end = parse_window_time(&w.end);
    for (field, value, parsed) in [("begin", &w.begin, begin), ("end", &w.end, end)] {
        if parsed.is_none() {
            errs.push(FieldError::invalid(
                p.child(field),
                value,
                "must be a time of the form HHMMSS+ZZZZ (for example 220000+0100)",
            ));
        }
    }
    if let (Some(b), Some(e)) = (begin, end) {
        let length = (e - b).rem_euclid(86_400);
        if length < 30 * 60 {
            errs.push(FieldError::invalid(
                p.clone(),
                &format!("{}-{}", w.begin, w.end),
                "the time window must be at least 30 minutes long",
            ));
        }
    }
    errs
}

/// A standard five-field cron spec: minute hour day-of-month month day-of-week, each made of
/// `*`, numbers, ranges, steps, lists or names (`MON`, `JAN`).
pub fn is_cron(spec: &str) -> bool {
    let fields: Vec<&str> = spec.split_whitespace().collect();
    fields.len() == 5
        && fields.iter().all(|f| f.bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'*' | b',' | b'-' | b'/')))
}

fn validate_hibernation(h: &Hibernation, p: &Path) -> ErrorList {
    let mut errs = ErrorList::default();
    for (i, s) in h.schedules.iter().enumerate() {
        let sp = p.child("schedules").index(i);
        if s.start.is_none() && s.end.is_none() {
            errs.push(FieldError::required(sp.clone(), "either start or end has to be provided"));
        }
        for (field, value) in [("start", &s.start), ("end", &s.end)] {
            if let Some(v) = value
                && !is_cron(v)
            {
                errs.push(FieldError::invalid(sp.child(field), v, "must be a standard cron spec with five fields"));
            }
        }
        if let Some(loc) = &s.location
            && (loc.is_empty() || loc.len() > 64 || loc.contains(".."))
        {
            errs.push(FieldError::invalid(sp.child("location"), loc, "must be an IANA time zone name"));
        }
    }
    errs
}
