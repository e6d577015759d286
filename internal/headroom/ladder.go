package headroom

import "math"

// Ladder is the geometric steps of the search from 1 up to maxK: 1, 1.5,
// 2, 3, 4, 6, 8, 12, 16, ... (each power of two, and 1.5 times it), with
// maxK itself last when it falls between two steps.
func Ladder(maxK float64) []float64 {
	out := []float64{1}
	for p := 1.0; ; p *= 2 {
		for _, k := range []float64{1.5 * p, 2 * p} {
			if k >= maxK-1e-9 {
				if maxK > out[len(out)-1]+1e-9 {
					out = append(out, maxK)
				}
				return out
			}
			out = append(out, k)
		}
	}
}

// roundK rounds a bisection's k to two significant decimals, so that steps
// read as figures a person would ask for.
func roundK(k float64) float64 {
	return math.Round(k*100) / 100
}
