//! Applying the table to a Shoot: every value the user set, looked up by its path.

use super::{FIELDS, Fate, covers, entry_for};
use crate::field::{ErrorList, FieldError, Path};
use api::core::Shoot;
use serde_json::Value;

/// A value the user set: its table pattern (`spec.provider.workers[].name`), its concrete path
/// (`spec.provider.workers[0].name`) and the value.
#[derive(Debug)]
struct Leaf<'a> {
    pattern: String,
    path: Path,
    value: &'a Value,
}

/// Every set value below `value`; nulls, empty lists and empty objects are not values. A leaf is
/// a scalar, a list of scalars, or anything below a table entry (a map, an opaque config).
fn leaves<'a>(pattern: &str, path: Path, value: &'a Value, out: &mut Vec<Leaf<'a>>) {
    // An entry with no entries below it decides its whole value at once.
    let whole = FIELDS.iter().any(|f| f.path == pattern)
        && !FIELDS.iter().any(|f| f.path != pattern && covers(pattern, f.path));
    match value {
        Value::Null => {}
        Value::Object(map) if !whole => {
            for (k, v) in map {
                leaves(&format!("{pattern}.{k}"), path.child(k), v, out);
            }
        }
        Value::Array(items) if !whole && items.iter().any(Value::is_object) => {
            for (i, v) in items.iter().enumerate() {
                leaves(&format!("{pattern}[]"), path.index(i), v, out);
            }
        }
        Value::Object(map) if map.is_empty() => {}
        Value::Array(items) if items.is_empty() => {}
        _ => out.push(Leaf { pattern: pattern.to_string(), path, value }),
    }
}

/// The value at a concrete path (`spec.provider.workers[0].name`) of `root`.
fn value_at<'a>(root: &'a Value, path: &str) -> Option<&'a Value> {
    let mut current = root;
    for segment in path.split('.') {
        let (name, indexes) = segment.split_once('[').map_or((segment, ""), |(n, rest)| (n, rest));
        current = current.get(name)?;
        for index in indexes.split('[').filter(|s| !s.is_empty()) {
            current = current.get(index.trim_end_matches(']').parse::<usize>().ok()?)?;
        }
    }
    Some(current)
}

fn spec_json(shoot: &Shoot) -> Value {
    serde_json::to_value(&shoot.spec).unwrap_or(Value::Null)
}

/// The refusals of the table for `new` (values unchanged from `old` are not checked again).
pub fn validate(new: &Shoot, old: Option<&Shoot>) -> ErrorList {
    let spec = spec_json(new);
    let old_root = old.map(|o| serde_json::json!({ "spec": spec_json(o) }));
    let mut found = Vec::new();
    leaves("spec", Path::new("spec"), &spec, &mut found);
    let mut errs = ErrorList::default();
    for leaf in found {
        let unchanged = old_root.as_ref().and_then(|o| value_at(o, leaf.path.as_str())) == Some(leaf.value);
        if unchanged {
            continue;
        }
        let refusal = match entry_for(&leaf.pattern).map(|f| f.fate) {
            None => Some("not a field this system knows; it would be stored and ignored".to_string()),
            Some(Fate::Honoured { .. }) => None,
            Some(Fate::Refused { why }) => Some(format!("not supported: {why}")),
            Some(Fate::OnlyAs { values, why, .. }) => {
                let accepted =
                    values.iter().any(|v| serde_json::from_str::<Value>(v).ok().as_ref() == Some(leaf.value));
                (!accepted).then(|| format!("not supported: {why} (accepted: {})", values.join(", ")))
            }
        };
        if let Some(detail) = refusal {
            errs.push(FieldError::forbidden(leaf.path, detail));
        }
    }
    errs
}
