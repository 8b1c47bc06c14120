//! The server's own delay: `Retry-After` (RFC 9110 §10.2.3) and gRPC pushback.
//!
//! A server that says "come back in 60 s" knows more than any backoff rule, so its delay is a
//! floor the client never undercuts. But a server's header is input, not trusted
//! configuration: garbage and negative values are ignored and values too large to represent
//! are saturated here; then the [`server_delay`](crate::server_delay) decision stops the
//! call for a delay longer than `max_server_delay` or than the deadline allows, and adds a
//! little jitter so that every client told "60 s" does not return in the same millisecond.
//! Nothing here panics, whatever the header says.
//!
//! Both forms of `Retry-After` are understood:
//!
//! - delta-seconds, `Retry-After: 120`;
//! - an HTTP-date, `Retry-After: Wed, 21 Oct 2026 07:28:00 GMT` (and the two obsolete date
//!   formats), turned into a delay against the wall time the caller passes in, so tests and
//!   the fake clock stay deterministic. A date in the past means "now".
//!
//! gRPC's `grpc-retry-pushback-ms` (proposal A6) is a number of milliseconds; a negative or
//! malformed value means "do not retry".
//!
//! # Examples
//!
//! ```
//! use std::time::{Duration, SystemTime, UNIX_EPOCH};
//! use herd::retry_after::{parse_retry_after, parse_pushback, Pushback};
//!
//! let now = UNIX_EPOCH + Duration::from_secs(1_445_412_480); // Wed, 21 Oct 2015 07:28:00 GMT
//! assert_eq!(parse_retry_after("120", now), Some(Duration::from_secs(120)));
//! assert_eq!(
//!     parse_retry_after("Wed, 21 Oct 2015 07:29:00 GMT", now),
//!     Some(Duration::from_secs(60))
//! );
//! assert_eq!(parse_retry_after("-5", now), None);
//! assert_eq!(parse_retry_after("soon", now), None);
//! assert_eq!(parse_pushback("250"), Pushback::After(Duration::from_millis(250)));
//! assert_eq!(parse_pushback("-1"), Pushback::Stop);
//! ```

use std::time::{Duration, SystemTime};

/// The longest header value examined; anything longer is garbage for both forms.
const MAX_LEN: usize = 64;

/// Parses a `Retry-After` value, either delta-seconds or an HTTP-date, into a delay from
/// `now`.
///
/// Returns `None` for anything that is not one of the two forms (empty, negative, fractional,
/// signed, junk). A number of seconds too large for a `u64` saturates at `u64::MAX` seconds;
/// a date in the past gives zero. Clamping to a sensible maximum is the policy's job.
#[must_use]
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if value.is_empty() || value.len() > MAX_LEN {
        return None;
    }
    if value.bytes().all(|b| b.is_ascii_digit()) {
        // delta-seconds = 1*DIGIT; only overflow can make parse fail here.
        let secs = value.parse::<u64>().unwrap_or(u64::MAX);
        return Some(Duration::from_secs(secs));
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(date.duration_since(now).unwrap_or(Duration::ZERO))
}

/// What a `grpc-retry-pushback-ms` value asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Pushback {
    /// Retry after this delay.
    After(Duration),
    /// Do not retry (a negative or malformed value).
    Stop,
}

/// Parses `grpc-retry-pushback-ms`. Per gRPC proposal A6, a value that is not a non-negative
/// integer is the server asking the client not to retry. Values too large saturate.
#[must_use]
pub fn parse_pushback(value: &str) -> Pushback {
    let value = value.trim();
    if value.is_empty() || value.len() > MAX_LEN || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Pushback::Stop;
    }
    Pushback::After(Duration::from_millis(
        value.parse::<u64>().unwrap_or(u64::MAX),
    ))
}

/// The `Retry-After` delay of a header map, if present and valid. With several values, the
/// first valid one wins; non-ASCII values are ignored.
#[cfg(feature = "http")]
#[must_use]
pub fn retry_after_from_headers(headers: &http::HeaderMap, now: SystemTime) -> Option<Duration> {
    headers
        .get_all(http::header::RETRY_AFTER)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|v| parse_retry_after(v, now))
}

/// The name of gRPC's pushback header.
pub const GRPC_PUSHBACK: &str = "grpc-retry-pushback-ms";

/// The gRPC pushback of a header map, if the header is present. A non-ASCII value counts as
/// malformed ([`Pushback::Stop`]).
#[cfg(feature = "http")]
#[must_use]
pub fn pushback_from_headers(headers: &http::HeaderMap) -> Option<Pushback> {
    let value = headers.get(GRPC_PUSHBACK)?;
    Some(value.to_str().map_or(Pushback::Stop, parse_pushback))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    fn now() -> SystemTime {
        // Sun, 06 Nov 1994 08:49:37 GMT, RFC 9110's example date.
        UNIX_EPOCH + Duration::from_secs(784_111_777)
    }

    #[test]
    fn all_three_date_formats() {
        let later = Some(Duration::from_secs(10));
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:47 GMT", now()),
            later
        );
        assert_eq!(
            parse_retry_after("Sunday, 06-Nov-94 08:49:47 GMT", now()),
            later
        );
        assert_eq!(parse_retry_after("Sun Nov  6 08:49:47 1994", now()), later);
    }

    #[test]
    fn past_dates_mean_now() {
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:00:00 GMT", now()),
            Some(Duration::ZERO)
        );
    }

    #[test]
    fn garbage_never_panics() {
        for bad in [
            "",
            " ",
            "-1",
            "+5",
            "1.5",
            "1e3",
            "0x10",
            "NaN",
            "Sun, 99 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 99999 08:49:37 GMT",
            "\u{0}",
            "💥",
            "5 s",
        ] {
            assert_eq!(parse_retry_after(bad, now()), None, "{bad:?}");
        }
        let long = "9".repeat(100);
        assert_eq!(parse_retry_after(&long, now()), None);
    }

    #[test]
    fn overflowing_seconds_saturate() {
        assert_eq!(
            parse_retry_after("99999999999999999999999", now()),
            Some(Duration::from_secs(u64::MAX))
        );
        assert_eq!(
            parse_retry_after(" 7 ", now()),
            Some(Duration::from_secs(7))
        );
    }

    #[test]
    fn far_future_dates_are_long_but_finite() {
        let d = parse_retry_after("Fri, 31 Dec 9999 23:59:59 GMT", now()).unwrap();
        assert!(d > Duration::from_secs(250_000_000_000));
    }

    #[test]
    fn pushback_forms() {
        assert_eq!(parse_pushback("0"), Pushback::After(Duration::ZERO));
        assert_eq!(parse_pushback("-5"), Pushback::Stop);
        assert_eq!(parse_pushback("abc"), Pushback::Stop);
        assert_eq!(parse_pushback(""), Pushback::Stop);
        assert_eq!(
            parse_pushback("99999999999999999999"),
            Pushback::After(Duration::from_millis(u64::MAX))
        );
    }

    #[cfg(feature = "http")]
    #[test]
    fn header_map_forms() {
        let mut h = http::HeaderMap::new();
        assert_eq!(retry_after_from_headers(&h, now()), None);
        h.append(http::header::RETRY_AFTER, "garbage".parse().unwrap());
        h.append(http::header::RETRY_AFTER, "3".parse().unwrap());
        assert_eq!(
            retry_after_from_headers(&h, now()),
            Some(Duration::from_secs(3))
        );
        h.insert(
            GRPC_PUSHBACK,
            http::HeaderValue::from_bytes(b"\xff").unwrap(),
        );
        assert_eq!(pushback_from_headers(&h), Some(Pushback::Stop));
    }
}
