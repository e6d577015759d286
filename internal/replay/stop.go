package replay

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/results"

	"github.com/jackc/pgx/v5/pgconn"
)

// HardStop returns the second of the two contexts Run takes. A replay ends
// early in two steps: stop being done (a first Ctrl-C, the end of a
// sweep's step) stops issuing statements and lets those in flight finish;
// the context returned is cancelled grace later, or at once when abort is
// closed (a second Ctrl-C, or the caller's own cancellation when stop was
// only a deadline), and cancels the statements still in flight. Until stop
// is done, abort is not looked at. The returned CancelFunc releases the
// context and its goroutine; call it when the replay has returned.
func HardStop(stop context.Context, grace time.Duration, abort <-chan struct{}) (context.Context, context.CancelFunc) {
	hard, cancel := context.WithCancel(context.WithoutCancel(stop))
	go func() {
		select {
		case <-stop.Done():
		case <-hard.Done():
			return
		}
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-t.C:
		case <-abort:
		case <-hard.Done():
		}
		cancel()
	}()
	return hard, cancel
}

// stopTimeout bounds what the stop waits for on the server: a cancel
// request's delivery, the answer to a cancelled statement, the ROLLBACK
// of an open transaction. A target that does not answer in that time has
// its connections cut instead.
const stopTimeout = 2 * time.Second

// Stopping, on the server too. A first stop (Ctrl-C) lets the statements
// in flight finish; when the hard context ends (the grace is over, a
// second Ctrl-C, SIGTERM) every statement still in flight is cancelled on
// the server with a CancelRequest, and counted as interrupted; each
// session then rolls back its open transaction (closeConn) before it
// closes its connection, and only then is the result written. Closing a
// connection alone would leave the backend running its statement (a
// pg_sleep(60), a long report) until it next writes to the client.

// watchHard makes the hard context's end interrupt any exchange on conn
// (interruptInFlight). The returned function stops the watch.
func (s *session) watchHard(conn *pgconn.PgConn) func() bool {
	hard := s.r.hard
	if hard == nil || hard.Done() == nil {
		return nil
	}
	return context.AfterFunc(hard, func() { s.interruptInFlight(conn) })
}

// interruptInFlight cancels the session's statement in flight on the
// server, if it has one: a CancelRequest, after which the server answers
// the exchange with an error (57014) within stopTimeout, or else a past
// deadline on the socket that ends the exchange at once. With the target
// silent, only the deadline.
func (s *session) interruptInFlight(conn *pgconn.PgConn) {
	r := s.r
	// Before busyUntil is read: a session about to send a statement
	// either is seen in flight here, or sees hardDone (see exec).
	r.hardDone.Store(true)
	if s.busyUntil.Load() == 0 {
		return
	}
	nc := conn.Conn()
	if !r.silent.Load() {
		ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
		err := conn.CancelRequest(ctx)
		cancel()
		if err == nil {
			r.c.cancelled.Add(1)
			nc.SetDeadline(time.Now().Add(stopTimeout))
			return
		}
	}
	nc.SetDeadline(time.Unix(1, 0))
}

// watchFaults sets up what Run needs to stop on the server and to notice
// a silent target: the replay's own hard context (ended by hard, or from
// within when the target goes silent), which also stops the replay, and
// the I/O watch. The function returned ends them.
func (r *Replayer) watchFaults(hard context.Context) func() {
	r.hard, r.cancelHard = context.WithCancel(hard)
	stopWatch := context.AfterFunc(r.hard, func() {
		r.hardDone.Store(true)
		r.abort()
	})
	// The watch's probes end with the replay, not beyond.
	watchCtx, endWatch := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	if !r.opts.DryRun {
		wg.Go(func() { r.watchIO(watchCtx) })
	}
	return func() {
		endWatch()
		wg.Wait()
		stopWatch()
		r.cancelHard()
	}
}

// faultsResult adds to res what fault recovery did: the replay is marked
// degraded when recovering changed its timings, and a stopped replay says
// what the stop did on the server.
func (r *Replayer) faultsResult(res *results.Result) {
	if n := res.Sessions.Reconnects; n > 0 {
		res.MarkDegraded(results.DegradedReconnected, fmt.Sprintf("%d session%s reconnected after %s connection broke (a restart, a crash, "+
			"a terminated backend): the statements around each break waited for the target to come back, and ran on a server that had just restarted",
			n, plural(n), pluralIts(n)))
	}
	if n := r.c.silentConns.Load(); n > 0 {
		res.MarkDegraded(results.DegradedSilentConnections, fmt.Sprintf("%d connection%s got no answer within the I/O timeout while the target answered others, and %s cut",
			n, plural(n), map[bool]string{true: "was", false: "were"}[n == 1]))
	}
	if st := res.Sync; st != nil && st.Timeouts > 0 {
		ran := max(res.Outcomes.Ran, 1)
		if share := float64(st.Timeouts) / float64(ran); share > MaxSyncTimeoutShare {
			res.MarkDegraded(results.DegradedSyncTimeouts, fmt.Sprintf("%d sync waits (%.2f%% of the statements run, above %.2f%%) gave up after %v without progress "+
				"(%s): those statements ran late and before what they depended on", st.Timeouts, 100*share, 100*MaxSyncTimeoutShare,
				r.opts.SyncTimeout, causesText(st.TimeoutsByCause)))
		}
	}
	if n := r.c.realigned.Load(); n > 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%d query string%s that closed a transaction block in the log (BEGIN; ...; COMMIT in one string) "+
			"failed on the target before the COMMIT, leaving the block open and aborted; %s rolled back, so that the session's next statements ran as logged",
			n, plural(n), map[bool]string{true: "it was", false: "they were"}[n == 1]))
	}
	if r.stopped() && r.gone.Load() == nil {
		if c, rb := r.c.cancelled.Load(), r.c.rolledBack.Load(); c+rb > 0 {
			res.Warnings = append(res.Warnings, fmt.Sprintf("stopped: %d statement%s in flight cancelled on the target, %d open transaction%s rolled back",
				c, plural(c), rb, plural(rb)))
		}
	}
}

func plural(n int64) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func pluralIts(n int64) string {
	if n == 1 {
		return "its"
	}
	return "their"
}

// causesText lists timeouts by cause, most first.
func causesText(m map[string]int64) string {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(m[b], m[a]), cmp.Compare(a, b)) })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d %s", m[k], k)
	}
	return strings.Join(parts, ", ")
}

// errorWindow counts the outcomes of a replay's first statements
// (Options.ErrorWindow) until it can tell whether the target failed them
// all where the original had not.
type errorWindow struct {
	mu      sync.Mutex
	n       int              // statements of the window run so far
	decided bool             // the window is full, or one succeeded
	codes   map[string]int64 // their SQLSTATEs
}

// record counts one statement run: onlyTarget when it failed on the
// target and not in the original, with the target's SQLSTATE. When the
// window fills with such failures alone, the replay stops early, saying
// why; one statement that did not fail so decides it goes on.
func (w *errorWindow) record(r *Replayer, onlyTarget bool, code string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.decided {
		return
	}
	if !onlyTarget {
		w.decided = true
		return
	}
	if w.codes == nil {
		w.codes = map[string]int64{}
	}
	w.n++
	w.codes[code]++
	if w.n < r.opts.ErrorWindow {
		return
	}
	w.decided = true
	msg := fmt.Sprintf("the first %d statements all failed on the target, none of them in the original (by SQLSTATE: %s): "+
		"the target lacks what the log's statements need (its schema, its data, the right database), so the replay stopped early",
		w.n, causesText(w.codes))
	r.failing.Store(&msg)
	r.abort()
}
