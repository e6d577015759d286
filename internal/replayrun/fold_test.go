package replayrun

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/replay"
	"github.com/pgrehearse/pgrehearse/internal/source"
)

// TestRunFoldSource: a folded log is one source of one replay. Three
// slices of a log, each with two sessions (their ids the same in every
// slice) that insert rows of their own and update one row all sessions
// share, each in a transaction, replay at once at the log's pace,
// synchronized: every statement of every slice runs, each slice's
// sessions are sessions of their own, and the shared row, which the
// slices' sessions update at the same shifted times, is waited for by
// no sync wait across slices (none gives up), only its row lock.
func TestRunFoldSource(t *testing.T) {
	// Sequential: a synchronized replay at the log's pace, whose sync
	// waits must not time out.
	ctx := context.Background()
	b := pgclustertest.StartT(t, pgcluster.Options{})
	pgclustertest.Exec(t, b, "postgres", "CREATE TABLE items (id int PRIMARY KEY, session int); CREATE TABLE total (id int PRIMARY KEY, n int); INSERT INTO total VALUES (1, 0)")
	const k, width = 3, int64(400_000) // slices of 400 ms
	t0 := time.Date(2026, 11, 25, 6, 0, 0, 0, time.UTC).UnixMicro()
	var evs []*event.Event
	perSlice := 0
	for slice := range k {
		n := 0
		for s := range 2 {
			sess := fmt.Sprintf("fold.%d", s)
			at := func(i int) int64 { return t0 + int64(slice)*width + int64(s*7_000+i*20_000) }
			base := event.Event{Session: sess, PID: int32(100 + s), User: "postgres", Database: "postgres", Application: "shop", Duration: 100}
			conn := base
			conn.Kind, conn.Time, conn.Duration = event.Connect, at(0), event.NoDuration
			evs = append(evs, &conn)
			exec := func(i int, q string, params ...string) {
				ev := base
				ev.Kind, ev.Time, ev.Query = event.Execute, at(i), q
				for _, p := range params {
					ev.Params = append(ev.Params, event.Param{Value: p})
				}
				evs = append(evs, &ev)
				n++
			}
			for i := range 4 {
				exec(1+i, "INSERT INTO items VALUES ($1, $2)", fmt.Sprint(slice*100+s*10+i), fmt.Sprint(slice))
			}
			exec(5, "BEGIN")
			exec(6, "UPDATE total SET n = n + 1 WHERE id = $1", "1")
			exec(7, "COMMIT")
			end := base
			end.Kind, end.Time, end.Duration = event.Disconnect, at(8), event.NoDuration
			evs = append(evs, &end)
		}
		perSlice = n
	}
	// In the log's order, by time: the sessions of one slice interleave.
	sortByTime(evs)
	fold := source.Fold{Of: source.Memory{Name: "generated", Events: evs}, K: k, First: t0, Width: width}
	res := runClean(ctx, t, fold, b.DSN("postgres"), 1)
	if s := res.Statements; s.Total != int64(k*perSlice) || s.Executed != s.Total || s.Failed != 0 {
		t.Errorf("statements %+v, want the %d of the %d slices executed", s, k*perSlice, k)
	}
	if res.Sessions.Total != 2*k {
		t.Errorf("sessions %d, want %d: each slice's of its own", res.Sessions.Total, 2*k)
	}
	if res.Filtered.Events != 0 {
		t.Errorf("filtered %+v of a fold over the whole log", res.Filtered)
	}
	if got := rows(t, b.DSN("postgres")); got != fmt.Sprintf("%d/%d", k*8, k) {
		t.Errorf("target rows %s, want %d/%d", got, k*8, k)
	}
	conn := pgclustertest.Connect(ctx, t, b.DSN("postgres"))
	defer conn.Close(ctx)
	var total int
	if err := conn.QueryRow(ctx, "SELECT n FROM total WHERE id = 1").Scan(&total); err != nil {
		t.Fatal(err)
	}
	if total != 2*k {
		t.Errorf("the shared row was updated %d times, want %d", total, 2*k)
	}
	if sy := res.Sync; sy == nil {
		t.Error("no synchronization in the result")
	} else if sy.Timeouts != 0 || sy.Deadlocks != 0 {
		t.Errorf("sync waits gave up: %+v", sy)
	}
	// The slices ran at once: about one slice's span, not three.
	if res.FirstTime == 0 || int64(res.LastTime-res.FirstTime) >= width {
		t.Errorf("log times replayed %d to %d: more than one slice's %d µs", res.FirstTime, res.LastTime, width)
	}
}

func sortByTime(evs []*event.Event) {
	for i := 1; i < len(evs); i++ {
		for j := i; j > 0 && evs[j].Time < evs[j-1].Time; j-- {
			evs[j], evs[j-1] = evs[j-1], evs[j]
		}
	}
}

// TestRunFoldLanes: a synchronized replay of a folded log orders commits
// within each slice, never across slices. In each of two slices, a
// session reads a table after another session of the first slice
// committed its update in the log; on the target that commit comes late
// (its transaction sleeps). The first slice's reader waits for it; the
// second slice's, at the same shifted time, does not: the commit is
// another slice's traffic.
func TestRunFoldLanes(t *testing.T) {
	// Sequential: a synchronized replay at the log's pace, counting the
	// sync waits that a late commit causes.
	ctx := context.Background()
	b := pgclustertest.StartT(t, pgcluster.Options{})
	pgclustertest.Exec(t, b, "postgres", "CREATE TABLE slow (id int PRIMARY KEY, n int); INSERT INTO slow VALUES (1, 0)")
	const width = int64(1_000_000)
	t0 := time.Date(2026, 11, 25, 6, 0, 0, 0, time.UTC).UnixMicro()
	var evs []*event.Event
	add := func(kind event.Kind, sess string, at int64, q string) {
		evs = append(evs, &event.Event{Kind: kind, Session: sess, User: "postgres", Database: "postgres", Time: t0 + at, Query: q,
			Duration: map[bool]int64{true: event.NoDuration, false: 1000}[q == ""]})
	}
	add(event.Connect, "w", 50_000, "")
	add(event.Statement, "w", 100_000, "BEGIN")
	add(event.Statement, "w", 110_000, "UPDATE slow SET n = n + 1 WHERE id = 1")
	add(event.Statement, "w", 120_000, "SELECT pg_sleep(0.8)") // 1 ms in the log
	add(event.Statement, "w", 130_000, "COMMIT")
	// Still open when the readers start: a reader that began after it
	// ended would take its client and wait for its end, not for its
	// commit (replay's dispatcher.takeClient).
	add(event.Disconnect, "w", 700_000, "")
	for slice := range int64(2) {
		add(event.Connect, "r", slice*width+400_000, "")
		add(event.Statement, "r", slice*width+500_000, "SELECT n FROM slow")
		add(event.Disconnect, "r", slice*width+600_000, "")
	}
	sortByTime(evs)
	o, err := Run(ctx, Config{
		Input:      source.Fold{Of: source.Memory{Name: "generated", Events: evs}, K: 2, First: t0, Width: width},
		Replay:     replay.Options{Target: b.DSN("postgres"), Speed: 1},
		MaxSkipped: 0.1, MaxErrorRate: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	res := o.Result
	if s := res.Statements; s.Executed != 6 || s.Failed != 0 {
		t.Errorf("statements %+v, want 6 executed", s)
	}
	if res.Sessions.Total != 3 {
		t.Errorf("sessions %d, want 3", res.Sessions.Total)
	}
	if sy := res.Sync; sy == nil || sy.Waited != 1 || sy.Timeouts != 0 {
		t.Errorf("sync %+v: want the first slice's reader alone to wait", sy)
	}
}
