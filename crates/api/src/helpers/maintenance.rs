//! Maintenance time windows (`spec.maintenance.timeWindow`).

const DAY: i64 = 86_400;

/// A time of day `HHMMSS+ZZZZ` (Gardener's format, e.g. `220000+0100`) as seconds of the UTC
/// day; `None` when it is not one.
pub fn utc_seconds_of_day(value: &str) -> Option<i64> {
    if value.len() != 11 || !value.is_ascii() {
        return None;
    }
    let num = |r: std::ops::Range<usize>| value.get(r).and_then(|s| s.parse::<i64>().ok());
    let (h, m, s) = (num(0..2)?, num(2..4)?, num(4..6)?);
    let sign = match value.get(6..7) {
        Some("+") => 1,
        Some("-") => -1,
        _ => return None,
    };
    let (oh, om) = (num(7..9)?, num(9..11)?);
    if h > 23 || m > 59 || s > 59 || oh > 14 || om > 59 {
        return None;
    }
    Some((h * 3600 + m * 60 + s - sign * (oh * 3600 + om * 60)).rem_euclid(DAY))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_of_day_convert_to_utc() {
        assert_eq!(utc_seconds_of_day("220000+0100"), Some(21 * 3600));
        assert_eq!(utc_seconds_of_day("003000-0130"), Some(2 * 3600));
        assert_eq!(utc_seconds_of_day("010000+0200"), Some(23 * 3600));
        for bad in ["22:00:00+01", "240000+0000", "220000*0100", "2200000+0100", "22000a+0000", "220000+1500"] {
            assert_eq!(utc_seconds_of_day(bad), None, "{bad}");
        }
    }
}
