package compare_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/logread"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/replay"
	"github.com/pgrehearse/pgrehearse/internal/report"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// perRequestLog writes a server log of n sessions that each connect, run
// one statement and leave, as an application that connects per request
// does, each beginning before the one before it ended, so that the
// replay runs them side by side.
func perRequestLog(t *testing.T, n int) string {
	t.Helper()
	return perRequestLogOf(t, n, "postgres")
}

// perRequestLogOf is perRequestLog of user's sessions.
func perRequestLogOf(t *testing.T, n int, user string) string {
	t.Helper()
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	type entry struct {
		at   time.Time
		text string
	}
	var lines []entry
	for i := range n {
		pid := 2000 + i
		at := start.Add(time.Duration(i) * time.Millisecond)
		line := func(d time.Duration, msg string) {
			lines = append(lines, entry{at.Add(d), fmt.Sprintf("%s [%d] %s@postgres/php %x.%x %s\n", at.Add(d).Format("2006-01-02 15:04:05.000 MST"), pid, user, at.Unix(), pid, msg)})
		}
		line(0, "LOG:  connection authorized: user="+user+" database=postgres application_name=php")
		line(40*time.Millisecond, "LOG:  duration: 0.100 ms  statement: SELECT 1")
		line(50*time.Millisecond, "LOG:  disconnection: session time: 0:00:00.050 user="+user+" database=postgres host=[local]")
	}
	// In time order, as the server writes them.
	slices.SortStableFunc(lines, func(a, b entry) int { return a.at.Compare(b.at) })
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l.text)
	}
	path := filepath.Join(t.TempDir(), "postgresql.log")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func replayOnce(t *testing.T, path, dsn string) *results.Result {
	t.Helper()
	rd, err := logread.Open(path, logread.Options{Prefix: "%m [%p] %q%u@%d/%a %c "})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	r, err := replay.New(replay.Options{Target: dsn})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := r.Run(ctx, ctx, []event.Source{rd})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestConnectionSetupOnServer replays a log of sessions that each connect
// for one statement, once onto a server and once more after a login event
// trigger (PostgreSQL 17) made each connection sleep 250 ms: every
// connection is timed on the target, and the comparison's connection
// setup row, beside the query, is slower by far beyond the default noise
// floor of one run a side, and says so in its text; the verdict is the
// query's alone. A session whose role the target lacks counts a failed
// attempt, untimed.
func TestConnectionSetupOnServer(t *testing.T) {
	const sessions = 12
	c := pgclustertest.StartT(t, pgcluster.Options{Version: 17})
	ctx := context.Background()
	path := perRequestLog(t, sessions)
	base := replayOnce(t, path, c.DSN("postgres"))
	for _, sql := range []string{
		`CREATE FUNCTION slow_login() RETURNS event_trigger LANGUAGE plpgsql AS $$BEGIN PERFORM pg_sleep(0.25); END$$`,
		`CREATE EVENT TRIGGER slow_login ON login EXECUTE FUNCTION slow_login()`,
	} {
		if err := c.Exec(ctx, "postgres", sql); err != nil {
			t.Fatal(err)
		}
	}
	cand := replayOnce(t, path, c.DSN("postgres"))
	t.Logf("spans %.2f s, %.2f s", base.WallSeconds, cand.WallSeconds)
	if refused := replayOnce(t, perRequestLogOf(t, 1, "nobody"), c.DSN("postgres")).Connections; refused == nil || refused.Count != 0 || refused.Failed != 1 {
		t.Errorf("a role the target lacks: connections %+v, want 1 failed and none timed", refused)
	}
	for name, res := range map[string]*results.Result{"baseline": base, "candidate": cand} {
		if cs := res.Connections; cs == nil || cs.Count != sessions || cs.Failed != 0 || cs.Setup.Hist == "" {
			t.Fatalf("%s: connections %+v, want %d timed", name, cs, sessions)
		}
	}
	if cand.Connections.MeanMS < 250 || cand.Connections.P95MS < 250 {
		t.Errorf("connections behind a 250 ms login trigger took %.1f ms on average, p95 %.1f ms", cand.Connections.MeanMS, cand.Connections.P95MS)
	}
	rep, err := compare.Compare(base, cand, compare.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cs := rep.ConnectionSetup
	if cs == nil || cs.Kind != compare.RowConnectionSetup || cs.Effects == nil {
		t.Fatalf("connection setup row %+v", cs)
	}
	if m := cs.Effects.Mean; m.Change != compare.ChangeSlower || !m.Beyond || cs.Status != compare.StatusRegressed {
		t.Errorf("connection setup %s, mean %.2fx (%.2f-%.2f) %s, beyond floors %v; want regressed", cs.Status, m.Ratio, m.Low, m.High, m.Change, m.Beyond)
	}
	if rep.Query(cs.Fingerprint) != nil || len(rep.Queries) != 1 {
		t.Errorf("the connection setup is among the queries: %d queries", len(rep.Queries))
	}
	var text strings.Builder
	if err := report.WriteComparison(&text, rep, 10); err != nil {
		t.Fatal(err)
	}
	head, row := report.ConnectionSetupRow(rep)
	if !strings.Contains(text.String(), report.ConnectionSetupTitle) || row == nil || row[len(row)-2] != "regressed" || head[0] != "connections B" || row[0] != fmt.Sprint(sessions) {
		t.Errorf("connection setup row %q in:\n%s", row, text.String())
	}
}
