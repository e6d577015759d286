package replay

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/source"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

func TestScan(t *testing.T) {
	functionalCase(t)
	ev := func(kind event.Kind, session, user, db, app string, at time.Duration, q string) *event.Event {
		return &event.Event{Kind: kind, Session: session, User: user, Database: db, Application: app, Time: t0 + at.Microseconds(), Query: q}
	}
	evs := []*event.Event{
		// An original connection that failed: no statement, no check.
		ev(event.Connect, "s0", "nobody", "nowhere", "a", 0, ""),
		ev(event.Statement, "s1", "app", "shop", "web", time.Second, "SELECT 1"),
		// The log creates a role and a database before using them.
		ev(event.Statement, "s1", "app", "shop", "web", 2*time.Second, "create role reporter login"),
		ev(event.Statement, "s1", "app", "shop", "web", 2*time.Second, "CREATE DATABASE reports"),
		ev(event.Statement, "s2", "reporter", "shop", "web", 3*time.Second, "SELECT 1"),
		ev(event.Statement, "s3", "app", "reports", "web", 3*time.Second, "SELECT 1"),
		ev(event.Execute, "s4", "prod", "shop", "web", 4*time.Second, "SELECT $1"),
		ev(event.Statement, "s3", "app", "reports", "web", 3*time.Second, "drop table a; DROP TABLE b; TRUNCATE c"),
		ev(event.Statement, "s3", "app", "reports", "web", 3*time.Second, "DELETE FROM d"),
		ev(event.Statement, "s3", "app", "reports", "web", 3*time.Second, "DELETE FROM d WHERE id = 1"),
		ev(event.Statement, "s5", "app", "shop", "batch", 5*time.Second, "SELECT 1"), // filtered out
		ev(event.Statement, "s5", "app", "shop", "batch", 5*time.Second, "DROP TABLE x"),
		ev(event.Statement, "s6", "app", "other", "web", 9*time.Second, "SELECT 1"), // after End
		ev(event.Disconnect, "s1", "app", "shop", "web", 6*time.Second, ""),
		// s1 again after its disconnection (a reused id): decided anew.
		ev(event.Statement, "s1", "app", "shop2", "web", 7*time.Second, "SELECT 1"),
	}
	r, err := New(Options{Target: "host=/tmp", UserMap: map[string]string{"prod": "app"}})
	sel := source.Selection{Applications: []string{"web"}, End: t0 + (8 * time.Second).Microseconds()}
	if err != nil {
		t.Fatal(err)
	}
	sc, err := r.Scan(context.Background(), selected(sel, &sliceSource{evs: evs}), 0)
	if err != nil || !sc.Complete {
		t.Fatalf("complete %v, err %v", sc.Complete, err)
	}
	want := []Login{{"app", "shop"}, {"app", "shop2"}}
	if !reflect.DeepEqual(sc.Logins, want) {
		t.Errorf("logins %v, want %v", sc.Logins, want)
	}
	wantDestructive := map[string]int64{"DROP TABLE": 2, "TRUNCATE": 1, "DELETE without WHERE": 1}
	if !reflect.DeepEqual(sc.Destructive, wantDestructive) {
		t.Errorf("destructive %v, want %v", sc.Destructive, wantDestructive)
	}
	// s1 to s4 open at once at 4 s (s0 and s5 filtered out); s1's
	// disconnection and its id's reuse do not go above.
	if sc.Peak != 4 || sc.PeakAt != t0+(4*time.Second).Microseconds() {
		t.Errorf("peak %d at %d, want 4 at %d", sc.Peak, sc.PeakAt, t0+(4*time.Second).Microseconds())
	}
	sc, _ = r.Scan(context.Background(), selected(sel, &sliceSource{evs: evs}), 3)
	if sc.Complete || !reflect.DeepEqual(sc.Logins, want[:1]) {
		t.Errorf("bounded: %v (complete %v), want %v", sc.Logins, sc.Complete, want[:1])
	}
}

func TestWarnLag(t *testing.T) {
	functionalCase(t)
	res := results.New(results.KindReplay, results.LatencyClient)
	res.Lag = &results.Distribution{Count: 100, P50: 1, P99: 90, Max: 120}
	warnLag(res, 100*time.Millisecond, 0)
	if len(res.Warnings) != 0 {
		t.Errorf("p99 90 ms under 100 ms warned: %v", res.Warnings)
	}
	res.Lag.P99 = 6200
	res.WallSeconds, res.ClientCPUSeconds, res.TargetLocal = 46.6, 40, true
	warnLag(res, 100*time.Millisecond, 0)
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "lag p99 6200.0 ms") ||
		!strings.Contains(res.Warnings[0], "timings are doubtful") || !strings.Contains(res.Warnings[0], "competed for its CPU") {
		t.Errorf("warnings %v", res.Warnings)
	}
	// Which side was slow: the target when sessions were still busy
	// there at their next statement's due time, else the replayer; the
	// observer's wait events say what the target's sessions did.
	res.Warnings = nil
	res.LagSources = &results.LagSources{TargetMS: 900, ReplayerMS: 100}
	warnLag(res, 100*time.Millisecond, 3*time.Millisecond)
	NoteTargetWaits(res, []WaitShare{{"Lock/transactionid", 0.6}, {"CPU", 0.3}})
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "the target was the slow side: 90%") ||
		!strings.Contains(res.Warnings[0], "meanwhile: Lock/transactionid 60%, CPU 30%") {
		t.Errorf("target side: %v", res.Warnings)
	}
	res.Warnings = nil
	res.LagSources = &results.LagSources{TargetMS: 100, ReplayerMS: 900}
	warnLag(res, 100*time.Millisecond, 3*time.Millisecond)
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "the replayer was the slow side: 90%") ||
		!strings.Contains(res.Warnings[0], "scheduled") || !strings.Contains(res.Warnings[0], "competed for its CPU") {
		t.Errorf("replayer side: %v", res.Warnings)
	}
	res.Warnings = nil
	warnLag(res, 0, 0)
	if len(res.Warnings) != 0 {
		t.Errorf("MaxLag 0 warned: %v", res.Warnings)
	}
}
