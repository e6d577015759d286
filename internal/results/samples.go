package results

import (
	"cmp"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/plan"
)

// SampleRole says which execution of a fingerprint a Sample is.
type SampleRole string

// Sample roles.
const (
	// SampleSlowest: the slowest execution seen.
	SampleSlowest SampleRole = "slowest"
	// SampleMedian: an execution of median duration (of a uniform
	// sample of them).
	SampleMedian SampleRole = "median"
	// SampleExample: an execution read from the log for its text alone,
	// when the normalized text cannot be explained; its values are not
	// kept (replayrun.Examples).
	SampleExample SampleRole = "example"
)

// Sample is one execution of a statement with its parameter values: what
// a plan is made for. Values are personal data: a result holds samples
// only when its user asked to keep them.
type Sample struct {
	Role SampleRole `json:"role"`
	// Query is the text as sent: $n placeholders for the extended
	// protocol, literals for the simple one.
	Query string `json:"query"`
	// Params are the values of $1, $2, ... in text form, nil for NULL.
	Params     []*string `json:"params"`
	DurationMS float64   `json:"duration_ms"`
	// Database is the database it ran in.
	Database string `json:"database,omitempty"`
}

// QuerySamples are one fingerprint's representative executions: its
// slowest, and its median when that is another execution.
type QuerySamples struct {
	Fingerprint string   `json:"fingerprint"`
	Samples     []Sample `json:"samples"`
}

// LoggedPlan is the plan the server logged (auto_explain) for one
// fingerprint's executions: the plan production really ran, which a
// comparison of plans takes as the baseline's without a connection to it.
type LoggedPlan struct {
	Fingerprint string `json:"fingerprint"`
	// Plan is the first logged plan of the shape logged most often. Its
	// constants are removed (plan.Redact) unless the result keeps
	// samples: a logged plan quotes the values it ran with.
	Plan *plan.Plan `json:"plan"`
	// Format is the format it was logged in: "text" or "json".
	Format string `json:"format"`
	// Logged counts the plans logged for the fingerprint, Shapes the
	// distinct shapes among them (plan.Plan.Hash): more than one says
	// production ran several plans.
	Logged int64 `json:"logged"`
	Shapes int   `json:"shapes"`
}

// Sampler picks, per fingerprint, the executions worth explaining with
// their values: the slowest, and one whose duration is the median of a
// uniform sample of them (a reservoir). It keeps at most Reservoir+1
// executions per fingerprint, whatever the log's size. Add may be called
// from several goroutines.
//
// Values are personal data: a Sampler is only for a user who asked to
// keep them.
type Sampler struct {
	mu        sync.Mutex
	reservoir int
	rng       *rand.Rand
	byFP      map[string]*picks
}

type picks struct {
	seen    int64
	slowest *Sample
	kept    []Sample
}

// DefaultReservoir is how many executions per fingerprint the median is
// taken from.
const DefaultReservoir = 31

// NewSampler returns a Sampler whose median is taken from up to
// reservoir executions per fingerprint (DefaultReservoir when 0), chosen
// with a fixed seed so that a log gives the same samples every time.
func NewSampler(reservoir int) *Sampler {
	if reservoir <= 0 {
		reservoir = DefaultReservoir
	}
	return &Sampler{reservoir: reservoir, rng: rand.New(rand.NewPCG(1, 2)), byFP: map[string]*picks{}}
}

// Add offers one execution of fingerprint in database: its text as sent,
// its values (nil for NULL) and its duration. The strings are copied
// when kept.
func (s *Sampler) Add(fingerprint, database, query string, params []*string, durationMS float64) {
	s.add(fingerprint, database, query, durationMS, func() []*string { return cloneParams(params) })
}

// AddEvent offers an execution with its event's parameters; they are
// copied only when kept.
func (s *Sampler) AddEvent(fingerprint, database, query string, params []event.Param, durationMS float64) {
	s.add(fingerprint, database, query, durationMS, func() []*string {
		if params == nil {
			return nil
		}
		out := make([]*string, len(params))
		for i, p := range params {
			if !p.Null {
				v := strings.Clone(p.Value)
				out[i] = &v
			}
		}
		return out
	})
}

func (s *Sampler) add(fingerprint, database, query string, durationMS float64, params func() []*string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.byFP[fingerprint]
	if p == nil {
		p = &picks{}
		s.byFP[strings.Clone(fingerprint)] = p
	}
	p.seen++
	keep := func() Sample {
		return Sample{Query: strings.Clone(query), Params: params(), DurationMS: durationMS, Database: strings.Clone(database)}
	}
	if p.slowest == nil || durationMS > p.slowest.DurationMS {
		k := keep()
		k.Role = SampleSlowest
		p.slowest = &k
	}
	switch {
	case len(p.kept) < s.reservoir:
		p.kept = append(p.kept, keep())
	default:
		if i := s.rng.Int64N(p.seen); i < int64(s.reservoir) {
			p.kept[i] = keep()
		}
	}
}

func cloneParams(ps []*string) []*string {
	if ps == nil {
		return nil
	}
	out := make([]*string, len(ps))
	for i, p := range ps {
		if p != nil {
			v := strings.Clone(*p)
			out[i] = &v
		}
	}
	return out
}

// Merge adds o's executions to s, as if they had been offered to s: the
// slowest of both, and a reservoir that draws from each in proportion to
// the executions it saw.
func (s *Sampler) Merge(o *Sampler) {
	o.mu.Lock()
	defer o.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	for fp, op := range o.byFP {
		p := s.byFP[fp]
		if p == nil {
			s.byFP[fp] = op
			continue
		}
		if op.slowest != nil && (p.slowest == nil || op.slowest.DurationMS > p.slowest.DurationMS) {
			p.slowest = op.slowest
		}
		// Each kept execution stands for seen/len(kept) of its side's:
		// draw the merged reservoir by those weights.
		total := p.seen + op.seen
		var merged []Sample
		a, b := slices.Clone(p.kept), slices.Clone(op.kept)
		for len(merged) < s.reservoir && (len(a) > 0 || len(b) > 0) {
			fromA := len(b) == 0 || (len(a) > 0 && s.rng.Int64N(total) < p.seen)
			if fromA {
				i := s.rng.IntN(len(a))
				merged = append(merged, a[i])
				a = slices.Delete(a, i, i+1)
			} else {
				i := s.rng.IntN(len(b))
				merged = append(merged, b[i])
				b = slices.Delete(b, i, i+1)
			}
		}
		p.kept, p.seen = merged, total
	}
}

// Samples returns fingerprint's slowest execution and its median one
// (only the slowest when they are the same execution), or nil.
func (s *Sampler) Samples(fingerprint string) []Sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.byFP[fingerprint]
	if p == nil {
		return nil
	}
	return p.samples()
}

func (p *picks) samples() []Sample {
	out := []Sample{*p.slowest}
	kept := slices.Clone(p.kept)
	slices.SortStableFunc(kept, func(a, b Sample) int { return cmp.Compare(a.DurationMS, b.DurationMS) })
	med := kept[(len(kept)-1)/2]
	if med.DurationMS != p.slowest.DurationMS || len(kept) > 1 {
		med.Role = SampleMedian
		out = append(out, med)
	}
	return out
}

// Fingerprints returns the fingerprints sampled, sorted.
func (s *Sampler) Fingerprints() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.byFP))
	for fp := range s.byFP {
		out = append(out, fp)
	}
	slices.Sort(out)
	return out
}

// Result returns every fingerprint's samples, by fingerprint: what a
// result keeps (Result.Samples). It is never nil, so that a result made
// with a Sampler says samples were kept even when none was seen.
func (s *Sampler) Result() []QuerySamples {
	out := []QuerySamples{}
	for _, fp := range s.Fingerprints() {
		out = append(out, QuerySamples{Fingerprint: fp, Samples: s.Samples(fp)})
	}
	return out
}

// SamplesOf returns fingerprint's samples in r, or nil.
func (r *Result) SamplesOf(fingerprint string) []Sample {
	for _, q := range r.Samples {
		if q.Fingerprint == fingerprint {
			return q.Samples
		}
	}
	return nil
}

// LoggedPlanOf returns fingerprint's logged plan in r, or nil.
func (r *Result) LoggedPlanOf(fingerprint string) *LoggedPlan {
	for i := range r.LoggedPlans {
		if r.LoggedPlans[i].Fingerprint == fingerprint {
			return &r.LoggedPlans[i]
		}
	}
	return nil
}

// mergeSamples merges two results' samples per fingerprint: the slower
// of the slowest, and as median the median execution of the medians.
func mergeSamples(a, b []QuerySamples) []QuerySamples {
	if a == nil && b == nil {
		return nil
	}
	byFP := map[string][]Sample{}
	for _, qs := range [][]QuerySamples{a, b} {
		for _, q := range qs {
			byFP[q.Fingerprint] = append(byFP[q.Fingerprint], q.Samples...)
		}
	}
	out := []QuerySamples{}
	for _, fp := range slices.Sorted(maps.Keys(byFP)) {
		var slowest *Sample
		var medians []Sample
		for _, s := range byFP[fp] {
			if s.Role == SampleSlowest && (slowest == nil || s.DurationMS > slowest.DurationMS) {
				slowest = &s
			}
			if s.Role == SampleMedian {
				medians = append(medians, s)
			}
		}
		var ss []Sample
		if slowest != nil {
			ss = append(ss, *slowest)
		}
		if len(medians) > 0 {
			slices.SortStableFunc(medians, func(x, y Sample) int { return cmp.Compare(x.DurationMS, y.DurationMS) })
			ss = append(ss, medians[(len(medians)-1)/2])
		}
		out = append(out, QuerySamples{Fingerprint: fp, Samples: ss})
	}
	return out
}

// mergeLoggedPlans merges two results' logged plans: per fingerprint,
// the one logged more often, with both counts added (the shapes are
// counted as the larger of the two, a lower bound).
func mergeLoggedPlans(a, b []LoggedPlan) []LoggedPlan {
	if a == nil && b == nil {
		return nil
	}
	byFP := map[string]LoggedPlan{}
	for _, ps := range [][]LoggedPlan{a, b} {
		for _, p := range ps {
			q, ok := byFP[p.Fingerprint]
			if !ok {
				byFP[p.Fingerprint] = p
				continue
			}
			logged, shapes := q.Logged+p.Logged, max(q.Shapes, p.Shapes)
			if p.Plan.Hash() != q.Plan.Hash() {
				shapes = max(shapes, 2)
			}
			if p.Logged > q.Logged {
				q = p
			}
			q.Logged, q.Shapes = logged, shapes
			byFP[p.Fingerprint] = q
		}
	}
	out := []LoggedPlan{}
	for _, fp := range slices.Sorted(maps.Keys(byFP)) {
		out = append(out, byFP[fp])
	}
	return out
}
