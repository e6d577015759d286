package sweep

import (
	"github.com/pgrehearse/pgrehearse/internal/judge"
)

// withholdOneSided takes back a knee or a cliff that one configuration's
// curve shows and another's does not when no client count tells the two
// curves apart beyond the noise (neither their TPS nor their TPS over
// latency): the knee and the cliff are then noise read on one side, and
// an A/A comparison calls them on both sides or on neither. The
// configuration keeps where its curve alone showed it (Clients) and
// names the curve it cannot be told from (Indistinct); Found is false.
func withholdOneSided(configs []ConfigRun) {
	type claim struct{ knee, cliff string }
	withheld := make([]claim, len(configs))
	for i, ci := range configs {
		for j, cj := range configs {
			if i == j || (withheld[i].knee != "" || !kneeFound(ci) || kneeFound(cj)) &&
				(withheld[i].cliff != "" || !cliffFound(ci) || cliffFound(cj)) {
				continue
			}
			if curvesDiffer(ci.Steps, cj.Steps) {
				continue
			}
			if withheld[i].knee == "" && kneeFound(ci) && !kneeFound(cj) {
				withheld[i].knee = cj.Name
			}
			if withheld[i].cliff == "" && cliffFound(ci) && !cliffFound(cj) {
				withheld[i].cliff = cj.Name
			}
		}
	}
	for i := range configs {
		if name := withheld[i].knee; name != "" {
			k := configs[i].Knee
			configs[i].Knee = &Knee{Clients: k.Clients, Lo: k.Lo, Hi: k.Hi, UpTo: k.UpTo, Indistinct: name}
		}
		if name := withheld[i].cliff; name != "" {
			c := configs[i].Cliff
			configs[i].Cliff = &Cliff{Clients: c.Clients, Ratio: c.Ratio, UpTo: c.UpTo, Indistinct: name}
		}
	}
}

func kneeFound(c ConfigRun) bool  { return c.Knee != nil && c.Knee.Found }
func cliffFound(c ConfigRun) bool { return c.Cliff != nil && c.Cliff.Found }

// curvesDiffer: at some client count both measured, the two curves' TPS,
// or their TPS over mean latency (the knee's power), differ beyond the
// noise (judge.Curves.Compare, against the noise of a step over both
// curves, as CompareConfigs judges them).
func curvesDiffer(a, b []Step) bool {
	la, lb := levels(a), levels(b)
	pa, pb := powerLevels(la), powerLevels(lb)
	tps, power := judge.NewCurves(la, lb), judge.NewCurves(pa, pb)
	for i, l := range la {
		for j, m := range lb {
			if l.X != m.X {
				continue
			}
			if !tps.Compare(l.Throughput, m.Throughput).Same {
				return true
			}
			if len(pa[i].Throughput) > 0 && len(pb[j].Throughput) > 0 &&
				!power.Compare(pa[i].Throughput, pb[j].Throughput).Same {
				return true
			}
		}
	}
	return false
}

// powerLevels are levels whose throughput is each step's TPS over its
// mean latency, the knee's power (none where the latency is unknown).
func powerLevels(ls []judge.CurveLevel) []judge.CurveLevel {
	out := make([]judge.CurveLevel, len(ls))
	for i, l := range ls {
		out[i].X = l.X
		for s, t := range l.Throughput {
			if s < len(l.Latency) && l.Latency[s] > 0 && t > 0 {
				out[i].Throughput = append(out[i].Throughput, t/l.Latency[s])
			}
		}
	}
	return out
}
