//go:build !cgo

package rule

import "math"

// Without cgo there is no C library to call: Go's own functions, whose last bits may differ
// from the platform libm's, so decorrelated-v2 may differ from herd in its last nanosecond.

func exp2(t float64) float64 { return math.Exp2(t) }

func tanh(x float64) float64 { return math.Tanh(x) }
