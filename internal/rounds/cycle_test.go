package rounds

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/fixes"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// TestRunStages runs a round that ends at each stage and checks what it
// replayed, released and handed on: a round that ends before its replay
// never replays and always releases, one that replays is released unless
// kept, and Done's error joins the replay's.
func TestRunStages(t *testing.T) {
	batch := fixes.Batch(100)
	boom := errors.New("no space")
	dir := t.TempDir()
	log := filepath.Join(dir, "pg.log")
	if err := os.WriteFile(log, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name                string
		cycle               Cycle
		failReset           error
		stage               Stage
		replays, releases   int
		kept                bool
		errHas              string
		phases, logs, dones string
	}{
		{name: "whole", cycle: Cycle{Logs: []string{filepath.Join(dir, "*.log"), log, filepath.Join(dir, "later.log")}},
			stage: StageReplay, replays: 1, releases: 1, phases: "reset replay", dones: "ok",
			logs: log + " " + filepath.Join(dir, "later.log")},
		{name: "reset fails", failReset: boom, stage: StageReset, releases: 1, errHas: "no space", phases: "reset"},
		{name: "pattern matches nothing", cycle: Cycle{Logs: []string{filepath.Join(dir, "*.csv")}},
			stage: StageLogs, releases: 1, errHas: "matches no file", phases: "reset"},
		{name: "batched inserts apply nothing", cycle: Cycle{Change: &batch},
			stage: StageReplay, replays: 1, releases: 1, phases: "reset replay", dones: "ok"},
		{name: "kept", cycle: Cycle{Keep: func(context.Context, *results.Result, error) bool { return true }},
			stage: StageReplay, replays: 1, kept: true, phases: "reset replay", dones: "ok"},
		{name: "done fails", cycle: Cycle{Done: func(Place, *results.Result, error) error { return boom }},
			stage: StageReplay, replays: 1, releases: 1, errHas: "no space", phases: "reset replay"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rs := &countingReset{failReset: c.failReset}
			cy := c.cycle
			cy.Reset, cy.N = rs, 1
			replays := 0
			cy.Replay = func(context.Context, Place) (*results.Result, error) {
				replays++
				return &results.Result{}, nil
			}
			var phases, dones []string
			cy.Phase = func(p Phase, _ Place) { phases = append(phases, string(p)) }
			if cy.Done == nil {
				cy.Done = func(_ Place, res *results.Result, err error) error {
					if res != nil && err == nil && rs.releases+btoi(c.kept) == 1 {
						// Done comes after the release.
						dones = append(dones, "ok")
					}
					return nil
				}
			}
			end := Run(context.Background(), cy)
			if end.Stage != c.stage || replays != c.replays || rs.releases != c.releases || end.Kept != c.kept {
				t.Errorf("stage %s, %d replays, %d releases, kept %t; want %s, %d, %d, %t",
					end.Stage, replays, rs.releases, end.Kept, c.stage, c.replays, c.releases, c.kept)
			}
			if c.errHas == "" && end.Err != nil || c.errHas != "" && (end.Err == nil || !strings.Contains(end.Err.Error(), c.errHas)) {
				t.Errorf("error %v, want one saying %q", end.Err, c.errHas)
			}
			if got := strings.Join(phases, " "); got != c.phases {
				t.Errorf("phases %q, want %q", got, c.phases)
			}
			if got := strings.Join(dones, " "); got != c.dones {
				t.Errorf("done %q, want %q", got, c.dones)
			}
			if got := strings.Join(end.Place.Logs, " "); got != c.logs {
				t.Errorf("logs %q, want %q", got, c.logs)
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
