package rehearse

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/reset"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/rounds"
)

func TestOrder(t *testing.T) {
	functionalCase(t)
	A, B := Control, Candidate
	for rounds, want := range map[int][]Side{
		1: {A, B},
		2: {A, B, B, A},
		3: {A, B, B, A, A, B},
		4: {A, B, B, A, A, B, B, A},
	} {
		if got := Order(rounds); !slices.Equal(got, want) {
			t.Errorf("Order(%d) = %v, want %v", rounds, got, want)
		}
	}
	// Each side runs first in its pair as often as the other, give or
	// take one, and each has its rounds.
	for rounds := 1; rounds <= 9; rounds++ {
		o := Order(rounds)
		first := map[Side]int{}
		count := map[Side]int{}
		for i, s := range o {
			count[s]++
			if i%2 == 0 {
				first[s]++
			}
		}
		if count[A] != rounds || count[B] != rounds || first[A]-first[B] > 1 || first[B] > first[A] {
			t.Errorf("Order(%d) = %v: counts %v, firsts %v", rounds, o, count, first)
		}
	}
}

// TestCheckDir: the output directory is checked before any work: one
// holding another rehearsal's rounds is refused unless overwriting.
func TestCheckDir(t *testing.T) {
	functionalCase(t)
	dir := filepath.Join(t.TempDir(), "new", "dir")
	if err := CheckDir(dir, false); err != nil {
		t.Fatalf("checkDir of a new directory: %v", err)
	}
	if err := writeAtomic(filepath.Join(dir, IndexFile), &Outcome{Version: OutcomeVersion}); err != nil {
		t.Fatal(err)
	}
	if err := CheckDir(dir, false); err == nil || !strings.Contains(err.Error(), "another rehearsal") {
		t.Errorf("checkDir of a used directory: %v", err)
	}
	if err := CheckDir(dir, true); err != nil {
		t.Errorf("checkDir with overwrite: %v", err)
	}
	// Refused before anything runs: no reset is prepared.
	_, err := Run(context.Background(), Config{
		Control:   Target{DSN: "host=/nonexistent", Reset: reset.None{}},
		Candidate: Target{DSN: "host=/nonexistent", Reset: reset.None{}},
		Dir:       dir,
		Replay:    realReplay("/nonexistent", nil),
	})
	if err == nil || !strings.Contains(err.Error(), "another rehearsal") {
		t.Errorf("Run into a used directory: %v", err)
	}
	if os.Geteuid() != 0 {
		ro := filepath.Join(t.TempDir(), "ro")
		os.Mkdir(ro, 0o555)
		if err := CheckDir(ro, false); err == nil {
			t.Errorf("checkDir of a read-only directory: want an error")
		}
	}
}

func TestConfigChecked(t *testing.T) {
	functionalCase(t)
	ok := Target{DSN: "host=x", Reset: reset.None{}}
	for name, cfg := range map[string]Config{
		"no replay":        {Control: ok, Candidate: ok},
		"negative rounds":  {Control: ok, Candidate: ok, Rounds: -1, Replay: realReplay("", nil)},
		"no candidate DSN": {Control: ok, Candidate: Target{Reset: reset.None{}}, Replay: realReplay("", nil)},
		"no reset":         {Control: Target{DSN: "host=x"}, Candidate: ok, Replay: realReplay("", nil)},
	} {
		if _, err := Run(context.Background(), cfg); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
}

// functionalCase marks t as a functional case, which measures no time:
// it asserts counts, errors, messages, results or files, with generous
// time bounds or none. Go runs such tests in parallel (at most -parallel
// at once, GOMAXPROCS by default) and only after every sequential test
// of the package has finished: the tests that time real servers (pacing,
// lag, throughput, overhead, comparisons), left sequential, still run
// alone, undisturbed.
func functionalCase(t *testing.T) {
	t.Helper()
	t.Parallel()
}

// TestInterruptedBetweenRounds: Ctrl-C between two rounds starts no
// further round, keeps the rounds finished and says before which round
// the rehearsal stopped.
func TestInterruptedBetweenRounds(t *testing.T) {
	functionalCase(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	replays := 0
	out, err := Run(ctx, Config{
		Control:   Target{DSN: "control", Reset: reset.None{}},
		Candidate: Target{DSN: "candidate", Reset: reset.None{}},
		Rounds:    3,
		Replay: func(context.Context, Round, Target) (*results.Result, error) {
			replays++
			return &results.Result{Kind: results.KindReplay}, nil
		},
		Progress: func(p Progress) {
			if p.Phase == rounds.PhaseDone && p.Round.Seq == 2 {
				cancel()
			}
		},
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !out.Interrupted || !out.Partial || out.Stopped != "interrupted before round 3" || replays != 2 ||
		len(out.Records) != 2 || len(out.Control) != 1 || len(out.Candidate) != 1 {
		t.Fatalf("outcome interrupted %v partial %v stopped %q, %d replays, records %+v, %d+%d results: want the 2 rounds finished kept",
			out.Interrupted, out.Partial, out.Stopped, replays, out.Records, len(out.Control), len(out.Candidate))
	}
	for _, rec := range out.Records {
		if rec.Status != StatusDone {
			t.Errorf("round %d: %s, want done", rec.Seq, rec.Status)
		}
	}
}

// TestTargetLogMatchesNothing: a target log pattern that matches no file
// fails the round before its replay, records why and stops the
// rehearsal, as it stops a headroom step (targetlog.Expand' one rule);
// the rounds before it are kept.
func TestTargetLogMatchesNothing(t *testing.T) {
	functionalCase(t)
	replays := 0
	pattern := filepath.Join(t.TempDir(), "*.log")
	out, err := Run(context.Background(), Config{
		Control:   Target{DSN: "control", Reset: reset.None{}},
		Candidate: Target{DSN: "candidate", Reset: reset.None{}, Logs: []string{pattern}},
		Rounds:    2,
		Replay: func(context.Context, Round, Target) (*results.Result, error) {
			replays++
			return &results.Result{Kind: results.KindReplay}, nil
		},
	})
	if err == nil || !strings.Contains(err.Error(), "matches no file") {
		t.Fatalf("Run: %v, want the pattern's error", err)
	}
	if replays != 1 || len(out.Records) != 2 || out.Records[1].Status != StatusFailed || !strings.Contains(out.Records[1].Error, pattern) ||
		out.Stopped != "round 2 (candidate): target log \""+pattern+"\" matches no file" || len(out.Control) != 1 {
		t.Errorf("%d replays, records %+v, stopped %q: want the control's round kept and the candidate's failed before its replay", replays, out.Records, out.Stopped)
	}
}

// TestFixCycle: in each cycle the round beside the fixes and each fix
// once, the beside round first in the odd cycles and last in the even,
// the fixes in reverse there, as A B B A balances drift.
func TestFixCycle(t *testing.T) {
	for _, tc := range []struct {
		cycle  int
		active []int
		want   []int
	}{
		{1, []int{0}, []int{besideStep, 0}},
		{2, []int{0}, []int{0, besideStep}},
		{1, []int{0, 1, 2}, []int{besideStep, 0, 1, 2}},
		{2, []int{0, 1, 2}, []int{2, 1, 0, besideStep}},
		{3, []int{1, 2}, []int{besideStep, 1, 2}},
	} {
		if got := fixCycle(tc.cycle, tc.active); !slices.Equal(got, tc.want) {
			t.Errorf("fixCycle(%d, %v) = %v, want %v", tc.cycle, tc.active, got, tc.want)
		}
	}
}

// TestRoundsUntilDecided: while Decide says a query is undecided, or a
// regression's mean too wide, a pair of rounds is added in the
// alternating order, up to MaxRounds a side; the budget that ended the
// rounds is said with what was still asked, those added for width alone
// are counted, and a decided look adds nothing.
func TestRoundsUntilDecided(t *testing.T) {
	functionalCase(t)
	run := func(undecidedLooks, maxRounds int, wideLooks ...int) (*Outcome, []int) {
		var looks []int
		out, err := Run(context.Background(), Config{
			Control:   Target{DSN: "control", Reset: reset.None{}},
			Candidate: Target{DSN: "candidate", Reset: reset.None{}},
			Rounds:    2, MaxRounds: maxRounds, KeepLast: true,
			Replay: func(context.Context, Round, Target) (*results.Result, error) {
				return &results.Result{Kind: results.KindReplay}, nil
			},
			Decide: func(out *Outcome, look int) Need {
				looks = append(looks, look)
				if len(out.Control) != len(out.Candidate) || len(out.Control) != 1+look {
					t.Errorf("look %d with %d control and %d candidate rounds", look, len(out.Control), len(out.Candidate))
				}
				switch {
				case look <= undecidedLooks:
					return NeedDecision
				case slices.Contains(wideLooks, look):
					return NeedWidth
				}
				return NeedNone
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		return out, looks
	}
	A, B := Control, Candidate
	// Undecided at the first two looks, decided at the third.
	out, looks := run(2, 8)
	if want := []Side{A, B, B, A, A, B, B, A}; !slices.Equal(out.Order, want) || len(out.Records) != 8 {
		t.Errorf("order %v (%d records), want %v", out.Order, len(out.Records), want)
	}
	if !slices.Equal(looks, []int{1, 2, 3}) || out.Looks != 3 || out.MaxLooks != 7 || out.Added != 2 || out.Widened != 0 || out.BudgetEnded != "" || out.Unmet != NeedNone || out.Partial {
		t.Errorf("looks %v, outcome looks %d of %d, added %d, budget %q, partial %v", looks, out.Looks, out.MaxLooks, out.Added, out.BudgetEnded, out.Partial)
	}
	if out.Kept[A].N != 4 || out.Kept[B].N != 4 {
		t.Errorf("kept %+v: want each side's last round, an added one", out.Kept)
	}
	// Undecided to the end: the rounds' budget ends it.
	out, looks = run(100, 3)
	if len(out.Control) != 3 || len(out.Candidate) != 3 || out.Added != 1 || out.BudgetEnded != BudgetRounds || out.Unmet != NeedDecision || !slices.Equal(looks, []int{1, 2}) {
		t.Errorf("%d+%d rounds, added %d, budget %q (%v unmet), looks %v: want 3 a side, the rounds' budget", len(out.Control), len(out.Candidate), out.Added, out.BudgetEnded, out.Unmet, looks)
	}
	// Undecided at the first look, then too wide at the second and the
	// third: three pairs added, two of them for width; then wide to the
	// end of the budget.
	out, looks = run(1, 8, 2, 3)
	if len(out.Control) != 5 || out.Added != 3 || out.Widened != 2 || out.BudgetEnded != "" || !slices.Equal(looks, []int{1, 2, 3, 4}) {
		t.Errorf("%d rounds a side, added %d (%d for width), budget %q, looks %v: want 5 a side, 3 added, 2 for width", len(out.Control), out.Added, out.Widened, out.BudgetEnded, looks)
	}
	out, _ = run(0, 3, 1, 2)
	if len(out.Control) != 3 || out.Added != 1 || out.Widened != 1 || out.BudgetEnded != BudgetRounds || out.Unmet != NeedWidth {
		t.Errorf("%d rounds a side, added %d (%d for width), budget %q (%v unmet): want 3 a side, the rounds' budget with width unmet", len(out.Control), out.Added, out.Widened, out.BudgetEnded, out.Unmet)
	}
	// Decided at once: nothing added.
	out, _ = run(0, 8)
	if len(out.Records) != 4 || out.Added != 0 || out.BudgetEnded != "" {
		t.Errorf("%d records, added %d, budget %q: want the 2 rounds a side only", len(out.Records), out.Added, out.BudgetEnded)
	}
}

// TestCandidateReadsTheControlsCatalog: every candidate round's replay
// synchronizes its sessions by the control's catalog, in the user's
// names of the databases (replay.Options.CatalogFrom), so that a change
// of the candidate's (a trigger) does not change what they wait for;
// the control's rounds read their own target's.
func TestCandidateReadsTheControlsCatalog(t *testing.T) {
	functionalCase(t)
	dbs := map[string]string{"shop": "shop_live"}
	got := map[Side][]string{}
	_, err := Run(context.Background(), Config{
		Control:     Target{DSN: "host=control", Reset: reset.None{}},
		Candidate:   Target{DSN: "host=candidate", Reset: reset.None{}},
		Rounds:      2,
		DatabaseMap: dbs,
		Replay: func(_ context.Context, r Round, target Target) (*results.Result, error) {
			rr := RoundOf(r, target)
			got[r.Side] = append(got[r.Side], rr.CatalogFrom)
			if rr.CatalogFrom != "" && rr.CatalogDatabaseMap["shop"] != "shop_live" {
				t.Errorf("round %d: catalog database map %v", r.Seq, rr.CatalogDatabaseMap)
			}
			return &results.Result{Kind: results.KindReplay}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got[Control], []string{"", ""}) || !slices.Equal(got[Candidate], []string{"host=control", "host=control"}) {
		t.Fatalf("catalogs read from: control's rounds %q, candidate's %q", got[Control], got[Candidate])
	}
}
