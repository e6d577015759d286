package stepcurve

import (
	"math"
	"math/rand/v2"
	"testing"
)

// One reading a side: a ratio within the noise assumed (15%) is "~",
// one beyond it is not, and either side's spread widens the floor.
func TestCompare(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b []float64
		same bool
	}{
		{"one reading each, 1.10: within the noise assumed", []float64{1000}, []float64{1100}, true},
		{"one reading each, 1.30", []float64{1000}, []float64{1300}, false},
		{"one reading each, 0.70", []float64{1000}, []float64{700}, false},
		{"three each, apart by 20%, quiet", []float64{1000, 1010, 990}, []float64{1200, 1210, 1190}, false},
		{"three each, apart by 20%, but b spans 50%", []float64{1000, 1010, 990}, []float64{1000, 1200, 1500}, true},
		{"three each, apart by 8%: under the 10% floor", []float64{1000, 1001, 999}, []float64{1080, 1081, 1079}, true},
		{"identical", []float64{5, 5, 5}, []float64{5, 5, 5}, true},
	} {
		if d := Compare(tc.a, tc.b, Options{}); d.Same != tc.same {
			t.Errorf("%s: %+v, want same %v", tc.name, d, tc.same)
		}
	}
}

// The false-positive rate of Compare on identical curves (A/A) and its
// power against a 20% difference, three readings a side with 3% noise,
// printed and bounded.
func TestCompareRates(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	draw := func(m float64) []float64 {
		return []float64{m * math.Exp(rng.NormFloat64()*0.03), m * math.Exp(rng.NormFloat64()*0.03), m * math.Exp(rng.NormFloat64()*0.03)}
	}
	const n = 20000
	fp, told := 0, 0
	for range n {
		if !Compare(draw(1000), draw(1000), Options{}).Same {
			fp++
		}
		if d := Compare(draw(1000), draw(800), Options{}); !d.Same && d.Ratio < 1 {
			told++
		}
	}
	t.Logf("A/A: not ~ in %.3f%% of %d; a 20%% difference told in %.1f%%", 100*float64(fp)/n, n, 100*float64(told)/n)
	if float64(fp)/n > 0.01 || float64(told)/n < 0.95 {
		t.Errorf("false positives %.3f%% (want at most 1%%), power %.1f%% (want at least 95%%)", 100*float64(fp)/n, 100*float64(told)/n)
	}
}

// FindBreak on readings of a noiseless margin that crosses 0 at 10: the
// bracket holds it, and a level just past 0 is not called broken when Z
// asks for more than the noise.
func TestFindBreak(t *testing.T) {
	var rs []Reading
	for _, x := range []float64{1, 2, 4, 8, 16, 32} {
		m := math.Log(x/10) / math.Log(2) // 0 at 10, -1 at 5, +1 at 20
		if x == 1 {
			m = -1
		}
		rs = append(rs, Reading{X: x, Margin: m, Held: m <= 0})
	}
	b := FindBreak(rs, BreakOptions{Ref: 1})
	if !b.Found || b.AskedLo != 8 || b.AskedHi != 16 || b.Lo > 10 || b.Hi < 10 || math.Abs(b.Estimate-10) > 0.5 {
		t.Errorf("break %+v, want the bracket 8-16 around 10", b)
	}
	// 16's margin is 0.68: beyond 2 standard errors of a noise of 0.15
	// (0.42 with one reading at each end); with a noise of 0.5, not.
	if b := FindBreak(rs, BreakOptions{Ref: 1, Z: 2}); !b.Found || b.AskedHi != 16 {
		t.Errorf("with Z 2: %+v, want 16 broken", b)
	}
	if b := FindBreak(rs, BreakOptions{Ref: 1, Z: 2, NoiseFloor: 0.5}); !b.Found || b.AskedHi != 32 {
		t.Errorf("with Z 2 and a noise of 0.5: %+v, want 32 the first broken beyond the noise", b)
	}
	if b := FindBreak(rs[:4], BreakOptions{Ref: 1}); b.Found || b.Lo != 8 {
		t.Errorf("nothing broke: %+v, want at least 8", b)
	}
}
