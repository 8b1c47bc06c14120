//! gRPC status codes and proposal A6's retry rules: a call is retried only when its status
//! is one of `retryableStatusCodes` (UNAVAILABLE by default), and `grpc-retry-pushback-ms`
//! beside the status sets the pause (a negative or malformed value means "do not retry").

use std::fmt;

use http::{HeaderMap, HeaderValue};

use crate::classify::Verdict;
use crate::retry_after::{Pushback, pushback_from_headers};

/// A gRPC status code (`0` OK … `16` UNAUTHENTICATED).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GrpcCode(u8);

impl GrpcCode {
    /// 1: the call was cancelled.
    pub const CANCELLED: Self = Self(1);
    /// 2: unknown error.
    pub const UNKNOWN: Self = Self(2);
    /// 4: the deadline passed.
    pub const DEADLINE_EXCEEDED: Self = Self(4);
    /// 8: a resource (quota) is exhausted.
    pub const RESOURCE_EXHAUSTED: Self = Self(8);
    /// 10: aborted (e.g. a transaction conflict).
    pub const ABORTED: Self = Self(10);
    /// 13: internal error.
    pub const INTERNAL: Self = Self(13);
    /// 14: the service is unavailable; the usual retryable code.
    pub const UNAVAILABLE: Self = Self(14);

    /// The code for a number from 1 to 16 (OK, 0, is not a failure and cannot be retried).
    ///
    /// # Errors
    ///
    /// [`InvalidGrpcCode`] for 0 or a number above 16.
    pub const fn new(code: u8) -> Result<Self, InvalidGrpcCode> {
        if code == 0 || code > 16 {
            Err(InvalidGrpcCode(code))
        } else {
            Ok(Self(code))
        }
    }

    /// The number.
    #[must_use]
    pub const fn get(self) -> u8 {
        self.0
    }
}

/// A number that is not a retryable gRPC status code (0 is OK; codes stop at 16).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct InvalidGrpcCode(pub u8);

impl fmt::Display for InvalidGrpcCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} is not a retryable gRPC status code (use 1 to 16)",
            self.0
        )
    }
}

impl std::error::Error for InvalidGrpcCode {}

/// The set of gRPC codes worth retrying (A6's `retryableStatusCodes`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GrpcCodes(u32);

impl Default for GrpcCodes {
    /// UNAVAILABLE only.
    fn default() -> Self {
        Self::none().with(GrpcCode::UNAVAILABLE)
    }
}

impl GrpcCodes {
    /// No code is retryable.
    #[must_use]
    pub const fn none() -> Self {
        Self(0)
    }

    /// This set with `code` added.
    #[must_use]
    pub const fn with(self, code: GrpcCode) -> Self {
        Self(self.0 | (1 << code.0))
    }

    /// Whether `code` (a raw number) is in the set.
    #[must_use]
    pub const fn contains(self, code: u8) -> bool {
        code > 0 && code <= 16 && self.0 & (1 << code) != 0
    }
}

/// The `grpc-timeout` value for a time limit: at most 8 digits and a unit, in the finest
/// unit that fits (milliseconds up to about 27 hours, then seconds, minutes, hours), rounded
/// down so the server never believes it has longer than the client waits.
pub(crate) fn grpc_timeout(limit: std::time::Duration) -> HeaderValue {
    const MAX: u128 = 99_999_999;
    let ms = limit.as_millis();
    let text = if ms <= MAX {
        format!("{ms}m")
    } else if ms / 1000 <= MAX {
        format!("{}S", ms / 1000)
    } else if ms / 60_000 <= MAX {
        format!("{}M", ms / 60_000)
    } else {
        format!("{}H", (ms / 3_600_000).min(MAX))
    };
    HeaderValue::from_str(&text).unwrap_or(HeaderValue::from_static("99999999H"))
}

/// The time limit a `grpc-timeout` value states, if it is well formed.
pub(crate) fn parse_grpc_timeout(value: &HeaderValue) -> Option<std::time::Duration> {
    let text = value.to_str().ok()?;
    if text.len() < 2 || text.len() > 9 {
        return None;
    }
    let (digits, unit) = text.split_at(text.len() - 1);
    let n: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => std::time::Duration::from_secs(n.saturating_mul(3600)),
        "M" => std::time::Duration::from_secs(n.saturating_mul(60)),
        "S" => std::time::Duration::from_secs(n),
        "m" => std::time::Duration::from_millis(n),
        "u" => std::time::Duration::from_micros(n),
        "n" => std::time::Duration::from_nanos(n),
        _ => return None,
    })
}

/// Sets `grpc-timeout` to `limit` unless the request already asks for less.
pub(crate) fn limit_grpc_timeout(headers: &mut HeaderMap, limit: std::time::Duration) {
    let asked = headers.get("grpc-timeout").and_then(parse_grpc_timeout);
    if asked.is_none_or(|asked| asked > limit) {
        headers.insert("grpc-timeout", grpc_timeout(limit));
    }
}

/// The verdict on a gRPC status value and the map it came in: `None` for OK, transient for a
/// retryable code (with the pushback as the server's delay), permanent for any other code or
/// an unreadable status; a negative or malformed pushback stops.
pub(crate) fn grpc_verdict(
    status: &HeaderValue,
    map: &HeaderMap,
    codes: &GrpcCodes,
) -> Option<Verdict> {
    let code = std::str::from_utf8(status.as_bytes())
        .ok()
        .and_then(|s| s.trim().parse::<u8>().ok());
    match code {
        Some(0) => None,
        Some(code) if codes.contains(code) => Some(match pushback_from_headers(map) {
            Some(Pushback::Stop) => Verdict::pushback_stop(),
            Some(Pushback::After(delay)) => Verdict::transient().after(delay),
            None => Verdict::transient(),
        }),
        _ => Some(Verdict::permanent()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(status: &str, pushback: Option<&str>, codes: GrpcCodes) -> Option<Verdict> {
        let mut map = HeaderMap::new();
        if let Some(p) = pushback {
            map.insert("grpc-retry-pushback-ms", p.parse().unwrap());
        }
        grpc_verdict(&status.parse().unwrap(), &map, &codes)
    }

    #[test]
    fn ok_succeeds_unavailable_retries_others_are_permanent_by_default() {
        assert_eq!(verdict("0", None, GrpcCodes::default()), None);
        let judged = |status| verdict(status, None, GrpcCodes::default()).unwrap();
        assert!(judged("14").is_transient());
        for other in ["13", "x", "99"] {
            assert!(judged(other).is_permanent(), "{other}");
        }
    }

    #[test]
    fn retryable_codes_are_configurable() {
        let codes = GrpcCodes::none().with(GrpcCode::RESOURCE_EXHAUSTED);
        assert!(verdict("8", None, codes).unwrap().is_transient());
        assert!(verdict("14", None, codes).unwrap().is_permanent());
    }

    #[test]
    fn pushback_sets_the_delay_or_stops() {
        let v = verdict("14", Some("250"), GrpcCodes::default()).unwrap();
        assert_eq!(
            v.server_delay(),
            Some(std::time::Duration::from_millis(250))
        );
        assert!(
            verdict("14", Some("-1"), GrpcCodes::default())
                .unwrap()
                .is_pushback_stop()
        );
        assert!(
            verdict("14", Some("soon"), GrpcCodes::default())
                .unwrap()
                .is_pushback_stop()
        );
    }

    #[test]
    fn grpc_timeout_fits_eight_digits_and_rounds_down() {
        use std::time::Duration;
        assert_eq!(grpc_timeout(Duration::from_micros(2500)), "2m");
        assert_eq!(grpc_timeout(Duration::from_secs(5)), "5000m");
        assert_eq!(grpc_timeout(Duration::from_secs(200_000)), "200000S");
        assert_eq!(grpc_timeout(Duration::MAX), "99999999H");
        for value in ["5000m", "200000S", "3M", "1H", "7u", "9n"] {
            let parsed = parse_grpc_timeout(&value.parse().unwrap()).unwrap();
            assert!(!parsed.is_zero() || value.ends_with('n'), "{value}");
        }
        for bad in ["", "m", "5", "5x", "-5m", "123456789m"] {
            assert_eq!(
                parse_grpc_timeout(&HeaderValue::from_static(bad)),
                None,
                "{bad:?}"
            );
        }
    }

    #[test]
    fn the_request_keeps_a_shorter_grpc_timeout() {
        use std::time::Duration;
        let mut headers = HeaderMap::new();
        headers.insert("grpc-timeout", "100m".parse().unwrap());
        limit_grpc_timeout(&mut headers, Duration::from_secs(1));
        assert_eq!(headers["grpc-timeout"], "100m");
        limit_grpc_timeout(&mut headers, Duration::from_millis(40));
        assert_eq!(headers["grpc-timeout"], "40m");
    }

    #[test]
    fn codes_out_of_range_are_rejected() {
        assert_eq!(GrpcCode::new(0), Err(InvalidGrpcCode(0)));
        assert_eq!(GrpcCode::new(17), Err(InvalidGrpcCode(17)));
        assert_eq!(GrpcCode::new(14), Ok(GrpcCode::UNAVAILABLE));
    }
}
