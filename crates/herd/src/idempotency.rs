//! Idempotency: one key per logical call, and what a non-idempotent call may retry.
//!
//! A retry is only safe if doing the work twice is harmless. Reads are; "charge the card" is
//! not, unless the server can tell a retry from a new request. The usual answer (Stripe, the
//! IETF `Idempotency-Key` draft) is a key that the client makes up once per logical call and
//! sends with *every* attempt of it: the server stores the result under the key and replays
//! it for a retry. herd makes that key and hands it to the operation in its [`Attempt`], so an
//! HTTP client can put it in an `Idempotency-Key` header.
//!
//! A call marked non-idempotent (see
//! [`PolicyBuilder::idempotent`](crate::policy::PolicyBuilder::idempotent)) is retried only
//! after failures that *prove* the request was not processed: a refused connection, a 429,
//! a 503 with `Retry-After` ([`Verdict::proves_not_processed`](crate::classify::Verdict)).
//! Never after a timeout: the server may have done the work and only the answer was lost.
//!
//! # Examples
//!
//! ```
//! use herd::idempotency::IdempotencyKey;
//! use herd::rng::SplitMix64;
//!
//! let key = IdempotencyKey::random(&mut SplitMix64::new(7));
//! let text = key.to_string();
//! assert_eq!(text.len(), 36); // a version-4 UUID
//! assert_eq!(&text[14..15], "4");
//! ```

use std::fmt;
use std::time::Duration;

use crate::rng::Rng;

/// A random key naming one logical call, the same for all its attempts. Displays as a
/// version-4 UUID (`xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IdempotencyKey {
    // Two words rather than a u128: the key is copied into every `Attempt`, and 64-bit
    // halves keep those copies in general-purpose registers on the success path.
    hi: u64,
    lo: u64,
}

impl IdempotencyKey {
    /// A fresh key drawn from `rng` (122 random bits, UUID version and variant bits set).
    #[must_use]
    #[inline]
    pub fn random<R: Rng + ?Sized>(rng: &mut R) -> Self {
        let hi = rng.next_u64();
        let lo = rng.next_u64();
        Self {
            // version 4 in bits 76..80 of the UUID, variant 0b10 in bits 62..64
            hi: (hi & !(0xF << 12)) | (0x4 << 12),
            lo: (lo & !(0x3 << 62)) | (0x2 << 62),
        }
    }

    /// A key with the given value (for keys that come from elsewhere, and tests).
    #[must_use]
    pub const fn from_u128(value: u128) -> Self {
        Self {
            hi: (value >> 64) as u64,
            lo: value as u64,
        }
    }

    /// The key's 128 bits.
    #[must_use]
    pub const fn as_u128(self) -> u128 {
        ((self.hi as u128) << 64) | self.lo as u128
    }
}

impl fmt::Display for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.as_u128();
        write!(
            f,
            "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
            (v >> 96) as u32,
            (v >> 80) as u16,
            (v >> 64) as u16,
            (v >> 48) as u16,
            (v & 0xFFFF_FFFF_FFFF) as u64
        )
    }
}

/// What the operation learns about the attempt it is making.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attempt {
    /// 1 for the first attempt, 2 for the first retry, …
    pub number: u32,
    /// The logical call's key, the same for every attempt.
    pub key: IdempotencyKey,
    /// Time left before the call's deadline, if it has one. Pass it on (as a gRPC deadline, a
    /// socket timeout) so the attempt does not outlive the call.
    pub remaining: Option<Duration>,
}

impl Attempt {
    /// Whether this is a retry (not the first attempt).
    #[must_use]
    pub const fn is_retry(&self) -> bool {
        self.number > 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    #[test]
    fn keys_are_v4_uuids_and_differ() {
        let mut rng = SplitMix64::new(1);
        let a = IdempotencyKey::random(&mut rng);
        let b = IdempotencyKey::random(&mut rng);
        assert_ne!(a, b);
        for k in [a, b] {
            let s = k.to_string();
            let parts: Vec<_> = s.split('-').map(str::len).collect();
            assert_eq!(parts, [8, 4, 4, 4, 12]);
            assert!(s.as_bytes()[14] == b'4');
            assert!(matches!(s.as_bytes()[19], b'8' | b'9' | b'a' | b'b'), "{s}");
        }
    }
}
