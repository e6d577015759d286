package report

import (
	"strings"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/redact"
)

// JSONEvent is the printed form of an event (pgrehearse events).
type JSONEvent struct {
	Kind        string     `json:"kind"`
	Time        string     `json:"time"`
	Session     string     `json:"session"`
	PID         int32      `json:"pid"`
	User        string     `json:"user,omitempty"`
	Database    string     `json:"database,omitempty"`
	Application string     `json:"application,omitempty"`
	DurationMS  *float64   `json:"duration_ms,omitempty"`
	Name        string     `json:"name,omitempty"`
	Query       string     `json:"query,omitempty"`
	Params      []*string  `json:"params,omitempty"`
	NParams     int        `json:"nparams,omitempty"`
	ParamState  string     `json:"param_state,omitempty"`
	Failed      bool       `json:"failed,omitempty"`
	SQLState    string     `json:"sqlstate,omitempty"`
	Message     string     `json:"message,omitempty"`
	Plans       []JSONPlan `json:"plans,omitempty"`
	Line        int64      `json:"line"`
}

// JSONPlan is a plan the server logged for the event (auto_explain). Its
// text, whose query text and conditions hold the statement's constants,
// is shown only when parameters are (--show-params).
type JSONPlan struct {
	Format     string  `json:"format"`
	Analyzed   bool    `json:"analyzed"`
	DurationMS float64 `json:"duration_ms"`
	Text       string  `json:"text,omitempty"`
}

var paramStates = [...]string{"", "missing", "truncated"}

// EventJSON is ev in its printed form: its query text without its
// constants and its values left out unless showParams.
func EventJSON(cache *fingerprint.Cache, ev *event.Event, showParams bool) JSONEvent {
	j := JSONEvent{
		Kind: ev.Kind.String(), Time: time.UnixMicro(ev.Time).UTC().Format("2006-01-02T15:04:05.000000Z"),
		Session: ev.Session, PID: ev.PID, User: ev.User, Database: ev.Database, Application: ev.Application,
		Name: ev.Name, Query: withoutConstants(cache, ev.Query, showParams), NParams: len(ev.Params), Failed: ev.Failed,
		SQLState: ev.SQLState, Message: ev.ErrorMessage(), Line: ev.Line,
	}
	if !showParams {
		j.Message = redact.Message(j.Message)
	}
	if int(ev.ParamState) < len(paramStates) {
		j.ParamState = paramStates[ev.ParamState]
	}
	if ev.Duration >= 0 {
		ms := float64(ev.Duration) / 1000
		j.DurationMS = &ms
	}
	for _, p := range ev.Plans() {
		jp := JSONPlan{Format: p.Format.String(), Analyzed: p.Analyzed, DurationMS: float64(p.Duration) / 1000}
		if showParams {
			jp.Text = p.Text
		}
		j.Plans = append(j.Plans, jp)
	}
	if showParams {
		for _, p := range ev.TextParams() {
			if p.Null {
				j.Params = append(j.Params, nil)
			} else {
				v := p.Value
				j.Params = append(j.Params, &v)
			}
		}
	}
	return j
}

// withoutConstants is a query text with its constants replaced by $n, the
// statements of a string joined with "; ", unless showing is asked for.
func withoutConstants(cache *fingerprint.Cache, query string, show bool) string {
	if show || query == "" {
		return query
	}
	items := cache.Get(query)
	if len(items) == 1 {
		return items[0].Query
	}
	parts := make([]string, len(items))
	for i, it := range items {
		parts[i] = it.Query
	}
	return strings.Join(parts, "; ")
}
