package headroom

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrehearse/pgrehearse/internal/fixes"
	"github.com/pgrehearse/pgrehearse/internal/judge"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/reset"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/rounds"
)

// tryConfig is a search of one real target (the tries' SQL runs there)
// whose replays are fakeTarget's, with a reset command that changes
// nothing: the tries' SQL changes nothing either.
func tryConfig(t *testing.T, tries ...string) Config {
	t.Helper()
	slo, err := judge.ParseSLO(judge.DefaultSLO)
	if err != nil {
		t.Fatal(err)
	}
	c := pgclustertest.StartT(t, pgcluster.Options{})
	dsn := c.DSN("postgres")
	cfg := Config{Targets: []Target{{Side: Control, DSN: dsn, Reset: &reset.Command{Command: "true", DSN: dsn, Name: "control"}}},
		SLO: slo, Search: Search{MaxK: 4, BaseRounds: 1, BoundaryRounds: 1}, Span: 10 * time.Second, Cores: 2}
	for _, name := range tries {
		cfg.Tries = append(cfg.Tries, fixes.Fix{Name: name, Kind: fixes.Statement, Origin: fixes.OriginTry, SQL: "SELECT 1"})
	}
	return cfg
}

// TestRunTryInterrupted: Ctrl-C during the second of three tries' search
// (issue 48): the search without the tries and the first try's are kept
// whole and answered, the second's is partial, its step under way
// interrupted, and the third is named as not run; the outcome is
// interrupted and partial. The first try is a server setting (issue 60
// item 1: a try is any fix): every step of its search replays with it in
// force in new sessions, the steps without it never see it, and it is
// put back after each step, so the server ends as it began.
func TestRunTryInterrupted(t *testing.T) {
	cfg := tryConfig(t, "one", "two", "three")
	cfg.Tries[0] = fixes.Fix{Name: "one", Kind: fixes.SetServer, Origin: fixes.OriginTry, Setting: "work_mem", Value: "7MB",
		SQL: `ALTER SYSTEM SET "work_mem" = '7MB'`}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tg := fakeTarget{kStar: 3, maxX: 1e9}
	stepsOfTwo := 0
	workMem := map[string][]string{}
	cfg.Replay = func(ctx context.Context, st StepRun, tgt Target) (*results.Result, error) {
		if st.Try == "two" {
			if stepsOfTwo++; stepsOfTwo == 2 {
				// Ctrl-C while the step replays.
				cancel()
			}
			return tg.result(st.K), nil
		}
		v, err := showWorkMem(ctx, tgt.DSN)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(workMem[st.Try], v) {
			workMem[st.Try] = append(workMem[st.Try], v)
		}
		return tg.result(st.K), nil
	}
	out, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(workMem["one"], []string{"7MB"}) || !slices.Equal(workMem[""], []string{"4MB"}) {
		t.Errorf("work_mem seen by the steps, by try: %v; want 7MB with the setting's try, 4MB without", workMem)
	}
	if v, err := showWorkMem(context.Background(), cfg.Targets[0].DSN); err != nil || v != "4MB" {
		t.Errorf("after the run work_mem is %q (%v), want 4MB: the setting was not put back", v, err)
	}
	if !out.Interrupted || !out.Partial {
		t.Errorf("interrupted %v, partial %v: %s", out.Interrupted, out.Partial, out.Stopped)
	}
	if so := out.Side(Control); so.Answer == nil || so.Answer.AtLeast || len(so.Steps) < 3 {
		t.Fatalf("the search without the tries is not kept whole: %+v", so)
	}
	if len(out.Tries) != 2 {
		t.Fatalf("%d tries begun, want one and two", len(out.Tries))
	}
	one, two := out.Tries[0], out.Tries[1]
	if one.Name != "one" || one.Partial || one.With == nil || one.With.Answer == nil || one.With.Answer.AtLeast || one.NotTried != "" {
		t.Errorf("the finished try is not kept whole: %+v", one)
	}
	for _, st := range one.With.Steps {
		if st.Status != StatusDone {
			t.Errorf("try one's step %d: %s", st.Seq, st.Status)
		}
	}
	if two.Name != "two" || !two.Partial || two.With == nil || len(two.With.Steps) != 2 || two.With.Steps[1].Status != StatusInterrupted {
		t.Errorf("the try interrupted: %+v", two)
	}
	if !slices.Equal(out.TriesNotRun, []string{"three"}) {
		t.Errorf("tries not run %v, want [three]", out.TriesNotRun)
	}
}

// TestRunRemainingCountsTries: the time-left estimate counts the tries'
// searches still to come (issue 48): at the first step, three tries add
// three searches' worth (each its 1x round and more) to the estimate
// without them, and during the last try's search none is left to count.
func TestRunRemainingCountsTries(t *testing.T) {
	tg := fakeTarget{kStar: 3, maxX: 1e9}
	replay := func(ctx context.Context, st StepRun, _ Target) (*results.Result, error) { return tg.result(st.K), nil }
	first := func(cfg Config) (time.Duration, map[string]time.Duration) {
		var at1 time.Duration
		tryFirst := map[string]time.Duration{}
		cfg.Replay = replay
		cfg.Progress = func(p Progress) {
			if p.Phase != rounds.PhaseReset {
				return
			}
			if p.Step.Seq == 1 {
				at1 = p.Remaining
			}
			if _, seen := tryFirst[p.Step.Try]; !seen && p.Step.Try != "" {
				tryFirst[p.Step.Try] = p.Remaining
			}
		}
		out, err := Run(context.Background(), cfg)
		if err != nil || out.Partial {
			t.Fatalf("err %v, partial %v", err, out != nil && out.Partial)
		}
		return at1, tryFirst
	}
	cfg := tryConfig(t, "one", "two", "three")
	with, tries := first(cfg)
	cfg.Tries = nil
	without, _ := first(cfg)
	if with-without < 3*cfg.Span {
		t.Errorf("at the first step %v left with three tries, %v without: the tries are not counted", with, without)
	}
	if tries["one"] <= tries["three"] {
		t.Errorf("left at try one's first step %v, at try three's %v: the tries after it are not counted", tries["one"], tries["three"])
	}
}

// TestRunTryLogPatternMatchesNothing: a target log pattern that matches
// no file stops the run with an error at the first step, as it stops a
// rehearsal's round (one rule, targetlog.Expand), instead of leaving the
// steps without their server-side durations.
func TestRunTryLogPatternMatchesNothing(t *testing.T) {
	slo, err := judge.ParseSLO(judge.DefaultSLO)
	if err != nil {
		t.Fatal(err)
	}
	tg := fakeTarget{kStar: 3, maxX: 1e9}
	cfg := Config{Targets: []Target{{Side: Control, DSN: "host=/nonexistent", Reset: reset.None{}, Logs: []string{filepath.Join(t.TempDir(), "*.log")}}},
		SLO: slo, Search: Search{MaxK: 4, BaseRounds: 1, BoundaryRounds: 1}, Span: 10 * time.Second, Cores: 2,
		Replay: func(_ context.Context, st StepRun, _ Target) (*results.Result, error) { return tg.result(st.K), nil }}
	out, err := Run(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "matches no file") {
		t.Fatalf("Run: %v, want the pattern's error", err)
	}
	if so := out.Side(Control); len(so.Steps) != 1 || so.Steps[0].Status != StatusFailed || !strings.Contains(out.Stopped, "matches no file") {
		t.Errorf("steps %+v, stopped %q", so.Steps, out.Stopped)
	}
}

// showWorkMem is work_mem in a new session of dsn.
func showWorkMem(ctx context.Context, dsn string) (string, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "", err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var v string
	err = conn.QueryRow(ctx, "SHOW work_mem").Scan(&v)
	return v, err
}
