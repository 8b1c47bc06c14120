//go:build cgo

package rule

// decorrelated-v2 calls exp2 and tanh; herd (Rust's f64::exp2 and f64::tanh) and the Python
// port call the C library's, whose last bits differ from Go's own math.Exp2 and math.Tanh.
// Calling the same libm makes the three agree bit for bit on one machine (docs/rng.md).

// #cgo LDFLAGS: -lm
// #include <math.h>
import "C"

func exp2(t float64) float64 { return float64(C.exp2(C.double(t))) }

func tanh(x float64) float64 { return float64(C.tanh(C.double(x))) }
