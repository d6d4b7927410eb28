//! Wall-clock time as the exporter stamps rows: milliseconds since the Unix epoch, and the UTC hour that
//! names a Parquet partition (`2026-11-26T22`), without a date library.

use std::time::{SystemTime, UNIX_EPOCH};

/// Now, in milliseconds since the Unix epoch (0 for a clock before 1970).
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The UTC hour of `ms`, `YYYY-MM-DDTHH`.
pub fn hour(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, hour) = (secs / 86_400, (secs % 86_400) / 3600);
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}T{hour:02}")
}

/// Howard Hinnant's `civil_from_days` for days since 1970-01-01 (never negative here).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hours_match_the_calendar() {
        // date -u -d @... +%Y-%m-%dT%H
        assert_eq!(hour(0), "1970-01-01T00");
        assert_eq!(hour(951_782_400_000), "2000-02-29T00");
        assert_eq!(hour(1_795_730_400_000), "2026-11-26T22");
        assert_eq!(hour(1_795_733_999_999), "2026-11-26T22");
        assert_eq!(hour(1_795_734_000_000), "2026-11-26T23");
    }
}
