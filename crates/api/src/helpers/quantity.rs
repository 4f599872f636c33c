//! Kubernetes quantities (`resource.Quantity`) as numbers. Hand-written: the crates for this
//! depend on other k8s-openapi releases.

/// A quantity as a number: `2`, `+3`, `500m`, `1.5`, `8Gi`, `1k`, `1e3`, `10G`. `None` when it
/// does not parse.
pub fn parse(quantity: &str) -> Option<f64> {
    let q = quantity.trim();
    let split = q.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-')).unwrap_or(q.len());
    let (number, suffix) = q.split_at(split);
    let base: f64 = number.parse().ok()?;
    let factor = match suffix {
        "" => 1.0,
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024.0,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        s => {
            let exp = s.strip_prefix('e').or_else(|| s.strip_prefix('E'))?;
            10f64.powi(exp.parse().ok()?)
        }
    };
    let value = base * factor;
    value.is_finite().then_some(value)
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn quantities() {
        for (q, want) in [
            ("2", 2.0),
            (" 7 ", 7.0),
            ("+3", 3.0),
            ("-1", -1.0),
            ("500m", 0.5),
            ("1.5", 1.5),
            ("8Gi", 8.0 * 1024f64.powi(3)),
            ("1k", 1000.0),
            ("1e3", 1000.0),
            ("10G", 1e10),
            ("256Mi", 256.0 * 1024f64.powi(2)),
        ] {
            assert_eq!(parse(q), Some(want), "{q}");
        }
        for bad in ["", "Gi", "1Q", "1e", "abc", "1ee3", "5x", "ten"] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}
