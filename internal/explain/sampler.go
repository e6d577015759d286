package explain

import (
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
)

// Sampler picks, per fingerprint, the executions worth explaining with
// their logged values: the slowest, and one whose duration is the median
// of a uniform sample of them (a reservoir). It keeps at most Reservoir+1
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
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.byFP[fingerprint]
	if p == nil {
		p = &picks{}
		s.byFP[fingerprint] = p
	}
	p.seen++
	keep := func() Sample {
		return Sample{Query: strings.Clone(query), Params: cloneParams(params), DurationMS: durationMS, Database: strings.Clone(database)}
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

// Samples returns fingerprint's slowest execution and its median one
// (only the slowest when they are the same execution), or nil.
func (s *Sampler) Samples(fingerprint string) []Sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.byFP[fingerprint]
	if p == nil {
		return nil
	}
	out := []Sample{*p.slowest}
	kept := slices.Clone(p.kept)
	slices.SortStableFunc(kept, func(a, b Sample) int {
		switch {
		case a.DurationMS < b.DurationMS:
			return -1
		case a.DurationMS > b.DurationMS:
			return 1
		}
		return 0
	})
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
