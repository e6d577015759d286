package sweep

import "sort"

// FindPeak returns the step with the highest TPS; on a tie the fewer
// clients win, since they reach the same throughput more cheaply. It is nil
// without steps.
func FindPeak(steps []Step) *Peak {
	var p *Peak
	for _, s := range steps {
		if p == nil || s.TPS > p.TPS || (s.TPS == p.TPS && s.Clients < p.Clients) {
			p = &Peak{Clients: s.Clients, TPS: s.TPS}
		}
	}
	return p
}

// FindKnee returns where adding clients stops paying: the last client
// count before the first step whose throughput grows by a smaller factor
// than its mean latency does. Before the knee, more clients buy more
// throughput at little cost in latency; after it, they mostly queue. In a
// closed loop (each client waits for its answer) clients = TPS x latency,
// so at the knee of a doubling sweep TPS grows less than sqrt(2).
//
// Unlike the peak, which on a flat curve is wherever noise put the
// highest reading, the knee is stable under noise of a few percent: it
// is found where latency grows faster than throughput, which on a flat
// curve is at once. Found is false when every step still paid (or there
// are fewer than two timed steps); UpTo is then the highest client count.
func FindKnee(steps []Step) *Knee {
	if len(steps) == 0 {
		return nil
	}
	sorted := append([]Step(nil), steps...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Clients < sorted[j].Clients })
	k := &Knee{UpTo: sorted[len(sorted)-1].Clients}
	for i := 0; i+1 < len(sorted); i++ {
		a, b := sorted[i], sorted[i+1]
		if a.TPS <= 0 || a.Latency.Mean <= 0 || b.Latency.Mean <= 0 {
			continue
		}
		tpsGrowth, latGrowth := b.TPS/a.TPS, b.Latency.Mean/a.Latency.Mean
		if tpsGrowth < latGrowth {
			*k = Knee{Found: true, Clients: a.Clients, TPS: a.TPS, MeanMS: a.Latency.Mean,
				NextClients: b.Clients, TPSGrowth: tpsGrowth, LatencyGrowth: latGrowth, UpTo: k.UpTo}
			return k
		}
	}
	return k
}

// FindCliff returns where TPS falls off after the peak: the first step with
// more clients than the peak whose TPS is below ratio times the peak's.
// Steps are taken in order of client count. It is nil without steps.
func FindCliff(steps []Step, ratio float64) *Cliff {
	peak := FindPeak(steps)
	if peak == nil {
		return nil
	}
	sorted := append([]Step(nil), steps...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Clients < sorted[j].Clients })
	c := &Cliff{Ratio: ratio, UpTo: sorted[len(sorted)-1].Clients}
	for _, s := range sorted {
		if s.Clients <= peak.Clients {
			continue
		}
		if s.TPS < ratio*peak.TPS {
			c.Found = true
			c.Clients = s.Clients
			c.TPS = s.TPS
			if peak.TPS > 0 {
				c.RatioToPeak = s.TPS / peak.TPS
			}
			return c
		}
	}
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

// CompareConfigs lines up the configurations' steps by client count, relative to
// the first configuration.
func CompareConfigs(configs []ConfigRun) []Comparison {
	if len(configs) < 2 {
		return nil
	}
	base := configs[0]
	var out []Comparison
	for _, bs := range base.Steps {
		c := Comparison{Clients: bs.Clients, Baseline: base.Name,
			TPS: map[string]float64{}, Ratio: map[string]float64{}, P95: map[string]float64{}}
		for _, cfg := range configs {
			for _, s := range cfg.Steps {
				if s.Clients != bs.Clients {
					continue
				}
				c.TPS[cfg.Name] = s.TPS
				c.P95[cfg.Name] = s.Latency.P95
				if bs.TPS > 0 {
					c.Ratio[cfg.Name] = s.TPS / bs.TPS
				}
			}
		}
		out = append(out, c)
	}
	return out
}
