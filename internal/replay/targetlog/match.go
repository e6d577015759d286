package targetlog

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/querystats"
	"github.com/pgrehearse/pgrehearse/internal/replay/connlog"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/sqlstate"
	overtime "github.com/pgrehearse/pgrehearse/internal/timeline"
)

// Settings are what the target's log must have for server-side durations,
// as a user sets them.
const Settings = `log_min_duration_statement = 0, a log_line_prefix with %p and %c (e.g. '%m [%p] %q%u@%d/%a %c '; csvlog and jsonlog always have both), lc_messages = 'C'`

// ErrSettings is wrapped by the errors that mean the target's log lacks
// the settings it needs.
var ErrSettings = errors.New("the target's log cannot give server-side durations: it needs " + Settings)

// match reads the target's own log of the replay from src and replaces
// res.Queries with the server-side durations it shows for the replay's
// connections, keeping the client-side figures in res.ClientQueries and
// setting res.LatencySource to server_log. It matches the log to the
// replay by session (each connection's backend pid and start time, which
// make its %c session id) and checks the order of the statements within
// each session. Statements of other connections in the log (other
// clients, earlier days) are ignored. It returns an error wrapping
// ErrSettings when the log cannot say: no session ids, no statement of
// the replay's connections, or no durations.
func match(res *results.Result, conns []connlog.Conn, src []event.Source, cache *fingerprint.Cache) error {
	if cache == nil {
		cache = fingerprint.NewCache(0)
	}
	type logged struct {
		n     int64
		order uint64
	}
	byKey := map[string]int{}
	seen := make([]logged, len(conns))
	for i, c := range conns {
		for s := c.From; s <= c.To; s++ {
			byKey[strconv.FormatInt(s, 16)+"."+strconv.FormatUint(uint64(c.PID), 16)] = i
		}
	}
	tl := &results.TargetLog{Files: []string{}, Connections: int64(len(conns))}
	set := querystats.NewSet()
	// The replay's activity over time as the target logged it, for the
	// report's over-time charts.
	tline := overtime.New()
	var events, withSession int64
	for i, s := range src {
		name := fmt.Sprintf("target log %d", i+1)
		if n, ok := s.(event.Named); ok {
			name = n.Name()
		}
		tl.Files = append(tl.Files, name)
		for {
			ev, err := s.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			if !ev.IsExecution() {
				continue
			}
			events++
			if isSessionID(ev.Session) {
				withSession++
			}
			ci, ok := byKey[ev.Session]
			if !ok {
				continue
			}
			items := cache.Get(ev.Query)
			k := len(items)
			if k == 0 {
				continue
			}
			rec := &seen[ci]
			rec.n++
			for _, it := range items {
				rec.order = connlog.Chain(rec.order, it.Fingerprint)
			}
			tl.Executions++
			if ev.Duration == event.NoDuration {
				tl.Untimed++
			}
			for j, it := range items {
				d := querystats.SplitDuration(ev.Duration, k, j)
				set.AddAt(it.Fingerprint, it.Query, ev.Time, d, ev.Failed && j == k-1)
				tline.Add(ev.Time, d, ev.Failed && j == k-1)
			}
			if ev.Failed {
				code := ev.SQLState
				if code == "" {
					code = results.UnknownSQLState
					if c, ok := sqlstate.FromMessage(ev.ErrorMessage()); ok {
						code = c
					}
				}
				set.Slot(items[k-1].Fingerprint, items[k-1].Query).RecordError(code)
			}
		}
	}
	switch {
	case events > 0 && withSession == 0:
		return fmt.Errorf("%w: its lines have no session id (%%c), so they cannot be matched to the replay's connections", ErrSettings)
	case tl.Executions == 0 && len(conns) > 0:
		return fmt.Errorf("%w: it shows no statement of the replay's %d connections (%d statements of others): is it the log of this target, covering the replay, with log_min_duration_statement = 0?", ErrSettings, len(conns), events)
	case tl.Executions > 0 && tl.Untimed == tl.Executions:
		return fmt.Errorf("%w: its %d statements of the replay have no duration (log_statement logs statements without one)", ErrSettings, tl.Executions)
	}
	for i, c := range conns {
		l := seen[i]
		if l.n > 0 {
			tl.ConnectionsFound++
		}
		if l.n == c.Sent && l.order == c.Order {
			tl.ExecutionsMatched += l.n
			continue
		}
		if len(tl.Mismatched) < results.MaxMismatched {
			tl.Mismatched = append(tl.Mismatched, results.ConnMismatch{PID: c.PID, Sent: c.Sent, Logged: l.n, SameOrder: l.n == c.Sent})
		}
	}
	sort.Slice(tl.Mismatched, func(i, j int) bool { return tl.Mismatched[i].PID < tl.Mismatched[j].PID })
	rows, err := set.Rows(querystats.RowOptions{Hist: true})
	if err != nil {
		return err
	}
	res.ClientQueries = res.Queries
	res.Queries = rows
	res.LatencySource = results.LatencyServerLog
	res.TargetLog = tl
	res.Timeline = tline.JSON()
	return nil
}

// isSessionID reports whether s looks like a %c session id (hex start
// time, a dot, hex pid), not one the reader made up from the pid.
func isSessionID(s string) bool {
	dot := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '.':
			if dot || i == 0 || i == len(s)-1 {
				return false
			}
			dot = true
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f':
		default:
			return false
		}
	}
	return dot
}
