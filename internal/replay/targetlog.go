package replay

import (
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/querystats"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/sqlstate"
	overtime "github.com/pgrehearse/pgrehearse/internal/timeline"
)

// TargetLogSettings are what the target's log must have for
// Replayer.ServerSide, as a user sets them.
const TargetLogSettings = `log_min_duration_statement = 0, a log_line_prefix with %p and %c (e.g. '%m [%p] %q%u@%d/%a %c '; csvlog and jsonlog always have both), lc_messages = 'C'`

// ErrTargetLog is wrapped by the errors of ServerSide that mean the
// target's log lacks the settings it needs.
var ErrTargetLog = errors.New("the target's log cannot give server-side durations: it needs " + TargetLogSettings)

// connRecord is one connection the replay opened: enough to find its
// statements in the target's log (the session id %c is the backend's start
// time in seconds and its pid, in hex) and to check that the log has them
// all, in the order they were sent, without keeping them.
type connRecord struct {
	pid      uint32
	from, to int64 // unix seconds around the connection's start
	sent     int64 // executions sent on it
	order    uint64
	logged   int64 // executions the target logged on it
	lorder   uint64
}

// connLog collects the connections of a replay.
type connLog struct {
	mu    sync.Mutex
	conns []*connRecord
}

func (c *connLog) add(rec *connRecord) {
	c.mu.Lock()
	c.conns = append(c.conns, rec)
	c.mu.Unlock()
}

// orderSeed makes the order hashes of one process comparable.
var orderSeed = maphash.MakeSeed()

// chain adds a fingerprint to an order hash: equal hashes mean equal
// sequences of fingerprints, with overwhelming probability.
func chain(h uint64, fp string) uint64 {
	return maphash.String(orderSeed, fp) ^ (h * 0x100000001b3)
}

// ServerSide reads the target's own log of the replay from src and
// replaces res.Queries with the server-side durations it shows for the
// replay's connections, keeping the client-side figures in
// res.ClientQueries and setting res.LatencySource to server_log. It
// matches the log to the replay by session (each connection's backend pid
// and start time, which make its %c session id) and checks the order of
// the statements within each session. Statements of other connections in
// the log (other clients, earlier days) are ignored. It returns an error
// wrapping ErrTargetLog when the log cannot say: no session ids, no
// statement of the replay's connections, or no durations.
func (r *Replayer) ServerSide(res *results.Result, src []Source) error {
	byKey := map[string]*connRecord{}
	r.conns.mu.Lock()
	conns := r.conns.conns
	r.conns.mu.Unlock()
	for _, rec := range conns {
		for s := rec.from; s <= rec.to; s++ {
			byKey[strconv.FormatInt(s, 16)+"."+strconv.FormatUint(uint64(rec.pid), 16)] = rec
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
		if n, ok := s.(Named); ok {
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
			rec := byKey[ev.Session]
			if rec == nil {
				continue
			}
			items := r.cache.Get(ev.Query)
			k := len(items)
			if k == 0 {
				continue
			}
			rec.logged++
			for _, it := range items {
				rec.lorder = chain(rec.lorder, it.Fingerprint)
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
					code = UnknownSQLState
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
		return fmt.Errorf("%w: its lines have no session id (%%c), so they cannot be matched to the replay's connections", ErrTargetLog)
	case tl.Executions == 0 && len(conns) > 0:
		return fmt.Errorf("%w: it shows no statement of the replay's %d connections (%d statements of others): is it the log of this target, covering the replay, with log_min_duration_statement = 0?", ErrTargetLog, len(conns), events)
	case tl.Executions > 0 && tl.Untimed == tl.Executions:
		return fmt.Errorf("%w: its %d statements of the replay have no duration (log_statement logs statements without one)", ErrTargetLog, tl.Executions)
	}
	for _, rec := range conns {
		if rec.logged > 0 {
			tl.ConnectionsFound++
		}
		if rec.logged == rec.sent && rec.lorder == rec.order {
			tl.ExecutionsMatched += rec.logged
			continue
		}
		if len(tl.Mismatched) < results.MaxMismatched {
			tl.Mismatched = append(tl.Mismatched, results.ConnMismatch{PID: rec.pid, Sent: rec.sent, Logged: rec.logged, SameOrder: rec.logged == rec.sent})
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

// newConnRecord notes a connection opened between begin and end.
func newConnRecord(pid uint32, begin, end time.Time) *connRecord {
	return &connRecord{pid: pid, from: begin.Unix(), to: end.Unix()}
}
