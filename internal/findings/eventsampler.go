package findings

import (
	"cmp"
	"slices"
	"strings"
	"sync"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
)

// EventSampler collects, from a log's events, what findings need beyond an
// analysis: the sessions that ran each query, one execution of each to
// EXPLAIN with its logged parameters, and the values INSERTs wrote into
// each column (to tell random keys from time-ordered ones). Add may be
// called from several goroutines; memory is bounded per query.
type EventSampler struct {
	cache *fingerprint.Cache
	mu    sync.Mutex
	byFP  map[string]*observing
}

// Bounds of what an EventSampler keeps per query.
const (
	maxSessions = 10_000
	maxValues   = 512
)

type observing struct {
	sessions map[string]struct{}
	sample   *Sample
	insert   *insertShape
	values   [][]timedValue // by position in the VALUES row
	nvalues  int
}

type timedValue struct {
	t int64
	v string
}

// NewEventSampler returns an EventSampler that fingerprints with cache, which may
// be shared with the analysis (nil: a new one).
func NewEventSampler(cache *fingerprint.Cache) *EventSampler {
	if cache == nil {
		cache = fingerprint.NewCache(0)
	}
	return &EventSampler{cache: cache, byFP: map[string]*observing{}}
}

// Add observes one event; only executions matter.
func (o *EventSampler) Add(ev *event.Event) {
	if !ev.IsExecution() {
		return
	}
	items := o.cache.Get(ev.Query)
	if len(items) == 0 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, it := range items {
		ob := o.byFP[it.Fingerprint]
		if ob == nil {
			ob = &observing{sessions: map[string]struct{}{}}
			o.byFP[it.Fingerprint] = ob
		}
		if len(ob.sessions) < maxSessions && ev.Session != "" {
			ob.sessions[ev.Session] = struct{}{}
		}
		if len(items) != 1 || it.Unparsed {
			continue // the text cannot be explained or parsed as one statement
		}
		ob.observe(ev)
	}
}

func (ob *observing) observe(ev *event.Event) {
	var params []*string
	complete := ev.Kind == event.Statement || ev.ParamState == event.ParamsComplete
	if ev.Kind == event.Execute && complete {
		params = make([]*string, len(ev.Params))
		for i, p := range ev.TextParams() {
			if !p.Null {
				v := strings.Clone(p.Value)
				params[i] = &v
			}
		}
	}
	// The slowest execution is the one worth explaining; one whose
	// values are known beats any without.
	if s := ob.sample; s == nil || (complete && !s.Complete) || (complete == s.Complete && ev.Duration > s.DurationUS) {
		ob.sample = &Sample{Query: strings.Clone(ev.Query), Params: params, Complete: complete,
			DurationUS: ev.Duration, Database: ev.Database, Extended: ev.Kind == event.Execute}
	}
	if ob.nvalues >= maxValues || ev.Failed || !complete {
		return
	}
	if ob.insert == nil {
		if !looksLikeInsert(ev.Query) {
			ob.nvalues = maxValues // not an INSERT: never look again
			return
		}
	}
	// Literals differ between executions of the simple protocol, so
	// each is parsed; with parameters the shape is the same every time.
	shape := ob.insert
	if shape == nil || ev.Kind == event.Statement {
		shape = parseInsert(ev.Query)
		if shape == nil || shape.Rows != 1 {
			ob.nvalues = maxValues
			return
		}
		ob.insert = shape
	}
	if ob.values == nil {
		ob.values = make([][]timedValue, len(shape.values))
	}
	for i := range ob.values {
		if v, ok := shape.value(i, params); ok {
			ob.values[i] = append(ob.values[i], timedValue{ev.Time, v})
		}
	}
	ob.nvalues++
}

func looksLikeInsert(q string) bool {
	return strings.Contains(strings.ToLower(q), "insert")
}

// Sample is one execution of a query, as logged.
type Sample struct {
	// Query is the text as sent: with $n placeholders for the extended
	// protocol, with literals for the simple one.
	Query string
	// Params are the logged values, nil for NULL; set when Complete
	// and the statement has parameters.
	Params []*string
	// Complete is false when the log lacked or truncated a value.
	Complete   bool
	Extended   bool
	DurationUS int64
	Database   string
}

// Observed is what an EventSampler saw, per fingerprint.
type Observed struct {
	Queries map[string]*ObservedQuery
}

// ObservedQuery is what was seen of one fingerprint.
type ObservedQuery struct {
	// Sessions are the session ids that ran it (at most 10,000).
	Sessions []string
	Sample   *Sample
	// Insert is set for a single-row INSERT: its target and, per
	// position of its VALUES row, the values written, in time order.
	Insert *InsertValues
}

// InsertValues are the values single-row INSERTs wrote.
type InsertValues struct {
	Schema, Table string
	// Columns are the named columns; nil when the statement named none.
	Columns []string
	Values  [][]string
}

// Result returns what was observed so far.
func (o *EventSampler) Result() *Observed {
	o.mu.Lock()
	defer o.mu.Unlock()
	res := &Observed{Queries: make(map[string]*ObservedQuery, len(o.byFP))}
	for fp, ob := range o.byFP {
		q := &ObservedQuery{Sample: ob.sample}
		for s := range ob.sessions {
			q.Sessions = append(q.Sessions, s)
		}
		slices.Sort(q.Sessions)
		if ob.insert != nil && ob.values != nil {
			iv := &InsertValues{Schema: ob.insert.Schema, Table: ob.insert.Table, Columns: ob.insert.Columns,
				Values: make([][]string, len(ob.values))}
			for i, vs := range ob.values {
				vs = slices.Clone(vs)
				// Parts of a log may be read at once: time order
				// is what tells a time-ordered key.
				slices.SortStableFunc(vs, func(a, b timedValue) int { return cmp.Compare(a.t, b.t) })
				for _, v := range vs {
					iv.Values[i] = append(iv.Values[i], v.v)
				}
			}
			q.Insert = iv
		}
		res.Queries[fp] = q
	}
	return res
}

// query returns what was seen of fp, or nil.
func (o *Observed) query(fp string) *ObservedQuery {
	if o == nil {
		return nil
	}
	return o.Queries[fp]
}
