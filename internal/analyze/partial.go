package analyze

import (
	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/querystats"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/sqlstate"
	"github.com/pgrehearse/pgrehearse/internal/timeline"
)

// partial is what one worker aggregates; partials merge into the result.
type partial struct {
	queries    *fingerprint.Local[*query]
	set        *querystats.Set
	timeline   *timeline.Timeline
	kinds      [8]int64 // by event.Kind, which is small
	statements results.StatementCounts
	errors     map[string]int64
	// outside counts the errors among errors that no statement reports
	// (event.Event.OutsideStatement).
	outside  int64
	sessions map[string]struct{}
	// recent holds session ids already in sessions, by a hash of their
	// last bytes (recentSlot): a log interleaves some hundreds of
	// sessions at a time, and comparing a string with the one in its
	// slot is cheaper than hashing it.
	recent [4096]string
	first  int64
	last   int64
	seen   bool

	// samples keeps executions with their values, only when asked;
	// plans are the plans the log holds (auto_explain).
	samples *results.Sampler
	plans   *loggedPlans
}

// query is what a worker knows of a query text: its statements, and for
// each the Stats it adds to, so that an event costs no lookup by
// fingerprint. The worker's fingerprint.Local keeps it with the text.
type query struct {
	items    []fingerprint.Item
	stats    []*querystats.Stats
	unparsed int64 // items that did not parse
}

func newPartial(cache *fingerprint.Cache, keepSamples bool) *partial {
	p := &partial{
		plans:    newLoggedPlans(),
		set:      querystats.NewSet(),
		timeline: timeline.New(),
		errors:   make(map[string]int64),
		sessions: make(map[string]struct{}),
	}
	p.queries = fingerprint.NewLocal(cache, p.query)
	if keepSamples {
		p.samples = results.NewSampler(0)
	}
	return p
}

func (p *partial) query(items []fingerprint.Item) *query {
	q := &query{items: items, stats: make([]*querystats.Stats, len(items))}
	for i, it := range items {
		q.stats[i] = p.set.Slot(it.Fingerprint, it.Query)
		if it.Unparsed {
			q.unparsed++
		}
	}
	return q
}

func (p *partial) add(ev *event.Event) {
	p.kinds[ev.Kind&7]++
	if !p.seen || ev.Time < p.first {
		p.first = ev.Time
	}
	if !p.seen || ev.Time > p.last {
		p.last = ev.Time
	}
	p.seen = true
	if id := ev.Session; id != "" {
		slot := &p.recent[recentSlot(id)&(len(p.recent)-1)]
		if *slot != id {
			p.sessions[id] = struct{}{}
			*slot = id
		}
	}
	switch {
	case ev.Kind == event.Error:
		// Not a call: the failing statement comes as its own event,
		// unless there is none (a Parse or Bind never executed, a
		// FATAL), counted apart so that errors add up to failed
		// statements plus these.
		p.errors[sqlState(ev)]++
		if ev.OutsideStatement() {
			p.outside++
		}
	case ev.IsExecution():
		if ev.Failed && ev.Answer() != nil {
			// A capture records the failure on the execution itself
			// (its answer), where a log writes an Error event of its
			// own: counted here, errors by SQLSTATE add up to the
			// failed executions as a log's do.
			p.errors[sqlState(ev)]++
		}
		p.execution(ev)
	}
}

// recentSlot hashes a session id by its length and last eight bytes,
// where the process id of "6571e2a3.1f40" or "p4242.0" is.
func recentSlot(id string) int {
	var w uint64
	if n := len(id); n >= 8 {
		t := id[n-8:]
		// One load: the compiler merges the bytes.
		w = uint64(t[0]) | uint64(t[1])<<8 | uint64(t[2])<<16 | uint64(t[3])<<24 |
			uint64(t[4])<<32 | uint64(t[5])<<40 | uint64(t[6])<<48 | uint64(t[7])<<56
	} else {
		for i := 0; i < n; i++ {
			w = w<<8 | uint64(id[i])
		}
	}
	// The last byte, the one that changes most, is the word's top byte:
	// folded down before the multiply spreads it up to the bits kept.
	return int((w ^ w>>32 ^ uint64(len(id))) * 0x9e3779b97f4a7c15 >> 48)
}

func (p *partial) execution(ev *event.Event) {
	q := p.queries.Get(ev.Query)
	k := len(q.items)
	if k == 0 {
		p.statements.Empty++
		return
	}
	p.statements.Total += int64(k)
	p.statements.Unparsed += q.unparsed
	if ev.Failed {
		p.statements.Failed++
		q.stats[k-1].RecordError(sqlState(ev))
	}
	if plans := ev.Plans(); len(plans) > 0 {
		p.loggedPlans(ev, q, plans)
	}
	if k == 1 {
		// Most strings hold one statement; below is the general case.
		q.stats[0].Record(q.items[0].Query, ev.Time, ev.Duration, ev.Failed)
		p.timeline.Add(ev.Time, ev.Duration, ev.Failed)
		// A sample is an execution whose values are all known, to be
		// planned again with them.
		if p.samples != nil && !ev.Failed && ev.Duration >= 0 && ev.ParamState == event.ParamsComplete {
			p.samples.AddEvent(q.items[0].Fingerprint, ev.Database, ev.Query, ev.TextParams(), float64(ev.Duration)/1000)
		}
		return
	}
	for i, st := range q.stats {
		// The log says the string failed, not which statement: count
		// the error once, on the last statement, so that errors add up
		// to failed executions. Statements before it did run (and
		// are counted as calls), though a failure rolls back the
		// whole string when it was one implicit transaction.
		failed := ev.Failed && i == k-1
		d := querystats.SplitDuration(ev.Duration, k, i)
		st.Record(q.items[i].Query, ev.Time, d, failed)
		p.timeline.Add(ev.Time, d, failed)
	}
}

// loggedPlans keeps the plans the server logged for an execution: one
// per statement of the string, in order, else they cannot be told apart
// (auto_explain's nested statements) and are left out.
func (p *partial) loggedPlans(ev *event.Event, q *query, plans []event.Plan) {
	if len(plans) != len(q.items) {
		return
	}
	for i, pl := range plans {
		p.plans.add(q.items[i].Fingerprint, ev.Time, pl)
	}
}

func (p *partial) merge(o *partial) {
	p.plans.merge(o.plans)
	if p.samples != nil {
		p.samples.Merge(o.samples)
	}
	p.set.Merge(o.set)
	p.timeline.Merge(o.timeline)
	for k, v := range o.kinds {
		p.kinds[k] += v
	}
	p.statements.Total += o.statements.Total
	p.statements.Failed += o.statements.Failed
	p.statements.Unparsed += o.statements.Unparsed
	p.statements.Empty += o.statements.Empty
	for k, v := range o.errors {
		p.errors[k] += v
	}
	p.outside += o.outside
	for s := range o.sessions {
		p.sessions[s] = struct{}{}
	}
	if o.seen {
		if !p.seen || o.first < p.first {
			p.first = o.first
		}
		if !p.seen || o.last > p.last {
			p.last = o.last
		}
		p.seen = true
	}
}

func (p *partial) fill(res *results.Result) error {
	rows, err := p.set.Rows(querystats.RowOptions{Hist: true})
	if err != nil {
		return err
	}
	res.Queries = rows
	if p.samples != nil {
		res.KeptSamples, res.Samples = true, p.samples.Result()
	}
	res.LoggedPlans = p.plans.result(p.samples != nil)
	res.Timeline = p.timeline.JSON()
	res.Statements = p.statements
	// Every statement a log shows ran: it failed or it did not.
	res.Statements.Executed = p.statements.Total - p.statements.Failed
	res.Statements.Skipped = map[results.SkipReason]int64{}
	res.Sessions = results.SessionCounts{Total: int64(len(p.sessions))}
	for k, v := range p.kinds {
		if v > 0 {
			res.Events[event.Kind(k)] = v
		}
	}
	for k, v := range p.errors {
		res.ErrorsBySQLState[k] = v
	}
	res.ErrorsOutsideStatements = p.outside
	if p.seen {
		res.FirstTime, res.LastTime = results.Time(p.first), results.Time(p.last)
	}
	return nil
}

// sqlState is the SQLSTATE of a failed event: the log's, or, when its
// prefix lacks %e, the one its message is known by (package sqlstate);
// UnknownSQLState when neither says.
func sqlState(ev *event.Event) string {
	if ev.SQLState != "" {
		return ev.SQLState
	}
	if code, ok := sqlstate.FromMessage(ev.ErrorMessage()); ok {
		return code
	}
	return results.UnknownSQLState
}
