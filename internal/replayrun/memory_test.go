package replayrun

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/replay"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/source"
)

// runClean replays input onto target at speed, its result logged with
// -v, and fails t if the run failed or gave reasons against its result.
func runClean(ctx context.Context, t *testing.T, input source.Origin, target string, speed float64) *results.Result {
	t.Helper()
	o, err := Run(ctx, Config{
		Input:      input,
		Replay:     replay.Options{Target: target, Speed: speed},
		MaxSkipped: 0.1, MaxErrorRate: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if testing.Verbose() {
		b, _ := json.MarshalIndent(o.Result, "", " ")
		t.Logf("%s", b)
	}
	if len(o.Reasons) != 0 {
		t.Errorf("reasons %v", o.Reasons)
	}
	return o.Result
}

// TestRunMemorySource: a workload that is no log (events a program made)
// goes into a replay through the same seam as a log: two sessions, each
// inserting and then failing once, replayed as its own user and database,
// and the result accounts for it with no lines.
func TestRunMemorySource(t *testing.T) {
	functionalCase(t)
	ctx := context.Background()
	b := pgclustertest.StartT(t, pgcluster.Options{})
	pgclustertest.Exec(t, b, "postgres", "CREATE TABLE items (id int PRIMARY KEY, session int)")
	t0 := time.Date(2026, 11, 25, 6, 0, 0, 0, time.UTC).UnixMicro()
	var evs []*event.Event
	for s := range 2 {
		sess := fmt.Sprintf("mem.%d", s)
		at := func(i int) int64 { return t0 + int64(s*1000+i*10) }
		base := event.Event{Session: sess, PID: int32(100 + s), User: "postgres", Database: "postgres", Application: "shop", Duration: event.NoDuration}
		conn := base
		conn.Kind, conn.Time = event.Connect, at(0)
		evs = append(evs, &conn)
		for i := range 5 {
			ev := base
			ev.Kind, ev.Time, ev.Duration = event.Execute, at(1+i), 50
			ev.Query = "INSERT INTO items VALUES ($1, $2)"
			ev.Params = []event.Param{{Value: fmt.Sprint(s*100 + i)}, {Value: fmt.Sprint(s)}}
			evs = append(evs, &ev)
		}
		fail := base
		fail.Kind, fail.Time, fail.Query, fail.Failed, fail.SQLState = event.Statement, at(7), "SELECT 1/0", true, "22012"
		end := base
		end.Kind, end.Time = event.Disconnect, at(8)
		evs = append(evs, &fail, &end)
	}
	res := runClean(ctx, t, source.Memory{Name: "generated", Events: evs}, b.DSN("postgres"), 0)
	if s := res.Statements; s.Total != 12 || s.Executed != 10 || s.Failed != 2 {
		t.Errorf("statements %+v, want 12 of which 2 failed", s)
	}
	if res.Outcomes.BothFailed != 2 || res.Outcomes.FailedOnlyOnTarget != 0 {
		t.Errorf("outcomes %+v", res.Outcomes)
	}
	if got := rows(t, b.DSN("postgres")); got != "10/2" {
		t.Errorf("target rows %s, want 10/2", got)
	}
	if res.Lines != nil {
		t.Errorf("lines %+v of a source that read no log", res.Lines)
	}
	if in := res.Input; in == nil || len(in.Files) != 1 || in.Files[0].Name != "generated" {
		t.Errorf("input %+v", res.Input)
	}
}
