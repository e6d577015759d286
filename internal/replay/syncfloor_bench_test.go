package replay

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/syncdep"
)

// stepped is one captured execution with what it waits for before it is
// sent (blocker: the next commit still awaited, nil when none) and the
// commit it marks done once it ran (done, or nil).
type stepped struct {
	ev      *event.Event
	blocker func() (ch <-chan struct{}, owner string)
	done    func()
	// last: a barrier at the log's end (the capture's ALTER SYSTEMs) or
	// a statement after it,
	// run once every session without one has run all its steps: the
	// replay's barrier waits for every earlier event, and so for every
	// earlier commit, in one wait.
	last bool
}

// syncSteps reads a capture in log order, as the dispatcher does, and
// returns each session's executions with their syncdep steps, decided
// by a Tracker of mode over the target's catalog, as the replay's
// syncStep does. Every transaction stays on the Tracker's Board until the
// loop marks it done.
func syncSteps(b *testing.B, c *pgcluster.Cluster, path string, mode syncdep.Mode) map[string][]stepped {
	ctx := context.Background()
	conn, err := pgconn.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		b.Fatal(err)
	}
	cat, err := syncdep.LoadCatalog(ctx, conn)
	conn.Close(ctx)
	if err != nil {
		b.Fatal(err)
	}
	tr := syncdep.NewTracker(mode)
	tr.SetCatalog("postgres", cat)
	cache := fingerprint.NewCache(0)
	sessions := map[string]*syncdep.Session{}
	m := map[string][]stepped{}
	barriers := 0
	for _, ev := range captured(b, path) {
		sx := sessions[ev.Session]
		if sx == nil {
			sx = tr.Session("postgres", ev.Session)
			sessions[ev.Session] = sx
		}
		st := sx.Event(syncExec(ev, cache.Get(ev.Query)))
		if st.Barrier && !strings.HasPrefix(ev.Query, "ALTER SYSTEM") {
			// The capture's last statement turns the logging off; any
			// other barrier would need the replay's wait for every
			// earlier event, which this loop does not make.
			b.Fatalf("a barrier in a pgbench capture: %q", ev.Query)
		}
		if st.Barrier || barriers > 0 {
			// The closing barrier, and what follows it (its
			// pg_reload_conf).
			barriers++
			m[ev.Session] = append(m[ev.Session], stepped{ev: ev, last: true})
			continue
		}
		board := tr.Board()
		step := stepped{ev: ev, blocker: func() (<-chan struct{}, string) {
			if tx := board.Blocker(st.Wait); tx != nil {
				return tx.Wait(), tx.Owner().(string)
			}
			return nil, ""
		}}
		if st.Commit != nil {
			step.done = st.Commit.Done
		}
		m[ev.Session] = append(m[ev.Session], step)
	}
	return m
}

// rowSteps is syncSteps by row instead of by relation, for pgbench's
// tpcb-like transactions only: each statement waits for the last commit
// of another session, before it ended in the log, that wrote a row it
// reads or writes (the row named by its key parameter; the history
// insert touches no row another statement reads). It measures what a
// finer order than syncdep's would leave of the waits; it is not a
// general dependency tracker (any other statement in a transaction fails
// the benchmark; pgbench's own queries before its run wait for nothing).
func rowSteps(b *testing.B, path string) map[string][]stepped {
	type txn struct {
		ch    chan struct{}
		owner string
	}
	// key parameter (1-based) of the row each statement touches.
	keyOf := map[string]struct {
		table string
		param int
		write bool
	}{
		"UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2;": {"a", 2, true},
		"SELECT abalance FROM pgbench_accounts WHERE aid = $1;":                {"a", 1, false},
		"UPDATE pgbench_tellers SET tbalance = tbalance + $1 WHERE tid = $2;":  {"t", 2, true},
		"UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2;": {"b", 2, true},
	}
	last := map[string]*txn{}     // row -> last transaction that wrote it and committed
	open := map[string][]string{} // session -> rows its open transaction wrote
	m := map[string][]stepped{}
	for _, ev := range captured(b, path) {
		st := stepped{ev: ev}
		q := strings.TrimSpace(ev.Query)
		switch k, ok := keyOf[q]; {
		case ok:
			if len(ev.Params) < k.param {
				b.Fatalf("%q: %d parameters", q, len(ev.Params))
			}
			row := k.table + ev.Params[k.param-1].Value
			if t := last[row]; t != nil && t.owner != ev.Session {
				st.blocker = func() (<-chan struct{}, string) {
					select {
					case <-t.ch:
						return nil, ""
					default:
						return t.ch, t.owner
					}
				}
			}
			if k.write {
				open[ev.Session] = append(open[ev.Session], row)
			}
		case q == "BEGIN;" || strings.HasPrefix(q, "INSERT INTO pgbench_history ") || strings.HasPrefix(q, "ALTER SYSTEM"):
		case q == "END;":
			t := &txn{ch: make(chan struct{}), owner: ev.Session}
			for _, row := range open[ev.Session] {
				last[row] = t
			}
			open[ev.Session] = open[ev.Session][:0]
			st.done = func() { close(t.ch) }
		case ev.Kind == event.Statement && len(open[ev.Session]) == 0:
			// pgbench's own queries before its run (the scale, the
			// partitions): nothing of the run's rows is written yet.
		default:
			b.Fatalf("rowSteps: not a pgbench tpcb-like statement: %q", q)
		}
		m[ev.Session] = append(m[ev.Session], st)
	}
	return m
}

// syncFloorRate is bareWireRate keeping the log's commit order as the
// replay's --sync does, and nothing else: before each execution it waits
// on the Board for the commits its step names, and it marks its own
// commit done as soon as it ran. No log reading, no dispatcher, no
// accounting: the least a client can do to replay in the same order, and
// so the cost that order has. Like the replay, a wait that has lasted
// deadlockCheckAfter while the session holds a transaction open looks
// for a cycle through the server's lock waits and the other sessions'
// sync waits, again every deadlockCheckEvery, and gives up when it finds
// one (a deadlock half of which is in the client), or at SyncTimeout.
func syncFloorRate(b *testing.B, c *pgcluster.Cluster, perSession map[string][]stepped) (rate float64, waits, parks, giveUps int) {
	ctx := context.Background()
	r := &Replayer{hard: ctx}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var n int
	type floorSession struct {
		s         *session
		pid       uint32
		waitingOn atomic.Pointer[string] // the session whose commit it waits for
	}
	sessions := map[string]*floorSession{}
	byPID := map[uint32]string{}
	for id := range perSession {
		conn, err := pgconn.Connect(ctx, c.DSN("postgres"))
		if err != nil {
			b.Fatal(err)
		}
		sessions[id] = &floorSession{s: &session{r: r, conn: conn}, pid: conn.PID()}
		byPID[conn.PID()] = id
	}
	// cycle reports whether the session me, waiting for owner's commit,
	// is in a cycle of waits: sync waits, and lock waits on the server
	// as conn (me's own, idle in its transaction) sees them now.
	cycle := func(me, owner string, conn *pgconn.PgConn) bool {
		rows, err := conn.Exec(ctx, "SELECT pid, pg_blocking_pids(pid) FROM pg_stat_activity WHERE datname = 'postgres'").ReadAll()
		if err != nil || len(rows) == 0 {
			b.Errorf("lock graph: %v", err)
			return false
		}
		edges := map[uint32][]uint32{}
		for _, row := range rows[0].Rows {
			pid, _ := strconv.ParseUint(string(row[0]), 10, 32)
			for f := range strings.SplitSeq(strings.Trim(string(row[1]), "{}"), ",") {
				if q, err := strconv.ParseUint(f, 10, 32); err == nil {
					edges[uint32(pid)] = append(edges[uint32(pid)], uint32(q))
				}
			}
		}
		seen := map[string]bool{}
		stack := []string{owner}
		for len(stack) > 0 {
			id := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if id == me {
				return true
			}
			if seen[id] {
				continue
			}
			seen[id] = true
			fs := sessions[id]
			if o := fs.waitingOn.Load(); o != nil {
				stack = append(stack, *o)
			}
			for _, q := range edges[fs.pid] {
				if o, ok := byPID[q]; ok {
					stack = append(stack, o)
				}
			}
		}
		return false
	}
	// plain: the sessions with no step at the log's end (stepped.last).
	var plain sync.WaitGroup
	isLast := func(st stepped) bool { return st.last }
	for _, sts := range perSession {
		if !slices.ContainsFunc(sts, isLast) {
			plain.Add(1)
		}
	}
	start := time.Now()
	for id, sts := range perSession {
		fs := sessions[id]
		s := fs.s
		hasLast := slices.ContainsFunc(sts, isLast)
		wg.Go(func() {
			if !hasLast {
				defer plain.Done()
			}
			defer s.conn.Close(ctx)
			w, p, g := 0, 0, 0
			t := time.NewTimer(time.Hour)
			t.Stop()
			for _, st := range sts {
				ev := st.ev
				if st.last {
					w++
					p++
					plain.Wait()
				}
				first := true
				var began, check time.Time
			wait:
				for st.blocker != nil {
					ch, owner := st.blocker()
					if ch == nil {
						break
					}
					if first {
						w++
						first = false
						began = time.Now()
						check = began.Add(deadlockCheckAfter)
					}
					p++
					fs.waitingOn.Store(&owner)
					for {
						t.Reset(max(0, time.Until(check)))
						select {
						case <-ch:
							t.Stop()
							continue wait
						case <-t.C:
						}
						if time.Since(began) >= DefaultSyncTimeout {
							g++
							break wait
						}
						if s.conn.TxStatus() != 'I' && cycle(id, owner, s.conn) {
							g++
							break wait
						}
						check = time.Now().Add(deadlockCheckEvery)
					}
				}
				fs.waitingOn.Store(nil)
				err := s.runBare(ctx, ev)
				if st.done != nil {
					st.done()
				}
				if err != nil && !ev.Failed {
					b.Error(err)
					return
				}
			}
			mu.Lock()
			n += len(sts)
			waits += w
			parks += p
			giveUps += g
			mu.Unlock()
		})
	}
	wg.Wait()
	return float64(n) / time.Since(start).Seconds(), waits, parks, giveUps
}
