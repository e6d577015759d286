package querystats

import (
	"cmp"
	"slices"
)

// Set holds Stats by fingerprint. A Set is not safe for concurrent use:
// give each goroutine its own and Merge them.
type Set struct {
	m   map[string]*Stats
	hot []*Stats // those with dense counts, see hot.go
}

// NewSet returns an empty Set.
func NewSet() *Set {
	return &Set{m: make(map[string]*Stats)}
}

// Add records one call of fp without a known start time. durationUS may
// be NoDuration.
func (s *Set) Add(fp, query string, durationUS int64, failed bool) {
	s.AddAt(fp, query, NoTime, durationUS, failed)
}

// AddAt records one call of fp that started at (µs since the epoch, or
// NoTime). The query text is kept from the earliest call.
func (s *Set) AddAt(fp, query string, at, durationUS int64, failed bool) {
	s.Slot(fp, query).add(query, at, durationUS, failed)
}

// Slot returns the Stats of fp for recording calls with Stats.Record,
// adding one without calls when fp has none (query is its text until a
// call is recorded). It is for a caller that records many calls of one
// fingerprint: it looks the fingerprint up once, not on every call.
// A Stats added this way is in Rows, with no calls, until a call is
// recorded.
func (s *Set) Slot(fp, query string) *Stats {
	st, ok := s.m[fp]
	if !ok {
		st = newStats(fp, query)
		st.owner = s
		s.m[fp] = st
	}
	return st
}

// Merge adds every call of o to s. o is left unchanged and shares no
// memory with s afterwards.
func (s *Set) Merge(o *Set) {
	for fp, ost := range o.m {
		if st, ok := s.m[fp]; ok {
			st.merge(ost)
		} else {
			st := ost.clone()
			st.owner = s
			s.m[fp] = st
		}
	}
}

// Len returns the number of fingerprints.
func (s *Set) Len() int { return len(s.m) }

// Get returns the Stats of fp, or nil. They must not be modified.
func (s *Set) Get(fp string) *Stats {
	s.fold()
	return s.m[fp]
}

// Calls returns the calls and errors of all fingerprints.
func (s *Set) Calls() (calls, errors int64) {
	for _, st := range s.m {
		calls += st.Calls
		errors += st.Errors
	}
	return calls, errors
}

// Sorted returns the Stats by total time, most first, then by calls, then
// by fingerprint so that the order is fully determined.
func (s *Set) Sorted() []*Stats {
	s.fold()
	out := make([]*Stats, 0, len(s.m))
	for _, st := range s.m {
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b *Stats) int {
		if c := cmp.Compare(b.TotalUS, a.TotalUS); c != 0 {
			return c
		}
		if c := cmp.Compare(b.Calls, a.Calls); c != 0 {
			return c
		}
		return cmp.Compare(a.Fingerprint, b.Fingerprint)
	})
	return out
}
