package analyze

import (
	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/querystats"
	"github.com/pgrehearse/pgrehearse/internal/timeline"
)

// partial is what one worker aggregates; partials merge into the result.
type partial struct {
	cache      *fingerprint.Cache
	set        *querystats.Set
	timeline   *timeline.Timeline
	kinds      [8]int64 // by event.Kind, which is small
	statements StatementCounts
	errors     map[string]int64
	sessions   map[string]struct{}
	first      int64
	last       int64
	seen       bool
}

func newPartial(cache *fingerprint.Cache) *partial {
	return &partial{
		cache:    cache,
		set:      querystats.NewSet(),
		timeline: timeline.New(),
		errors:   make(map[string]int64),
		sessions: make(map[string]struct{}),
	}
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
	if ev.Session != "" {
		if _, ok := p.sessions[ev.Session]; !ok {
			p.sessions[ev.Session] = struct{}{}
		}
	}
	switch {
	case ev.Kind == event.Error:
		// Not a call: the failing statement comes as its own event.
		code := ev.SQLState
		if code == "" {
			code = UnknownSQLState
		}
		p.errors[code]++
	case ev.IsExecution():
		p.execution(ev)
	}
}

func (p *partial) execution(ev *event.Event) {
	items := p.cache.Get(ev.Query)
	k := len(items)
	if k == 0 {
		p.statements.Empty++
		return
	}
	p.statements.Total += int64(k)
	if ev.Failed {
		p.statements.Failed++
	}
	for i, it := range items {
		if it.Unparsed {
			p.statements.Unparsed++
		}
		// The log says the string failed, not which statement: count
		// the error once, on the last statement, so that errors add up
		// to failed executions. Statements before it did run (and
		// are counted as calls), though a failure rolls back the
		// whole string when it was one implicit transaction.
		failed := ev.Failed && i == k-1
		d := querystats.SplitDuration(ev.Duration, k, i)
		p.set.AddAt(it.Fingerprint, it.Query, ev.Time, d, failed)
		p.timeline.Add(ev.Time, d, failed)
	}
}

func (p *partial) merge(o *partial) {
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

func (p *partial) fill(res *Result, hist bool) error {
	rows, err := p.set.Rows(querystats.RowOptions{Hist: hist})
	if err != nil {
		return err
	}
	res.Queries = rows
	res.Set = p.set
	res.Timeline = p.timeline.JSON()
	res.Statements = p.statements
	res.Sessions = int64(len(p.sessions))
	for k, v := range p.kinds {
		if v > 0 {
			res.Events[event.Kind(k).String()] = v
		}
	}
	for k, v := range p.errors {
		res.ErrorsBySQLState[k] = v
	}
	if p.seen {
		res.FirstUS, res.LastUS = p.first, p.last
		res.FirstTime = querystats.FormatTime(p.first)
		res.LastTime = querystats.FormatTime(p.last)
	}
	return nil
}
