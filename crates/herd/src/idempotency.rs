//! Idempotency: one key per logical call, and what a non-idempotent call may retry.
//!
//! A retry is only safe if doing the work twice is harmless. Reads are; "charge the card" is
//! not, unless the server can tell a retry from a new request. The usual answer (Stripe, the
//! IETF `Idempotency-Key` draft) is a key that the client makes up once per logical call and
//! sends with *every* attempt of it: the server stores the result under the key and replays
//! it for a retry. herd makes that key and hands it to the operation in its [`Attempt`], so an
//! HTTP client can put it in an `Idempotency-Key` header.
//!
//! Sending a key is not proof that the server deduplicates by it. A call marked
//! non-idempotent (see [`PolicyBuilder::idempotent`](crate::policy::PolicyBuilder::idempotent))
//! is retried after an ambiguous failure (a timeout, a 500, a reset connection) only when you
//! say the server deduplicates by key
//! ([`PolicyBuilder::server_deduplicates`](crate::policy::PolicyBuilder::server_deduplicates));
//! otherwise only after failures that *prove* the request was not processed: a refused
//! connection, a 429 ([`Verdict::proves_not_processed`](crate::classify::Verdict)).
//!
//! Keys leave the process, so they must not be guessable or collide across clients: the
//! retry loops draw them with [`IdempotencyKey::generate`], from ChaCha8 keyed by a secret
//! from the operating system's randomness, one stream per call (as `rand`'s OS-seeded
//! generators would), and only when the key is first read. [`IdempotencyKey::random`] draws from a generator you pass, such as the
//! deterministic [`SplitMix64`](crate::rng::SplitMix64), for simulations and tests.
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

use std::cell::Cell;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

use crate::rng::Rng;

/// A seed from the OS's randomness. Should the OS refuse, the seed comes from std's
/// `RandomState` keys (themselves OS-seeded where the platform allows) and the time, so key
/// generation never panics.
fn os_seed() -> [u8; 32] {
    let mut seed = [0u8; 32];
    if getrandom::fill(&mut seed).is_err() {
        use std::hash::BuildHasher;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        for (i, chunk) in seed.chunks_mut(8).enumerate() {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u128(nanos);
            h.write_usize(i);
            chunk.copy_from_slice(&h.finish().to_le_bytes());
        }
    }
    seed
}

/// The process's secret: the ChaCha8 key every generated idempotency key is drawn under.
fn secret() -> &'static [u8; 32] {
    static SECRET: OnceLock<[u8; 32]> = OnceLock::new();
    SECRET.get_or_init(os_seed)
}

/// Nonces are handed to threads in blocks, so taking one is a thread-local increment.
const NONCE_BLOCK: u64 = 1 << 20;
static NEXT_BLOCK: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The next nonce of this thread's block, and the block's end (0, 0 before first use).
    static NONCES: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

/// A nonce never handed out before in this process.
#[inline]
fn next_nonce() -> u64 {
    NONCES.with(|cell| {
        let (mut next, mut end) = cell.get();
        if next == end {
            next = NEXT_BLOCK.fetch_add(NONCE_BLOCK, Ordering::Relaxed);
            end = next + NONCE_BLOCK;
        }
        cell.set((next + 1, end));
        next
    })
}

/// The two words of the key with nonce `nonce`: the first 128 bits of ChaCha8's stream
/// `nonce` under the process's secret.
fn drawn_words(nonce: u64) -> (u64, u64) {
    let mut rng = ChaCha8Rng::from_seed(*secret());
    rng.set_stream(nonce);
    (rng.next_u64(), rng.next_u64())
}

/// A random key naming one logical call, the same for all its attempts. Displays as a
/// version-4 UUID (`xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx`).
///
/// A key from [`generate`](Self::generate) is drawn when it is first *read* (displayed,
/// compared, hashed, turned into bits), not when the call starts: a call that never sends
/// its key pays one thread-local increment for it, not a ChaCha block.
#[derive(Clone, Copy)]
pub struct IdempotencyKey {
    repr: Repr,
}

#[derive(Clone, Copy)]
enum Repr {
    /// Known bits (drawn from a caller's generator, or given).
    Bits { hi: u64, lo: u64 },
    /// The OS-seeded key of this nonce, drawn on demand.
    Drawn { nonce: u64 },
}

impl IdempotencyKey {
    /// A fresh, unguessable key for a call whose key leaves the process: 122 bits of ChaCha8
    /// keyed by a secret from the operating system's randomness, on a stream no other key of
    /// the process uses. What the retry loops and the tower layer use.
    #[must_use]
    #[inline]
    pub fn generate() -> Self {
        Self {
            repr: Repr::Drawn {
                nonce: next_nonce(),
            },
        }
    }

    /// A fresh key drawn from `rng` (122 random bits, UUID version and variant bits set). With
    /// a seeded generator the keys are reproducible: for simulations and tests, not for keys
    /// sent to a real server (use [`generate`](Self::generate)).
    #[must_use]
    #[inline]
    pub fn random<R: Rng + ?Sized>(rng: &mut R) -> Self {
        let hi = rng.next_u64();
        let lo = rng.next_u64();
        Self::from_words(hi, lo)
    }

    #[inline]
    const fn from_words(hi: u64, lo: u64) -> Self {
        let (hi, lo) = uuid_v4(hi, lo);
        Self {
            repr: Repr::Bits { hi, lo },
        }
    }

    /// A key with the given value (for keys that come from elsewhere, and tests).
    #[must_use]
    pub const fn from_u128(value: u128) -> Self {
        Self {
            repr: Repr::Bits {
                hi: (value >> 64) as u64,
                lo: value as u64,
            },
        }
    }

    /// The key's 128 bits.
    #[must_use]
    pub fn as_u128(self) -> u128 {
        let (hi, lo) = match self.repr {
            Repr::Bits { hi, lo } => (hi, lo),
            Repr::Drawn { nonce } => {
                let (hi, lo) = drawn_words(nonce);
                uuid_v4(hi, lo)
            }
        };
        (u128::from(hi) << 64) | u128::from(lo)
    }
}

/// Random words with a version-4 UUID's version and variant bits set.
#[inline]
const fn uuid_v4(hi: u64, lo: u64) -> (u64, u64) {
    // version 4 in bits 76..80 of the UUID, variant 0b10 in bits 62..64
    (
        (hi & !(0xF << 12)) | (0x4 << 12),
        (lo & !(0x3 << 62)) | (0x2 << 62),
    )
}

impl PartialEq for IdempotencyKey {
    fn eq(&self, other: &Self) -> bool {
        match (self.repr, other.repr) {
            (Repr::Drawn { nonce: a }, Repr::Drawn { nonce: b }) if a == b => true,
            _ => self.as_u128() == other.as_u128(),
        }
    }
}

impl Eq for IdempotencyKey {}

impl Hash for IdempotencyKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_u128().hash(state);
    }
}

impl fmt::Debug for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IdempotencyKey({self})")
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
#[non_exhaustive]
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

    #[test]
    fn a_generated_key_reads_the_same_every_time_and_differs_from_every_other() {
        let keys: Vec<IdempotencyKey> = (0..2000).map(|_| IdempotencyKey::generate()).collect();
        let a = keys[0];
        assert_eq!(a.as_u128(), a.as_u128());
        assert_eq!(a.to_string(), a.to_string());
        let copy = a;
        assert_eq!(copy, a);
        assert_eq!(IdempotencyKey::from_u128(a.as_u128()), a, "equal by value");
        let distinct: std::collections::HashSet<u128> = keys.iter().map(|k| k.as_u128()).collect();
        assert_eq!(distinct.len(), keys.len());
        // Keys from other threads take other nonces.
        let others: Vec<u128> = (0..4)
            .map(|_| std::thread::spawn(|| IdempotencyKey::generate().as_u128()))
            .map(|t| t.join().unwrap())
            .collect();
        assert!(others.iter().all(|k| !distinct.contains(k)));
    }

    #[test]
    fn generated_keys_come_from_the_os_not_a_fixed_seed() {
        let a = IdempotencyKey::generate();
        let b = IdempotencyKey::generate();
        assert_ne!(a, b);
        assert_eq!(a.to_string().as_bytes()[14], b'4');
        // Another thread has its own OS seed: no shared or default seed.
        let c = std::thread::spawn(IdempotencyKey::generate).join().unwrap();
        assert!(c != a && c != b);
        // Not the SplitMix64 stream of any small seed a fixed default could use.
        for seed in 0..1000 {
            assert_ne!(a, IdempotencyKey::random(&mut SplitMix64::new(seed)));
        }
    }
}
