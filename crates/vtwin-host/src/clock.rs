//! UTC timestamps for reports and certificates (the `time` crate; no shelling out, no
//! hand-written calendar).

use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// The current UTC time as RFC 3339 to the second, `YYYY-MM-DDTHH:MM:SSZ` (the form of
/// every `date_utc` a vtwin report carries). Cost: one clock read.
pub fn utc_now() -> String {
    format_utc(OffsetDateTime::now_utc())
}

/// `t` in UTC as RFC 3339 to the second (sub-second digits dropped so reports compare as
/// strings).
pub fn format_utc(t: OffsetDateTime) -> String {
    let t = t
        .to_offset(time::UtcOffset::UTC)
        .replace_nanosecond(0)
        .unwrap_or(t);
    // Rfc3339 formatting fails only for years outside 0..=9999.
    t.format(&Rfc3339).unwrap_or_else(|_| "unknown".into())
}

/// The start of the current UTC day shifted by `days` (negative: in the past), for
/// certificate validity windows. Cost: one clock read.
pub fn utc_midnight_in(days: i64) -> OffsetDateTime {
    let today = OffsetDateTime::now_utc().replace_time(time::Time::MIDNIGHT);
    today.saturating_add(time::Duration::days(days))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_to_the_second() {
        let t = OffsetDateTime::from_unix_timestamp(1_795_000_000).unwrap()
            + time::Duration::milliseconds(250);
        assert_eq!(format_utc(t), "2026-11-18T11:06:40Z");
        // Leap day and epoch.
        let leap = OffsetDateTime::from_unix_timestamp(951_782_400).unwrap();
        assert_eq!(format_utc(leap), "2000-02-29T00:00:00Z");
        assert_eq!(
            format_utc(OffsetDateTime::UNIX_EPOCH),
            "1970-01-01T00:00:00Z"
        );
    }

    #[test]
    fn now_parses_back() {
        let s = utc_now();
        let t = OffsetDateTime::parse(&s, &Rfc3339).unwrap();
        assert!(t.year() >= 2024, "{s}");
        assert!(s.ends_with('Z'), "{s}");
    }

    #[test]
    fn midnight_offsets() {
        let a = utc_midnight_in(-1);
        let b = utc_midnight_in(365);
        assert_eq!((b - a).whole_days(), 366);
        assert_eq!(a.time(), time::Time::MIDNIGHT);
    }
}
