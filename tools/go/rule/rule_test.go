package rule

import (
	"math"
	"strings"
	"testing"

	"herdtools/rng"
)

const ms = 1_000_000

func mustBuild(t *testing.T, n Name, p Params) Rule {
	t.Helper()
	r, err := Build(n, p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func defaults() Params {
	return Params{Base: 100 * ms, Cap: 20_000 * ms, Pause: 1_000 * ms, Multiplier: 1.6, Jitter: 0.2}
}

func schedule(r Rule, seed uint64, n int) []string {
	g := rng.New(seed)
	var s State
	out := make([]string, n)
	for i := range out {
		out[i] = FormatMs(r.Pause(&s, g))
	}
	return out
}

func TestGrowSaturatesAtCapForHugeK(t *testing.T) {
	cases := []struct {
		base, cap uint64
		k         uint32
		want      uint64
	}{
		{100, 20000, 1, 100}, {100, 20000, 8, 12800}, {100, 20000, 9, 20000},
		{100, 20000, 1_000_000_000, 20000}, {100, 20000, math.MaxUint32, 20000},
		{1, math.MaxUint64, 64, 1 << 63}, {1, math.MaxUint64, 65, math.MaxUint64},
		{3, math.MaxUint64, 64, math.MaxUint64},
	}
	for _, c := range cases {
		if got := Grow(c.base, c.cap, c.k); got != c.want {
			t.Errorf("Grow(%d, %d, %d) = %d, want %d", c.base, c.cap, c.k, got, c.want)
		}
	}
}

func TestExponentialDoublesToTheCap(t *testing.T) {
	got := strings.Join(schedule(mustBuild(t, Exponential, defaults()), 0, 12), " ")
	want := "100 200 400 800 1600 3200 6400 12800 20000 20000 20000 20000"
	if got != want {
		t.Fatalf("got %s", got)
	}
}

// Check values printed by `herd rules --rule R --failures 6 --seed 7` (defaults otherwise).
func TestCheckValuesOfHerdRules(t *testing.T) {
	want := map[Name]string{
		Full:           "38.982975 3.357658 360.304273 466.344235 723.907032 798.180871",
		Equal:          "69.491487 101.678829 380.152137 633.172117 1161.953516 1999.090435",
		Decorrelated:   "177.96595 107.284404 299.836651 566.058571 823.081648 690.964373",
		Grpc:           "95.593189 129.07445 297.037893 423.187299 642.892928 943.479963",
		DecorrelatedV2: "79.356134 60.142036 392.772682 322.784401 708.102936 1153.389874",
	}
	for n, w := range want {
		if got := strings.Join(schedule(mustBuild(t, n, defaults()), 7, 6), " "); got != w {
			t.Errorf("%v: got %s, want %s", n, got, w)
		}
	}
}

// Every pause within its rule's bounds, at every failure count up to and past the cap, for
// many seeds and parameter sets: the invariants of crates/herd/src/rule.rs.
func TestEveryPauseWithinItsBounds(t *testing.T) {
	sets := []Params{
		defaults(),
		{Base: 2_500_000, Cap: 7_777_123_456, Pause: 300_000, Multiplier: 2.3, Jitter: 0.75},
		{Base: 1, Cap: math.MaxUint64, Pause: 1, Multiplier: 1, Jitter: 1},
	}
	for _, p := range sets {
		for _, n := range All {
			r := mustBuild(t, n, p)
			for seed := uint64(0); seed < 50; seed++ {
				g := rng.New(seed)
				var s State
				current := p.Base
				for k := uint32(1); k <= 100; k++ {
					memory := s.Memory
					pause := r.Pause(&s, g)
					if pause > r.MaxPause() {
						t.Fatalf("%v k=%d: %d above the cap", n, k, pause)
					}
					grown := Grow(p.Base, p.Cap, k)
					ok := true
					switch n {
					case Immediate:
						ok = pause == 0
					case Constant:
						ok = pause == p.Pause
					case Exponential:
						ok = pause == grown
					case Full:
						ok = pause <= grown
					case Equal:
						ok = pause >= grown-grown/2 && pause <= grown
					case Decorrelated:
						previous := p.Base
						if k > 1 {
							previous = memory
						}
						ok = pause >= p.Base && pause <= minU64(satMul3(previous), p.Cap) && s.Memory == pause
					case Grpc:
						lo := ToU64(float64(current) * (1 - p.Jitter))
						hi := ToU64(float64(current) * (1 + p.Jitter))
						ok = pause+1 >= minU64(lo, p.Cap) && pause <= minU64(hi, p.Cap)
						current = minU64(ToU64(float64(current)*p.Multiplier), p.Cap)
					}
					if !ok {
						t.Fatalf("%v seed %d k=%d: pause %d out of bounds (g=%d)", n, seed, k, pause, grown)
					}
				}
			}
		}
	}
}

func TestSpreadBelowCapOnlyAtTheCap(t *testing.T) {
	r, err := mustBuild(t, Exponential, Params{Base: 1000 * ms, Cap: 8000 * ms}).SpreadBelowCap(0.25)
	if err != nil {
		t.Fatal(err)
	}
	g := rng.New(1)
	var s State
	below := false
	for k := 1; k <= 53; k++ {
		pause := r.Pause(&s, g)
		if k <= 3 && pause != uint64(1000*ms)<<(k-1) {
			t.Fatalf("k=%d: %d spread below the cap", k, pause)
		}
		if k > 3 && (pause < 6000*ms || pause > 8000*ms) {
			t.Fatalf("k=%d: %d outside [6 s, 8 s]", k, pause)
		}
		below = below || (k > 3 && pause < 8000*ms)
	}
	if !below {
		t.Fatal("no pause was spread")
	}
	if _, err := r.SpreadBelowCap(1.5); err == nil {
		t.Fatal("a fraction above 1 was accepted")
	}
}

func TestToU64IsRustsSaturatingCast(t *testing.T) {
	cases := map[float64]uint64{
		math.NaN(): 0, -1: 0, math.Inf(-1): 0, 0.999: 0, 1.5: 1,
		18446744073709549568.0: 18446744073709549568, 18446744073709551616.0: math.MaxUint64,
		math.Inf(1): math.MaxUint64,
	}
	for x, want := range cases {
		if got := ToU64(x); got != want {
			t.Errorf("ToU64(%v) = %d, want %d", x, got, want)
		}
	}
}

func TestMillisAndFormat(t *testing.T) {
	if ns, _ := Millis("base_ms", 2.5); ns != 2_500_000 {
		t.Fatal(ns)
	}
	if ns, _ := Millis("base_ms", 0.0000005); ns != 1 {
		t.Fatalf("half a nanosecond rounds away from zero, got %d", ns)
	}
	for _, bad := range []float64{-1, math.NaN(), math.Inf(1), 1.5e12} {
		if _, err := Millis("--base-ms", bad); err == nil || !strings.Contains(err.Error(), "--base-ms") {
			t.Fatalf("%v: %v", bad, err)
		}
	}
	for ns, want := range map[uint64]string{100 * ms: "100", 1_234_500: "1.2345", 1: "0.000001", 37_500_000: "37.5"} {
		if got := FormatMs(ns); got != want {
			t.Errorf("FormatMs(%d) = %s, want %s", ns, got, want)
		}
	}
}

func TestBuildNamesTheBadParameter(t *testing.T) {
	p := defaults()
	cases := []struct {
		n    Name
		edit func(*Params)
		want string
	}{
		{Full, func(p *Params) { p.Base = 0 }, "base must be longer than zero"},
		{Constant, func(p *Params) { p.Pause = 0 }, "pause must be longer than zero"},
		{Equal, func(p *Params) { p.Cap = 50 * ms }, "cap (50 ms) must be at least base (100 ms)"},
		{Grpc, func(p *Params) { p.Multiplier = 0.5 }, "multiplier must be a finite number >= 1 (> 0 for grpc-retry and randomized), got 0.5"},
		{Grpc, func(p *Params) { p.Jitter = math.NaN() }, "jitter must be a fraction in [0, 1], got NaN"},
	}
	for _, c := range cases {
		q := p
		c.edit(&q)
		if _, err := Build(c.n, q); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want %q", c.n, err, c.want)
		}
	}
	if _, err := Parse("FULL"); err != nil {
		t.Fatal(err)
	}
	if _, err := Parse("nope"); err == nil || !strings.Contains(err.Error(), "decorrelated-v2") {
		t.Fatal(err)
	}
}
