package logread

import (
	"bytes"
	"strings"

	"github.com/pgrehearse/pgrehearse/internal/event"
)

// auto_explain logs the plan of each statement it explains, at the end of
// its execution, as a LOG of its own:
//
//	LOG:  duration: 0.046 ms  plan:
//		Query Text: SELECT v FROM t WHERE id > 5 ORDER BY v
//		Sort  (cost=41.17..42.23 rows=423 width=32) (actual time=0.043..0.044 rows=0 loops=1)
//		  ...
//
// in the format auto_explain.log_format names (text, json, yaml, xml), with
// each node's actual rows and loops when auto_explain.log_analyze is on,
// and in every destination (stderr's tab lines, a csvlog or jsonlog
// message with newlines). The reader attaches the plan to the execution
// it explains (event.Event.Plans), found by its query text in the
// session that logged it: production's own plans, for a comparison that
// needs no connection to production.
//
// The plan comes before the statement's own line ("duration: ... ms
// statement: ...") when the executor ends with the statement: simple
// queries, and the extended protocol's writes. It comes after the execute
// line when the portal is dropped later: a SELECT of the extended
// protocol, whose portal lives until the next Bind or the Sync. Plans are
// kept by session until their statement comes; an Execute is held, once
// the log shows it has plans, until its plan comes or its session logs
// anything else. A plan that finds no statement (a statement under
// log_min_duration_statement, or inside a function with
// auto_explain.log_nested_statements) is counted as SkipPlanAlone.

// pendingPlan is a plan waiting for its statement.
type pendingPlan struct {
	p     event.Plan
	query string // the query text, for the formats that quote it
	lines int64
}

// maxPendingPlans bounds the plans a session keeps for a statement to
// come: the nested statements of one function call may be many.
const maxPendingPlans = 16

// hasPlans reports whether head, the first bytes of a log, shows
// auto_explain plans: executions are then held for theirs from the
// start.
func hasPlans(head []byte) bool {
	return bytes.Contains(head, []byte(" ms  plan:"))
}

// plan handles an auto_explain plan, the text after "plan:".
func (in *interpreter) plan(e *entry, body string, dur int64) {
	in.plansSeen = true
	body = strings.TrimPrefix(body, "\n")
	body = strings.TrimPrefix(body, "\r")
	// No release of the execution the session holds: it may be this
	// plan's.
	s := in.sessionOf(e, false)
	pp := pendingPlan{p: event.Plan{Text: in.keep(body), Duration: dur}, lines: e.lines}
	pp.p.Format, pp.query, pp.p.Analyzed = readPlan(pp.p.Text)
	switch {
	case s.pending != nil && pp.explains(s.pending.Query):
		// log_statement: the statement was announced, its duration
		// comes after the plan.
		s.pending.AddPlan(pp.p)
		in.c.parsed(pp.lines)
	case s.held != nil && pp.explains(s.held.Query):
		s.held.AddPlan(pp.p)
		in.c.parsed(pp.lines)
		in.releaseHeld(s)
	default:
		if len(s.plans) == maxPendingPlans {
			in.c.skip(SkipPlanAlone, s.plans[0].lines)
			s.plans = append(s.plans[:0], s.plans[1:]...)
		}
		s.plans = append(s.plans, pp)
	}
}

// attachPlans gives ev the plans its session logged for it before it,
// and counts the others, which belong to no statement of the log.
func (in *interpreter) attachPlans(s *sessionState, ev *event.Event) {
	for _, pp := range s.plans {
		if pp.explains(ev.Query) {
			ev.AddPlan(pp.p)
			in.c.parsed(pp.lines)
		} else {
			in.c.skip(SkipPlanAlone, pp.lines)
		}
	}
	clear(s.plans)
	s.plans = s.plans[:0]
}

// holdForPlan holds an execution of the extended protocol without a plan,
// whose plan may come after it, instead of emitting it; it reports
// whether it did.
func (in *interpreter) holdForPlan(s *sessionState, ev *event.Event) bool {
	if ev.Kind != event.Execute || len(ev.Plans()) > 0 {
		return false
	}
	if s.held != nil {
		in.releaseHeld(s)
	}
	s.held = ev
	return true
}

// releaseHeld emits the execution the session held for its plan. Not
// inlined: session, which calls it on a path few entries take, must be.
//
//go:noinline
func (in *interpreter) releaseHeld(s *sessionState) {
	in.out = append(in.out, s.held)
	s.held = nil
}

// dropPlans counts the plans that found no statement in their session.
func (in *interpreter) dropPlans(s *sessionState) {
	for _, pp := range s.plans {
		in.c.skip(SkipPlanAlone, pp.lines)
	}
	clear(s.plans)
	s.plans = s.plans[:0]
}

// explains reports whether the plan is that of an execution of query:
// auto_explain writes the query text as the server had it, the whole
// string of a simple query, the prepared statement's of an execute.
func (pp *pendingPlan) explains(query string) bool {
	if pp.p.Format != event.PlanText {
		return pp.query == query
	}
	// "Query Text: SELECT 1\nResult  (cost=...": the text may span
	// lines, and what follows is the plan.
	t, ok := strings.CutPrefix(pp.p.Text, "Query Text: ")
	return ok && strings.HasPrefix(t, query) && (len(t) == len(query) || t[len(query)] == '\n' || t[len(query)] == '\r')
}

// readPlan tells a plan's format, reads the query text of the formats
// that quote it, and whether the plan has each node's actual rows and
// loops (auto_explain.log_analyze).
func readPlan(text string) (f event.PlanFormat, query string, analyzed bool) {
	switch {
	case strings.HasPrefix(text, "{"):
		// {"Query Text": "SELECT ...", "Plan": {...}}
		return event.PlanJSON, jsonString(text, `"Query Text": `), strings.Contains(text, `"Actual Loops": `)
	case strings.HasPrefix(text, "<explain"):
		// <explain xmlns="..."><Query><Query-Text>SELECT ...</Query-Text>
		q := ""
		if i := strings.Index(text, "<Query-Text>"); i >= 0 {
			if j := strings.Index(text[i:], "</Query-Text>"); j >= 0 {
				q = xmlUnescape(text[i+len("<Query-Text>") : i+j])
			}
		}
		return event.PlanXML, q, strings.Contains(text, "<Actual-Loops>")
	case strings.HasPrefix(text, `Query Text: "`) && strings.Contains(text, "\nPlan: "), strings.HasPrefix(text, "- "):
		// Query Text: "SELECT ..."\nPlan: \n  Node Type: ...: YAML's
		// strings are quoted as JSON's (the text format's query is not
		// quoted, and has no "Plan:" line).
		return event.PlanYAML, jsonString(text, "Query Text: "), strings.Contains(text, "Actual Loops: ")
	}
	// "(actual time=0.043..0.044 rows=0 loops=1)", or without timing
	// "(actual rows=0 loops=1)"; "(never executed)" for a node not run.
	return event.PlanText, "", strings.Contains(text, " loops=") && strings.Contains(text, "(actual ")
}

// jsonString returns the JSON string that follows key in text, decoded;
// "" when there is none.
func jsonString(text, key string) string {
	i := strings.Index(text, key)
	if i < 0 {
		return ""
	}
	s := jsonScanner{b: []byte(text[i+len(key):])}
	raw, esc, ok := s.str()
	if !ok {
		return ""
	}
	if !esc {
		return string(raw)
	}
	b, ok := appendUnescaped(nil, raw)
	if !ok {
		return ""
	}
	return string(b)
}

// xmlUnescape undoes the escapes PostgreSQL's escape_xml writes.
func xmlUnescape(s string) string {
	if !strings.Contains(s, "&") {
		return s
	}
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&quot;", `"`, "&apos;", "'", "&amp;", "&", "&#x0d;", "\r").Replace(s)
}
