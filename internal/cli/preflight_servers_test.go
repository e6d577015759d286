package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/rehearse"
	"github.com/pgrehearse/pgrehearse/internal/report/rehearsal"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// TestPreflightServers (issue 57 items 4 and 8): before anything is
// replayed, one server reached under two spellings is refused as control
// and candidate (exit 2, both DSNs named without their password); a log
// with more sessions open at once than a target's free connection slots
// is refused by replay's pre-flight and by rehearse's, on the candidate
// before the control's first round, and --ignore-connection-limit
// replays anyway.
func TestPreflightServers(t *testing.T) {
	parallelCase(t)
	ctx := context.Background()
	// 8 connections less 3 reserved for superusers: 5 free at most.
	small := pgclustertest.StartT(t, pgcluster.Options{Settings: map[string]string{"max_connections": "8"}})
	dir := t.TempDir()
	crowd := crowdLog(t, dir, 10)
	tcp := fmt.Sprintf("host=127.0.0.1 port=%d dbname=postgres sslmode=disable user=postgres password=not-printed", small.Port())

	t.Run("same server, two spellings", func(t *testing.T) {
		start := time.Now()
		code, stdout, stderr := runRehearse(t, "", "--control", small.DSN("postgres"), "--candidate", tcp,
			"--reset", "none", "--speed", "0", "--prefix", testPrefix, "--out", filepath.Join(dir, "same"), crowd)
		if code != ExitUsage {
			t.Errorf("exit %d, want %d:\n%s", code, ExitUsage, stderr)
		}
		for _, w := range []string{"are the same server", "port " + fmt.Sprint(small.Port()), "system identifier ",
			fmt.Sprintf("host=127.0.0.1 port=%d", small.Port()), "the candidate must be another target"} {
			if !strings.Contains(stderr, w) {
				t.Errorf("message lacks %q:\n%s", w, stderr)
			}
		}
		if strings.Contains(stdout+stderr, "not-printed") {
			t.Errorf("a password is printed:\n%s", stderr)
		}
		if strings.Contains(stderr, "round 1") || time.Since(start) > 10*time.Second {
			t.Errorf("a round ran, or the refusal took %v:\n%s", time.Since(start), stderr)
		}
	})

	t.Run("replay refused", func(t *testing.T) {
		start := time.Now()
		code, stdout, stderr := runCLI(ctx, "", "replay", "--target", small.DSN("postgres"), "--prefix", testPrefix, crowd)
		if code != ExitFailure {
			t.Errorf("exit %d, want %d", code, ExitFailure)
		}
		for _, w := range []string{"PRE-FLIGHT FAILED", "nothing was replayed", "the log holds up to 10 sessions open at once (at 2026-03-01 10:00:00 UTC)",
			"free connection slots (max_connections 8 less 3 superuser_reserved_connections and ", "raise its max_connections to at least 13 (the peak and the reserved slots)", "--ignore-connection-limit"} {
			if !strings.Contains(stderr, w) {
				t.Errorf("message lacks %q:\n%s", w, stderr)
			}
		}
		if strings.Contains(stdout, "Replay at speed") || time.Since(start) > 10*time.Second {
			t.Errorf("the replay ran, or the refusal took %v:\n%s", time.Since(start), stdout)
		}
	})

	t.Run("replay anyway", func(t *testing.T) {
		_, stdout, stderr := runCLI(ctx, "", "replay", "--target", small.DSN("postgres"), "--prefix", testPrefix,
			"--speed", "0", "--ignore-connection-limit", crowd)
		// It replays: complete when the sessions' short lives let the
		// five slots serve all ten, INCOMPLETE when they overlap (on a
		// busy machine, make test-busy), as the warning said.
		if strings.Contains(stderr, "PRE-FLIGHT FAILED") || !regexp.MustCompile(`Replay (\(INCOMPLETE\) )?at speed 0`).MatchString(stdout) {
			t.Errorf("--ignore-connection-limit did not replay:\n%s%s", stdout, stderr)
		}
		if !strings.Contains(stderr, "pre-flight: WARNING: the log holds up to 10 sessions open at once") {
			t.Errorf("no warning of the slots:\n%s", stderr)
		}
	})

	t.Run("rehearse refused on the candidate", func(t *testing.T) {
		big := pgclustertest.StartT(t, pgcluster.Options{})
		start := time.Now()
		code, _, stderr := runRehearse(t, "", "--control", big.DSN("postgres"), "--candidate", small.DSN("postgres"),
			"--reset", "none", "--speed", "0", "--prefix", testPrefix, "--out", filepath.Join(dir, "slots"), crowd)
		if code != ExitFailure {
			t.Errorf("exit %d, want %d", code, ExitFailure)
		}
		for _, w := range []string{"PRE-FLIGHT FAILED", "the candidate target: the log holds up to 10 sessions open at once"} {
			if !strings.Contains(stderr, w) {
				t.Errorf("message lacks %q:\n%s", w, stderr)
			}
		}
		if strings.Contains(stderr, "the control target: the log holds") || strings.Contains(stderr, "round 1") ||
			time.Since(start) > 15*time.Second {
			t.Errorf("the control refused, or a round ran, or the refusal took %v:\n%s", time.Since(start), stderr)
		}
	})
}

// crowdLog writes a stderr log, in time order as a server writes it, of
// n sessions of postgres open at once: each connects in the log's first
// second, runs a statement and disconnects two seconds later.
func crowdLog(t *testing.T, dir string, n int) string {
	t.Helper()
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	var b strings.Builder
	line := func(i int, at time.Duration, msg string) {
		fmt.Fprintf(&b, "%s [%d] postgres@postgres/app %x.%x %s\n", start.Add(at).Format("2006-01-02 15:04:05.000 MST"),
			3000+i, start.Unix(), 3000+i, msg)
	}
	for i := range n {
		line(i, time.Duration(i)*time.Millisecond, "LOG:  connection authorized: user=postgres database=postgres application_name=app")
	}
	for i := range n {
		line(i, time.Second+time.Duration(i)*time.Millisecond, "LOG:  duration: 0.100 ms  statement: SELECT 1")
	}
	for i := range n {
		line(i, 2*time.Second+time.Duration(i)*time.Millisecond, "LOG:  disconnection: session time: 0:00:02.000 user=postgres database=postgres host=[local]")
	}
	return writeFile(t, filepath.Join(dir, "crowd.log"), []byte(b.String()))
}

// TestRoundsBehind: the rounds table says how far behind its schedule
// each round finished, beside its lag, and "-" without a schedule (issue
// 57 item 8).
func TestRoundsBehind(t *testing.T) {
	paced := results.New(results.KindReplay, results.LatencyClient)
	paced.Lag = &results.Distribution{Count: 10, P99: 1.7}
	paced.Finish = &results.Finish{ScheduleSeconds: 60, BehindSeconds: 26.6}
	unpaced := results.New(results.KindReplay, results.LatencyClient)
	out := &rehearse.Outcome{Rounds: 1, Records: []rehearse.RoundRecord{
		{Seq: 1, Side: rehearse.Control, N: 1, Status: rehearse.StatusDone},
		{Seq: 2, Side: rehearse.Candidate, N: 1, Status: rehearse.StatusDone},
	}, Control: []*results.Result{paced}, Candidate: []*results.Result{unpaced}}
	var b strings.Builder
	rehearsal.WriteRounds(&b, out, nil)
	lines := strings.Split(b.String(), "\n")
	if len(lines) < 4 || !strings.Contains(lines[1], "lag p99  behind s") {
		t.Fatalf("no behind column:\n%s", b.String())
	}
	if !strings.Contains(lines[2], "1.7 ms      26.6") || !strings.Contains(lines[3], "   -         - ") {
		t.Errorf("rounds:\n%s", b.String())
	}
}
