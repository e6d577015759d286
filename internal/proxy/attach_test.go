package proxy

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/capture"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// TestAttachDetachUnderTraffic: sinks attached and detached while
// sessions that started before run queries without a pause. Those
// sessions never fail, keep their backends and give no sink a record;
// each sink holds the sessions that started while it was attached, each
// from its startup to one KindEnd, last, those open at the detach ended
// as open; a second Attach is refused.
func TestAttachDetachUnderTraffic(t *testing.T) {
	functionalCase(t)
	c := pgclustertest.StartT(t, pgcluster.Options{})
	r := startProxy(t, Config{Upstream: c.DSN("postgres")})
	r.p.Detach() // startProxy attaches its sink from the start
	ctx := context.Background()
	dsn := r.dsn("postgres", "postgres", "sslmode=disable")

	const busy = 4
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, busy)
	before := map[uint32]bool{}
	for range busy {
		conn := pgclustertest.PgConn(ctx, t, dsn)
		defer conn.Close(ctx)
		before[conn.PID()] = true
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				res, err := conn.Exec(ctx, "SELECT pg_backend_pid(), "+strconv.Itoa(i)).ReadAll()
				if err != nil {
					errs <- err
					return
				}
				if got := string(res[0].Rows[0][0]); got != strconv.Itoa(int(conn.PID())) {
					errs <- errors.New("backend " + got + ", was " + strconv.Itoa(int(conn.PID())))
					return
				}
			}
		})
	}

	var held []*pgconn.PgConn
	for round := range 5 {
		// The session closed in the round before ends when the proxy
		// reads its end, which a busy machine may not have run yet: the
		// count below is of the sessions open at the attach.
		poll(t, "the last round's closed session to end", func() bool {
			r.p.mu.Lock()
			defer r.p.mu.Unlock()
			return len(r.p.sessionsLocked()) == busy+len(held)
		})
		sink := &memSink{}
		openBefore, err := r.p.Attach(sink)
		if err != nil {
			t.Fatal(err)
		}
		if want := int64(busy + len(held)); openBefore != want {
			t.Errorf("round %d: Attach counted %d sessions open before, want %d", round, openBefore, want)
		}
		if _, err := r.p.Attach(&memSink{}); !errors.Is(err, ErrAttached) {
			t.Errorf("round %d: a second Attach: %v, want ErrAttached", round, err)
		}
		// One session ends within the window, one stays open across
		// the detach.
		for _, keep := range []bool{false, true} {
			conn := pgclustertest.PgConn(ctx, t, dsn)
			if _, err := conn.Exec(ctx, "SELECT 'round "+strconv.Itoa(round)+"'").ReadAll(); err != nil {
				t.Fatal(err)
			}
			if keep {
				held = append(held, conn)
				defer conn.Close(ctx)
			} else {
				conn.Close(ctx)
			}
		}
		open := r.p.Detach()
		m := sink.sessions()
		ends := checkSessions(t, m)
		openEnds := int64(0)
		for id, end := range ends {
			if end == capture.EndOpen {
				openEnds++
			}
			for _, rec := range m[id] {
				if rec.Kind == capture.KindStartup && before[rec.BackendPID] {
					t.Errorf("round %d: a session open before the attach (backend %d) was recorded", round, rec.BackendPID)
				}
			}
		}
		// The ended session may have been seen going only after the
		// detach: then it is recorded as open too.
		if len(m) != 2 || open != openEnds || open < 1 {
			t.Errorf("round %d: %d sessions recorded, %d ended open, Detach said %d: want 2, the held one open", round, len(m), openEnds, open)
		}
		n := len(sink.records())
		if extra := r.p.Detach(); extra != 0 {
			t.Errorf("round %d: a second Detach recorded %d sessions", round, extra)
		}
		if _, err := held[len(held)-1].Exec(ctx, "SELECT 'after the detach'").ReadAll(); err != nil {
			t.Fatal(err)
		}
		if got := len(sink.records()); got != n {
			t.Errorf("round %d: %d records reached the sink after Detach", round, got-n)
		}
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a session open before the recordings: %v", err)
	}
}
