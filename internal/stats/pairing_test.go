package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// Pairing each candidate round with its neighbouring control round
// (issue 76 item 4), measured on synthetic rounds at one look: the
// interval's own rates (the verdict clears a rule on PairedInterval at a
// fifth of its level, TestVerdictPairedDesigns). Rounds run in
// rehearse's order (A B B A A B B A ...), so each candidate round has a
// control round beside it. A round's log figure is a drift shared by
// whatever runs at that time (AR(1) from round to round, correlation
// rho, stationary sd drift) plus the round's own noise (sd own).
//
// What it shows (the table it logs): every round is in one pair, so the
// paired estimate is the unpaired one, and its true spread is the same;
// pairing changes only the noise measured. Where a slow drift dominates
// (rho 0.9), each side's spread holds drift that the ABBA order already
// cancels: the unpaired t-interval is too wide (A/A 0.024 at 8 rounds for
// a 90% interval) and the paired one is right (0.096) and a third
// narrower. Where the drift moves fast (rho 0.5), the paired interval
// calls identical sides changed in 11-13% of trials at 90%: adjacent
// pairs are not independent, and pairing would make the verdict more
// trigger-happy. Without drift pairing halves the degrees of freedom and
// widens the interval. The rank interval the verdict reads is the most
// conservative of the three everywhere (A/A 0.013-0.06), and the least
// powerful (a 1.2x at 5 rounds a side, rounds 10% apart: 0.65 against
// the unpaired t's 0.85).
func TestPairingNeighbours(t *testing.T) {
	trials := trialsOf(2000)
	type scenario struct {
		name            string
		drift, rho, own float64
	}
	scenarios := []scenario{
		{"no drift, rounds 10% apart", 0, 0, 0.10},
		{"drift 10% (rho 0.9), own 3%", 0.10, 0.9, 0.03},
		{"drift 10% (rho 0.5), own 5%", 0.10, 0.5, 0.05},
		{"drift 5% (rho 0.9), own 10%", 0.05, 0.9, 0.10},
	}
	var table strings.Builder
	fmt.Fprintf(&table, "%-28s %6s  %9s  %9s %9s  %7s %7s %7s  %7s %7s %7s\n", "scenario", "rounds",
		"sd true", "half unp", "half pair", "AA unp", "AA pair", "AA rank", "1.2x un", "1.2x pa", "1.2x rk")
	for si, s := range scenarios {
		for _, n := range []int{3, 5, 8} {
			r := rand.New(rand.NewPCG(79, uint64(100*si+n)))
			var sum, sum2, halfU, halfP float64
			var fpU, fpP, fpR, pwU, pwP, pwR int
			for range trials {
				for _, shift := range []float64{0, math.Log(1.2)} {
					c, k, d := abbaRounds(r, n, s.drift, s.rho, s.own, shift)
					u, uw := unpairedT(c, k, 0.10)
					p, pw := pairedT(d, 0.10)
					if math.Abs(u-p) > 1e-9 {
						// Every round is in one pair: the mean of
						// the pairs' differences is the difference
						// of the means. Pairing changes the noise
						// measured, never the estimate.
						t.Fatalf("%s, %d rounds: paired estimate %v, unpaired %v", s.name, n, p, u)
					}
					e := Effect(expAll(c), expAll(k), Options{Alpha: 0.10})
					if shift == 0 {
						sum, sum2, halfU, halfP = sum+u, sum2+u*u, halfU+uw, halfP+pw
						fpU += b2i(math.Abs(u) > uw)
						fpP += b2i(math.Abs(p) > pw)
						fpR += b2i(e.RankInterval && (e.Low > 1 || e.High < 1))
					} else {
						pwU += b2i(u-uw > 0)
						pwP += b2i(p-pw > 0)
						pwR += b2i(e.RankInterval && e.Low > 1)
					}
				}
			}
			tr := float64(trials)
			sd := math.Sqrt(sum2/tr - (sum/tr)*(sum/tr))
			fmt.Fprintf(&table, "%-28s %6d  %9.4f  %9.4f %9.4f  %7.3f %7.3f %7.3f  %7.3f %7.3f %7.3f\n", s.name, n, sd, halfU/tr, halfP/tr,
				float64(fpU)/tr, float64(fpP)/tr, float64(fpR)/tr, float64(pwU)/tr, float64(pwP)/tr, float64(pwR)/tr)
			lim := 0.10 + 4*math.Sqrt(0.09/tr)
			switch {
			case s.drift == 0 && float64(fpU)/tr > lim:
				t.Errorf("%s, %d rounds: the unpaired interval excluded 1 in %.3f of A/A trials at 90%%", s.name, n, float64(fpU)/tr)
			case s.rho == 0.9 && s.own < s.drift && n >= 5 && (halfP >= halfU || float64(fpU)/tr > 0.06):
				// Where a slow drift dominates, each side's spread
				// holds the drift that ABBA's order cancels: the
				// unpaired interval is wider than it need be.
				t.Errorf("%s, %d rounds: paired half-width %.4f, unpaired %.4f (A/A %.3f): pairing should narrow it", s.name, n, halfP/tr, halfU/tr, float64(fpU)/tr)
			}
		}
	}
	t.Logf("log-ratio's true sd, the 90%% t-intervals' mean half-widths, their A/A rates of excluding 1 and power on 1.2x, beside the rank interval's (%d trials):\n%s", trials, table.String())
}

// abbaRounds are n rounds a side in rehearse's order (A B B A ...) on
// the log scale, the candidate's moved by shift, and the n differences
// of each candidate round and the control round beside it.
func abbaRounds(r *rand.Rand, n int, drift, rho, own, shift float64) (c, k, d []float64) {
	x := drift * r.NormFloat64()
	var prevCtl, prevCand float64
	var pendingCtl, pendingCand bool
	for i := range 2 * n {
		if i > 0 {
			x = rho*x + math.Sqrt(1-rho*rho)*drift*r.NormFloat64()
		}
		// Order A B B A: round i is the candidate's when i%4 is 1 or 2.
		cand := i%4 == 1 || i%4 == 2
		v := x + own*r.NormFloat64()
		if cand {
			v += shift
			k = append(k, v)
			if pendingCtl {
				d, pendingCtl = append(d, v-prevCtl), false
			} else {
				prevCand, pendingCand = v, true
			}
		} else {
			c = append(c, v)
			if pendingCand {
				d, pendingCand = append(d, prevCand-v), false
			} else {
				prevCtl, pendingCtl = v, true
			}
		}
	}
	return c, k, d
}

// unpairedT is the difference of the mean logs and the half-width of its
// t-interval at two-sided level alpha (pooled variance, 2n-2 df).
func unpairedT(c, k []float64, alpha float64) (diff, half float64) {
	sd, _ := PooledSD([][]float64{c, k})
	m, n := float64(len(c)), float64(len(k))
	return meanOf(k) - meanOf(c), tQuantile(1-alpha/2, len(c)+len(k)-2) * sd * math.Sqrt(1/m+1/n)
}

// pairedT is the mean of the paired differences and the half-width of
// its t-interval at two-sided level alpha (n-1 df).
func pairedT(d []float64, alpha float64) (diff, half float64) {
	return meanOf(d), tQuantile(1-alpha/2, len(d)-1) * math.Sqrt(sampleVar(d)/float64(len(d)))
}

func expAll(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = math.Exp(x)
	}
	return out
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
