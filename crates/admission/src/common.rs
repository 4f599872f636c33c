//! Small checks shared by every kind: DNS names, CIDRs, pairwise disjoint networks, immutable
//! fields, quantities.

use crate::field::{ErrorList, ErrorType, FieldError, Path};
use ipnet::IpNet;

/// RFC 1123 label: lowercase alphanumerics and '-', starting and ending alphanumeric, <= 63.
pub fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// RFC 1123 subdomain: dot-separated labels, <= 253.
pub fn is_dns_subdomain(s: &str) -> bool {
    !s.is_empty() && s.len() <= 253 && s.split('.').all(is_dns_label)
}

/// Errors when `value` is not a DNS label of at most `max` characters.
pub fn dns_label(path: &Path, value: &str, max: usize) -> Option<FieldError> {
    if value.is_empty() {
        return Some(FieldError::required(path.clone(), "must not be empty"));
    }
    if !is_dns_label(value) {
        return Some(FieldError::invalid(
            path.clone(),
            value,
            "a DNS label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
        ));
    }
    if value.len() > max {
        return Some(FieldError::invalid(path.clone(), value, format!("must be no more than {max} characters")));
    }
    None
}

/// Errors when `value` is not a DNS subdomain.
pub fn dns_subdomain(path: &Path, value: &str) -> Option<FieldError> {
    if value.is_empty() {
        return Some(FieldError::required(path.clone(), "must not be empty"));
    }
    (!is_dns_subdomain(value)).then(|| {
        FieldError::invalid(
            path.clone(),
            value,
            "a DNS-1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
        )
    })
}

/// Parses a CIDR; the address must be the network address (`10.0.0.1/8` is refused, as the
/// Kubernetes API refuses it).
pub fn cidr(path: &Path, value: &str) -> Result<IpNet, FieldError> {
    let net: IpNet = value
        .parse()
        .map_err(|_| FieldError::invalid(path.clone(), value, "must be a valid CIDR (for example 10.250.0.0/16)"))?;
    if net.network() != net.addr() {
        return Err(FieldError::invalid(
            path.clone(),
            value,
            format!("must be a network address; did you mean {}?", net.trunc()),
        ));
    }
    Ok(net)
}

/// Why a quantity that does not parse is refused.
pub const NOT_A_QUANTITY: &str = "must be a quantity (for example 100Mi)";

/// Why a negative quantity is refused.
pub const NEGATIVE_QUANTITY: &str = "must be a non-negative quantity";

/// A user-supplied quantity (`resource.Quantity`, parsed by the one parser,
/// [`api::helpers::quantity::parse`]) as a number: refused when it does not parse or is
/// negative (a negative size or resource would, among others, lower quota usage).
pub fn non_negative_quantity(path: &Path, value: &str) -> Result<f64, FieldError> {
    match api::helpers::quantity::parse(value) {
        None => Err(FieldError::invalid(path.clone(), value, NOT_A_QUANTITY)),
        Some(q) if q < 0.0 => Err(FieldError::invalid(path.clone(), value, NEGATIVE_QUANTITY)),
        Some(q) => Ok(q),
    }
}

/// Whether two networks share any address.
pub fn overlap(a: &IpNet, b: &IpNet) -> bool {
    a.contains(&b.network()) || b.contains(&a.network())
}

/// Checks named networks for pairwise overlap; the later one of a pair carries the error.
pub fn disjoint(nets: &[(Path, IpNet)]) -> ErrorList {
    let mut errs = ErrorList::default();
    for (i, (pa, a)) in nets.iter().enumerate() {
        for (pb, b) in &nets[i + 1..] {
            if overlap(a, b) {
                errs.push(FieldError::invalid(pb.clone(), &b.to_string(), format!("must not overlap with {pa} ({a})")));
            }
        }
    }
    errs
}

/// Errors when an immutable field changed (any comparable value; shown with `Debug`).
pub fn immutable<T: PartialEq + std::fmt::Debug>(path: &Path, new: &T, old: &T) -> Option<FieldError> {
    (new != old).then(|| {
        let shown: String = format!("{new:?}").chars().take(256).collect();
        FieldError {
            path: path.clone(),
            type_: ErrorType::Invalid,
            value: Some(shown),
            detail: "field is immutable".into(),
        }
    })
}

/// Errors when an immutable optional string changed; shows the new value (or `null`).
pub fn immutable_str(path: &Path, new: Option<&str>, old: Option<&str>) -> Option<FieldError> {
    (new != old).then(|| match new {
        Some(v) => FieldError::invalid(path.clone(), v, "field is immutable"),
        None => FieldError {
            path: path.clone(),
            type_: ErrorType::Invalid,
            value: Some("null".into()),
            detail: "field is immutable".into(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_names() {
        for ok in ["a", "a-b", "abc123", "0a"] {
            assert!(is_dns_label(ok), "{ok}");
        }
        for bad in ["", "-a", "a-", "A", "a_b", "a.b", &"a".repeat(64)] {
            assert!(!is_dns_label(bad), "{bad}");
        }
        assert!(is_dns_subdomain("a.b-c.d"));
        assert!(!is_dns_subdomain("a..b"));
        assert!(dns_label(&Path::new("n"), "abcdefghijklmnop", 15).is_some());
        assert!(dns_label(&Path::new("n"), "abc", 15).is_none());
        assert_eq!(
            dns_label(&Path::new("n"), "", 15).map(|e| e.to_string()).as_deref(),
            Some("n: Required value: must not be empty")
        );
    }

    #[test]
    fn cidrs_and_overlap() {
        let p = Path::new("x");
        assert!(cidr(&p, "10.0.0.0/8").is_ok());
        assert!(cidr(&p, "fd00::/64").is_ok());
        assert!(cidr(&p, "10.0.0.1/8").unwrap_err().to_string().contains("did you mean 10.0.0.0/8"));
        assert!(cidr(&p, "nonsense").is_err());
        assert!(cidr(&p, "10.0.0.0/33").is_err());
        let n = |s: &str| s.parse::<IpNet>().unwrap();
        let cases = [
            ("10.0.0.0/8", "10.1.0.0/16", true),
            ("10.1.0.0/16", "10.0.0.0/8", true),
            ("10.0.0.0/16", "10.1.0.0/16", false),
            ("100.64.0.0/13", "100.96.0.0/11", false),
            ("10.0.0.0/8", "fd00::/8", false),
        ];
        for (a, b, want) in cases {
            assert_eq!(overlap(&n(a), &n(b)), want, "{a} {b}");
        }
        let errs = disjoint(&[(Path::new("a"), n("10.0.0.0/8")), (Path::new("b"), n("10.2.0.0/16"))]);
        assert_eq!(errs.to_string(), "b: Invalid value: \"10.2.0.0/16\": must not overlap with a (10.0.0.0/8)");
    }

    #[test]
    fn quantities_are_refused_when_negative_or_unparsable() {
        let p = Path::new("spec").child("size");
        assert_eq!(non_negative_quantity(&p, "10Gi"), Ok(10.0 * 1024f64.powi(3)));
        assert_eq!(non_negative_quantity(&p, "0"), Ok(0.0));
        assert_eq!(non_negative_quantity(&p, "500m"), Ok(0.5));
        let shown = |v: &str| non_negative_quantity(&p, v).map_err(|e| e.to_string());
        assert_eq!(shown("-1Pi"), Err("spec.size: Invalid value: \"-1Pi\": must be a non-negative quantity".into()));
        assert_eq!(shown("-0.5"), Err("spec.size: Invalid value: \"-0.5\": must be a non-negative quantity".into()));
        for bad in ["", "big", "1Q", "--1", "1e999"] {
            assert_eq!(
                shown(bad),
                Err(format!("spec.size: Invalid value: {bad:?}: must be a quantity (for example 100Mi)")),
                "{bad}"
            );
        }
    }

    #[test]
    fn immutability() {
        assert!(immutable(&Path::new("r"), &"a", &"a").is_none());
        assert_eq!(
            immutable(&Path::new("r"), &"b", &"a").map(|e| e.to_string()).as_deref(),
            Some("r: Invalid value: \"b\": field is immutable")
        );
        assert_eq!(
            immutable_str(&Path::new("r"), None, Some("a")).map(|e| e.to_string()).as_deref(),
            Some("r: Invalid value: null: field is immutable")
        );
        assert!(immutable_str(&Path::new("r"), Some("a"), Some("a")).is_none());
    }
}
