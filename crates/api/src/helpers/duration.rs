//! Go durations (`time.ParseDuration`), as Gardener's APIs write them (`2h`, `90s`, `1h30m`).

/// Parses a Go duration (`time.ParseDuration`: `1h2m0.5s`, `300ms`, `-1s`, `0`) into
/// nanoseconds.
pub fn parse_go_duration(text: &str) -> Result<i128, String> {
    let (negative, mut rest) = match text.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(format!("invalid duration {text:?}"));
    }
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let number_len = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        let (number, tail) = rest.split_at(number_len);
        if number.is_empty() || number == "." || number.matches('.').count() > 1 {
            return Err(format!("invalid duration {text:?}"));
        }
        let unit_len = tail.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(tail.len());
        let (unit, next) = tail.split_at(unit_len);
        let scale = match unit {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            "" => return Err(format!("missing unit in duration {text:?}")),
            other => return Err(format!("unknown unit {other:?} in duration {text:?}")),
        };
        let value: f64 = number.parse().map_err(|_| format!("invalid duration {text:?}"))?;
        total += value * scale;
        rest = next;
    }
    if total > 9.3e18 {
        return Err(format!("invalid duration {text:?}: out of range"));
    }
    // In range (checked above): the cast keeps the integral nanoseconds.
    #[allow(clippy::cast_possible_truncation)]
    let nanos = total.round() as i128;
    Ok(if negative { -nanos } else { nanos })
}
