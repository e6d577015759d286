package compare

import "math"

// Wide forecasts. A regression's size is what a user acts on (issue 58:
// the forecast's mean within 0.8-1.25 of what the application will
// see), and a rule broken by one query decides the verdict while the
// others' sizes may still rest on an interval that spans a factor of
// eight: random_page_cost's untouched lookup, 0.05 ms a call on a
// saturated core, read 1.51x (0.53-4.30) after three rounds a side
// against a true 2.40x. A rehearsal adds rounds while a query that
// regressed has such an interval, within its budget (Options.Look), as
// it does while a rule is undecided. Adding rounds to narrow an
// interval claims nothing by itself: the rules at the later looks are
// judged at LookAlpha all the same.

// DefaultWidth is the widest interval, its high over its low, a
// rehearsal accepts for the mean of a query that regressed before it
// adds rounds: wider, and the forecast cannot tell 1.5x from 3x.
const DefaultWidth = 2.0

// WideMean is a query that regressed whose mean's interval, at the
// level the comparison judges it on, spans more than a factor.
type WideMean struct {
	Fingerprint string  `json:"fingerprint"`
	Ratio       float64 `json:"ratio"`
	Low         float64 `json:"low"`
	High        float64 `json:"high"`
}

// Width is the factor the interval spans (High over Low; +Inf when Low
// is 0 or under).
func (w WideMean) Width() float64 { return width(w.Low, w.High) }

func width(low, high float64) float64 {
	if low <= 0 {
		return math.Inf(1)
	}
	return high / low
}

// WideMeans are the queries that regressed (Status.Regression, or
// slower while the candidate was busier) whose mean's interval spans
// more than factor: what more rounds would narrow. None for a factor
// of 1 or less (off), or a comparison whose noise is not measured
// (fewer rounds a side than an interval over the runs needs: rounds are
// then added while a rule is undecided, ruleUnconfirmed).
func (r *Report) WideMeans(factor float64) []WideMean {
	if factor <= 1 || !r.Noise.Measured {
		return nil
	}
	var out []WideMean
	for i := range r.Queries {
		q := &r.Queries[i]
		if q.Effects == nil || !q.Status.Regression() && q.Status != StatusSlowerWhileBusier {
			continue
		}
		e := q.Effects.Of(MetricMean)
		if e == nil || e.Interval != IntervalRuns || width(e.Low, e.High) <= factor {
			continue
		}
		out = append(out, WideMean{Fingerprint: q.Fingerprint, Ratio: e.Ratio, Low: e.Low, High: finite(e.High)})
	}
	return out
}
