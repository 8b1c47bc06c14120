package rule

import "math/bits"

// mul128 is the full product of two words, as Rust's u128 multiplication.
func mul128(a, b uint64) (hi, lo uint64) { return bits.Mul64(a, b) }

// div128 divides a 128-bit value by a word; the caller keeps hi < d.
func div128(hi, lo, d uint64) (quo, rem uint64) { return bits.Div64(hi, lo, d) }
