package rounds

import (
	"context"
	"errors"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/results"
)

// TestEndedStatus checks the status a command records of a round from
// how it ended (Ended.Status): at each stage, interrupted or not, under
// load or not, with each kind of result.
func TestEndedStatus(t *testing.T) {
	boom := errors.New("boom")
	whole := &results.Result{}
	partial := &results.Result{Partial: true}
	incomplete := &results.Result{Partial: true, Incomplete: []string{"shard 2 lost", "deadline"}}
	cases := []struct {
		name    string
		end     Ended
		status  Status
		why     string // "" when nil
		stopped bool   // why is ErrStoppedEarly
	}{
		{name: "reset failed", end: Ended{Stage: StageReset, Err: boom}, status: StatusFailed, why: "boom"},
		{name: "reset interrupted", end: Ended{Stage: StageReset, Err: context.Canceled, Interrupted: true}, status: StatusInterrupted},
		{name: "reset interrupted under load", end: Ended{Stage: StageReset, Err: boom, Interrupted: true, underLoad: true}, status: StatusInterrupted},
		{name: "change refused", end: Ended{Stage: StageChange, Err: boom}, status: StatusFailed, why: "boom"},
		{name: "change interrupted", end: Ended{Stage: StageChange, Err: boom, Interrupted: true}, status: StatusInterrupted},
		{name: "logs failed", end: Ended{Stage: StageLogs, Err: boom}, status: StatusFailed, why: "boom"},
		{name: "logs failed, interrupted", end: Ended{Stage: StageLogs, Err: boom, Interrupted: true}, status: StatusFailed, why: "boom"},
		{name: "done", end: Ended{Stage: StageReplay, Result: whole}, status: StatusDone},
		{name: "done, interrupted after", end: Ended{Stage: StageReplay, Result: whole, Interrupted: true}, status: StatusDone},
		{name: "replay failed", end: Ended{Stage: StageReplay, Err: boom, Result: whole}, status: StatusFailed, why: "boom"},
		{name: "replay failed, interrupted", end: Ended{Stage: StageReplay, Err: boom, Interrupted: true}, status: StatusInterrupted, why: "boom"},
		{name: "no result", end: Ended{Stage: StageReplay}, status: StatusFailed, why: ErrNoResult.Error()},
		{name: "no result, interrupted", end: Ended{Stage: StageReplay, Interrupted: true}, status: StatusFailed, why: ErrNoResult.Error()},
		{name: "partial, interrupted", end: Ended{Stage: StageReplay, Result: partial, Interrupted: true}, status: StatusInterrupted},
		{name: "stopped early", end: Ended{Stage: StageReplay, Result: partial}, status: StatusFailed, why: "the replay stopped early", stopped: true},
		{name: "stopped early, saying why", end: Ended{Stage: StageReplay, Result: incomplete}, status: StatusFailed,
			why: "the replay stopped early: shard 2 lost; deadline", stopped: true},
		{name: "under load: partial is done", end: Ended{Stage: StageReplay, Result: partial, underLoad: true}, status: StatusDone},
		{name: "under load: whole, interrupted", end: Ended{Stage: StageReplay, Result: whole, Interrupted: true, underLoad: true}, status: StatusInterrupted},
		{name: "under load: failed, interrupted", end: Ended{Stage: StageReplay, Err: boom, Interrupted: true, underLoad: true}, status: StatusInterrupted, why: "boom"},
		{name: "under load: no result, interrupted", end: Ended{Stage: StageReplay, Interrupted: true, underLoad: true}, status: StatusInterrupted},
		{name: "under load: failed", end: Ended{Stage: StageReplay, Err: boom, Result: partial, underLoad: true}, status: StatusFailed, why: "boom"},
		{name: "under load: no result", end: Ended{Stage: StageReplay, underLoad: true}, status: StatusFailed, why: ErrNoResult.Error()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, why := c.end.Status()
			got := ""
			if why != nil {
				got = why.Error()
			}
			if status != c.status || got != c.why {
				t.Errorf("Status() = %s, %q; want %s, %q", status, got, c.status, c.why)
			}
			if errors.Is(why, ErrStoppedEarly) != c.stopped {
				t.Errorf("errors.Is(%v, ErrStoppedEarly) = %t, want %t", why, !c.stopped, c.stopped)
			}
			if replayed := c.end.Stage == StageReplay; c.end.Replayed() != replayed {
				t.Errorf("Replayed() = %t, want %t", !replayed, replayed)
			}
		})
	}
}

// TestRunSaysInterrupted checks that Run tells Status what it needs: the
// command interrupted during the replay (Ended.Interrupted), and whether
// the replay ran under load (Cycle.UnderLoad).
func TestRunSaysInterrupted(t *testing.T) {
	cases := []struct {
		name      string
		underLoad bool
		cancel    bool
		result    results.Result
		want      Status
	}{
		{name: "partial, interrupted", cancel: true, result: results.Result{Partial: true}, want: StatusInterrupted},
		{name: "partial", result: results.Result{Partial: true}, want: StatusFailed},
		{name: "partial under load", underLoad: true, result: results.Result{Partial: true}, want: StatusDone},
		{name: "whole, interrupted", cancel: true, want: StatusDone},
		{name: "whole, interrupted under load", underLoad: true, cancel: true, want: StatusInterrupted},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			end := Run(ctx, Cycle{Reset: &countingReset{}, N: 1, UnderLoad: c.underLoad,
				Replay: func(context.Context, Place) (*results.Result, error) {
					if c.cancel {
						cancel()
					}
					res := c.result
					return &res, nil
				}})
			if status, why := end.Status(); end.Interrupted != c.cancel || status != c.want {
				t.Errorf("interrupted %t, Status() = %s (%v); want %t, %s", end.Interrupted, status, why, c.cancel, c.want)
			}
		})
	}
}
