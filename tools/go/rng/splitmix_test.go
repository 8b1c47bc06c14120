package rng

import "testing"

// The published C implementation's outputs: seed 0's first word, and seed 1234567's first five.
func TestReferenceVectors(t *testing.T) {
	if got := New(0).NextU64(); got != 0xE220A8397B1DCDAF {
		t.Fatalf("seed 0: got %#x", got)
	}
	r := New(1234567)
	want := []uint64{
		6457827717110365317, 3203168211198807973, 9817491932198370423,
		4593380528125082431, 16408922859458223821,
	}
	for i, w := range want {
		if got := r.NextU64(); got != w {
			t.Fatalf("draw %d: got %d, want %d", i, got, w)
		}
	}
}

// Derive seeds a generator with the first output of New(seed ^ rotl(stream, 32)).
func TestDeriveIsTheMixedSeed(t *testing.T) {
	for _, c := range []struct{ seed, stream uint64 }{{0, 0}, {1, 1}, {7, 1 << 40}, {^uint64(0), 3}} {
		mixer := New(c.seed ^ (c.stream<<32 | c.stream>>32))
		want := New(mixer.NextU64()).NextU64()
		if got := Derive(c.seed, c.stream).NextU64(); got != want {
			t.Fatalf("%v: got %#x, want %#x", c, got, want)
		}
	}
	// docs/rng.md's check values.
	if got := Derive(1, 1).NextU64(); got != 0x7B863400BC026A40 {
		t.Fatalf("derive(1, 1): %#x", got)
	}
	if got := Derive(7, 4).NextU64(); got != 0x8172296E9634BEE3 {
		t.Fatalf("derive(7, 4): %#x", got)
	}
	if Derive(1, 1).NextU64() == Derive(1, 2).NextU64() {
		t.Fatal("two streams of one seed begin alike")
	}
}

func TestFloatsAreExactAndBelowOne(t *testing.T) {
	if got := unit(0); got != 0 {
		t.Fatal(got)
	}
	if top := unit(^uint64(0)); top >= 1 || top != 1-1.0/float64(uint64(1)<<53) {
		t.Fatalf("largest float %v", top)
	}
	r := New(3)
	for i := 0; i < 100000; i++ {
		if x := r.NextF64(); x < 0 || x >= 1 {
			t.Fatalf("draw %d: %v", i, x)
		}
	}
}

// Six faces, 60 000 throws: each count is Binomial(60 000, 1/6), mean 10 000, sd 91.3;
// ±500 is 5.5 sd, so a fair generator fails this with probability below 2.4e-7 over six faces.
func TestBelowIsUnbiasedOnSmallRanges(t *testing.T) {
	r := New(3)
	var counts [6]int
	for i := 0; i < 60000; i++ {
		counts[r.Below(6)]++
	}
	for _, c := range counts {
		if c < 9500 || c >= 10500 {
			t.Fatalf("%v", counts)
		}
	}
}

func TestRangeInclusiveCoversEdges(t *testing.T) {
	r := New(9)
	if got := r.RangeInclusive(5, 5); got != 5 {
		t.Fatal(got)
	}
	_ = r.RangeInclusive(0, ^uint64(0))
	if x := r.RangeInclusive(10, 3); x < 3 || x > 10 {
		t.Fatal(x)
	}
	var seen [3]bool
	for i := 0; i < 100; i++ {
		seen[r.RangeInclusive(7, 9)-7] = true
	}
	if seen != [3]bool{true, true, true} {
		t.Fatal(seen)
	}
}

// Lemire's rejection: with n = 2^63 + 1 about half the words are rejected, and the answer
// is the high word of the first accepted product.
func TestBelowRejectsTheBiasedWords(t *testing.T) {
	n := uint64(1)<<63 + 1
	r := New(11)
	shadow := New(11)
	for i := 0; i < 1000; i++ {
		got := r.Below(n)
		threshold := -n % n
		var want uint64
		for {
			w := shadow.NextU64()
			hi, lo := mul(w, n)
			if lo >= threshold {
				want = hi
				break
			}
		}
		if got != want || got >= n {
			t.Fatalf("draw %d: got %d, want %d", i, got, want)
		}
	}
}

// mul is the 128-bit product by halves, independent of math/bits.
func mul(a, b uint64) (hi, lo uint64) {
	const mask = 1<<32 - 1
	a0, a1, b0, b1 := a&mask, a>>32, b&mask, b>>32
	w0 := a0 * b0
	t := a1*b0 + w0>>32
	w1, w2 := t&mask, t>>32
	w1 += a0 * b1
	return a1*b1 + w2 + w1>>32, a * b
}
