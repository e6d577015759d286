package event

import (
	"strings"
	"unsafe"
)

// Names are the strings every event of a session carries alike: a
// consumer that detaches a session's events (Detach) keeps one copy of
// them for all.
type Names struct {
	Session, User, Database, Application string
}

// Detach returns a copy of e that shares no memory with the blocks its
// reader allocated it in. A log reader hands out events from slabs of
// hundreds and their texts and parameters from blocks of 64 KiB, so one
// event kept for long (a replay's session far behind the reader) keeps
// the whole slab and block, and the log between it and the reader, alive.
// The copy holds its texts and parameter values in one allocation of its
// own, its parameters in another, and the session's strings from names:
// when e's differ, names takes copies of e's first. What only a capture
// has (Wire, Answer, CopyIns) is shared: a capture allocates it per
// event. e is left as it was.
func (e *Event) Detach(names *Names) *Event {
	d := new(Event)
	*d = *e
	d.Session = names.keep(&names.Session, e.Session)
	d.User = names.keep(&names.User, e.User)
	d.Database = names.keep(&names.Database, e.Database)
	d.Application = names.keep(&names.Application, e.Application)
	n := len(e.Query) + len(e.Name) + len(e.SQLState)
	for _, p := range e.Params {
		n += len(p.Value)
	}
	var buf []byte
	if n > 0 {
		buf = make([]byte, 0, n)
	}
	// buf never grows past n: the strings taken from it stay where they
	// are.
	take := func(s string) string {
		if s == "" {
			return ""
		}
		i := len(buf)
		buf = append(buf, s...)
		return unsafe.String(&buf[i], len(s))
	}
	d.Query = take(e.Query)
	d.Name = take(e.Name)
	d.SQLState = take(e.SQLState)
	if e.Params != nil {
		d.Params = make([]Param, len(e.Params))
		for i, p := range e.Params {
			d.Params[i] = Param{Value: take(p.Value), Null: p.Null, Binary: p.Binary}
		}
	}
	if e.rare != nil {
		d.rare = e.rare.detach()
	}
	return d
}

// keep returns *have when it is s, else sets *have to a copy of s.
func (*Names) keep(have *string, s string) string {
	if *have != s {
		*have = strings.Clone(s)
	}
	return *have
}

// detach is a copy of r with its strings copied (see Detach).
func (r *rare) detach() *rare {
	c := *r
	c.severity = strings.Clone(r.severity)
	c.message = strings.Clone(r.message)
	c.portal = strings.Clone(r.portal)
	if r.plans != nil {
		c.plans = make([]Plan, len(r.plans))
		for i, p := range r.plans {
			p.Text = strings.Clone(p.Text)
			c.plans[i] = p
		}
	}
	if r.startup != nil {
		c.startup = make([]Setting, len(r.startup))
		for i, s := range r.startup {
			c.startup[i] = Setting{Name: strings.Clone(s.Name), Value: strings.Clone(s.Value)}
		}
	}
	if r.preamble != nil {
		c.preamble = make([]string, len(r.preamble))
		for i, s := range r.preamble {
			c.preamble[i] = strings.Clone(s)
		}
	}
	return &c
}
