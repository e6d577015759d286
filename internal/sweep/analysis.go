package sweep

import (
	"sort"

	"github.com/pgrehearse/pgrehearse/internal/judge"
	"github.com/pgrehearse/pgrehearse/internal/stats"
)

// levels groups steps by client count, ascending: each client count's
// repeated steps are one level of the step curve.
func levels(steps []Step) []judge.CurveLevel {
	byClients := map[int]*judge.CurveLevel{}
	var order []int
	for _, s := range steps {
		l := byClients[s.Clients]
		if l == nil {
			l = &judge.CurveLevel{X: float64(s.Clients)}
			byClients[s.Clients] = l
			order = append(order, s.Clients)
		}
		l.Throughput = append(l.Throughput, s.TPS)
		l.Latency = append(l.Latency, s.Latency.Mean)
	}
	sort.Ints(order)
	out := make([]judge.CurveLevel, len(order))
	for i, n := range order {
		out[i] = *byClients[n]
	}
	return out
}

// FindPeak returns the client count with the highest median TPS over
// its repeated steps, and the client counts whose TPS cannot be told from
// it (judge.Curves.Peak); on a tie the fewer clients win, since they
// reach the same throughput more cheaply. It is nil without steps.
func FindPeak(steps []Step) *Peak {
	ls := levels(steps)
	p := judge.NewCurves(ls).Peak(ls)
	if p == nil {
		return nil
	}
	return &Peak{Clients: int(p.X), TPS: p.Throughput, Lo: int(p.Lo), Hi: int(p.Hi), Steps: repeats(ls, p.X)}
}

func repeats(ls []judge.CurveLevel, x float64) int {
	for _, l := range ls {
		if l.X == x {
			return len(l.Throughput)
		}
	}
	return 0
}

// FindKnee returns where adding clients stops paying: the client count
// at which TPS over mean latency (Kleinrock's power, step by step, its
// median over the repeats) is highest (judge.Curves.Knee). Before the
// knee, more clients buy more throughput than they cost in latency;
// after it, they mostly queue. In a closed loop (each client waits for
// its answer) clients = TPS x latency, so past the knee of a doubling
// sweep TPS grows less than sqrt(2).
//
// Found is true only when a later client count's power is lower than the
// knee's beyond noise; Lo and Hi are the client counts whose power cannot
// be told from the knee's. Without it, Lo to Hi (the highest client
// count) is where the knee may still be: from the highest power measured
// on, every later one within noise of it. Unlike the peak, which on a flat curve spans
// every client count, the knee is narrow on a flat curve: latency grows
// with every client there. UpTo is the highest client count measured.
func FindKnee(steps []Step) *Knee {
	ls := levels(steps)
	k := judge.NewCurves(ls).Knee(ls)
	if k == nil {
		return nil
	}
	out := &Knee{Found: k.Found, UpTo: int(k.UpTo), Lo: int(k.Lo), Hi: int(k.Hi)}
	if k.Found {
		out.Clients, out.TPS, out.MeanMS = int(k.X), k.Throughput, k.Latency
		out.NextClients, out.TPSGrowth, out.LatencyGrowth = int(k.Next), k.ThroughputGrowth, k.LatencyGrowth
	}
	return out
}

// CliffZ and CliffNoiseFloor are the judge's cliff rule
// (judge.CliffZ, judge.CliffNoiseFloor).
const (
	CliffZ          = judge.CliffZ
	CliffNoiseFloor = judge.CliffNoiseFloor
)

// FindCliff returns where TPS falls off after the peak, by the judge's
// rule (judge.CurveRule): the first client count whose every step is below
// ratio times the peak's TPS, beyond the noise of the steps, with the
// interval between it and the last client count above the ratio,
// widened by that noise. It is nil without steps.
func FindCliff(steps []Step, ratio float64) *Cliff {
	ls := levels(steps)
	peak, b := judge.CurveRule{CliffRatio: ratio}.Cliff(ls)
	if peak == nil {
		return nil
	}
	c := &Cliff{Ratio: ratio, UpTo: int(ls[len(ls)-1].X)}
	if !b.Found {
		return c
	}
	c.Found = true
	c.Clients = int(b.AskedHi)
	for _, l := range ls {
		if l.X == b.AskedHi {
			c.TPS = stats.Median(l.Throughput)
		}
	}
	c.RatioToPeak = c.TPS / peak.Throughput
	c.Lo, c.Hi, c.Estimate = b.Lo, b.Hi, b.Estimate
	return c
}

// ClientCounts returns the client counts of a sweep: list when given
// (sorted, without duplicates), else 1, 2, 4, ... doubling up to max, with
// max itself last when it is not a power of two.
func ClientCounts(list []int, max int) []int {
	if len(list) > 0 {
		out := append([]int(nil), list...)
		sort.Ints(out)
		j := 0
		for i, n := range out {
			if i == 0 || n != out[j-1] {
				out[j] = n
				j++
			}
		}
		return out[:j]
	}
	var out []int
	for n := 1; n <= max; n *= 2 {
		out = append(out, n)
	}
	if len(out) > 0 && out[len(out)-1] != max {
		out = append(out, max)
	}
	return out
}

// CompareConfigs lines up the configurations' steps by client count,
// relative to the first configuration: each one's median TPS and p95 over
// its repeated steps, its ratio to the first's, and that ratio with its
// interval (judge.Curves.Compare), Same ("~") when it cannot be told from
// noise.
func CompareConfigs(configs []ConfigRun) []Comparison {
	if len(configs) < 2 {
		return nil
	}
	base := configs[0]
	var all [][]judge.CurveLevel
	for _, cfg := range configs {
		all = append(all, levels(cfg.Steps))
	}
	curves := judge.NewCurves(all...)
	var out []Comparison
	for _, bl := range levels(base.Steps) {
		n := int(bl.X)
		c := Comparison{Clients: n, Baseline: base.Name,
			TPS: map[string]float64{}, Ratio: map[string]float64{}, P95: map[string]float64{}, Change: map[string]judge.CurveDiff{}}
		for _, cfg := range configs {
			var tps, p95 []float64
			for _, s := range cfg.Steps {
				if s.Clients == n {
					tps = append(tps, s.TPS)
					p95 = append(p95, s.Latency.P95)
				}
			}
			if len(tps) == 0 {
				continue
			}
			c.TPS[cfg.Name] = stats.Median(tps)
			c.P95[cfg.Name] = stats.Median(p95)
			if b := stats.Median(bl.Throughput); b > 0 {
				c.Ratio[cfg.Name] = c.TPS[cfg.Name] / b
				c.Change[cfg.Name] = curves.Compare(bl.Throughput, tps)
			}
		}
		out = append(out, c)
	}
	return out
}
