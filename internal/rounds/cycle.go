package rounds

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/fixes"
	"github.com/pgrehearse/pgrehearse/internal/replay/targetlog"
	"github.com/pgrehearse/pgrehearse/internal/reset"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// Cycle is one round run whole (Run): its target reset, a change applied
// to what the reset made (Change), the target's server logs expanded,
// the replay, the change's undo and the release of the reset's work, and
// the result handed to Done. Every command that replays a workload
// several times (a rehearsal's rounds and fix rounds, a headroom search's
// steps and tries) runs its rounds as Cycles; what it records of them,
// and the words it says, are its own.
type Cycle struct {
	// Reset returns the target to its starting state; N is the round
	// it resets for (the side's round, from 1).
	Reset reset.Resetter
	N     int
	// CleanupTimeout bounds the release and the change's undo; zero
	// means DefaultCleanupTimeout.
	CleanupTimeout time.Duration
	// DSN is the target's connection string, where Change is applied.
	DSN string
	// DatabaseMap is the user's map from logged databases to the
	// target's; the reset's copies are mapped after it (Place).
	DatabaseMap map[string]string
	// Logs are the target's own server log files, as paths or
	// filepath.Glob patterns, expanded after the reset and the change
	// (targetlog.Expand): a server restarted by either may have begun a new
	// file.
	Logs []string
	// Change, when not nil, is applied after the reset (ApplyChange): a
	// fix of any kind, a headroom try, batched INSERTs (which change the
	// replay, not the server: nothing to apply). A server setting is put
	// back after the replay.
	Change *fixes.Fix
	// Phase, when not nil, is told PhaseReset before the reset and
	// PhaseReplay before the replay (with the place the reset made).
	Phase func(Phase, Place)
	// Measure, when not nil, is called just before the replay, outside
	// its time (ReplaySeconds), and the function it returns, when not
	// nil, just after: a reading of the server's CPU around the replay.
	Measure func(context.Context, Place) func()
	// Replay replays the workload once onto the place the reset made.
	// When ctx is cancelled it must stop and return the result of what
	// ran, marked partial. An error means the round gave no usable
	// result.
	Replay func(ctx context.Context, at Place) (*results.Result, error)
	// Keep, when not nil, is asked after the replay whether the reset's
	// work stays in place (Ended.Kept) for the caller to release later:
	// a rehearsal's last round, whose state the plans read.
	Keep func(ctx context.Context, res *results.Result, err error) bool
	// Done, when not nil, is what to do with the replay's result (res
	// may be nil, err is the replay's) once released: name it, write
	// its file. Its error joins the replay's (Ended.Err).
	Done func(at Place, res *results.Result, err error) error
	// UnderLoad: the replay runs under a load that may keep it from
	// finishing (a headroom step), and how far it went is judged: a
	// result it left partial by itself is done, and a round the command
	// was interrupted during is interrupted whatever it returned
	// (Ended.Status).
	UnderLoad bool
}

// Place is where a round replays: what its reset made.
type Place struct {
	// Reset is what the reset did (its copies, its time, drift).
	Reset reset.State
	// DatabaseMap is Cycle.DatabaseMap followed by the reset's copies,
	// so that each logged database goes to its fresh copy.
	DatabaseMap map[string]string
	// Logs are Cycle.Logs expanded (targetlog.Expand).
	Logs []string
}

// Stage is how far a round went.
type Stage string

// Stages, in order.
const (
	// StageReset: the reset failed; nothing was replayed.
	StageReset Stage = "reset"
	// StageChange: the change was not applied (the server refused it,
	// or the command was interrupted); nothing was replayed.
	StageChange Stage = "change"
	// StageLogs: the target's logs could not be expanded; nothing was
	// replayed.
	StageLogs Stage = "logs"
	// StageReplay: the round replayed (Err says whether it failed).
	StageReplay Stage = "replay"
)

// Ended is what a round did.
type Ended struct {
	// Stage is the stage it ended at, and Err that stage's error (the
	// reset's, the change's, the logs', the replay's with Done's).
	Stage Stage
	Err   error
	// Place is what the reset made (Place.Reset also when it failed).
	Place Place
	// Result is the replay's result; nil when it gave none.
	Result *results.Result
	// ReleaseErr is the release's error, and the change's undo's.
	ReleaseErr error
	// Kept: the reset's work was left in place (Cycle.Keep).
	Kept bool
	// ReplaySeconds is the wall time of the replay alone;
	// ReleaseSeconds that of the release.
	ReplaySeconds  float64
	ReleaseSeconds float64
	// Interrupted: the command's context was cancelled (Ctrl-C) when
	// the round ended.
	Interrupted bool
	// underLoad is Cycle.UnderLoad.
	underLoad bool
}

// Status is how the round ended, in a command's records, and why when it
// did not end done (nil when there is nothing to say):
//   - the reset failed: interrupted when the command was (the reset's
//     error is the interruption's: nil), else failed by the reset's error;
//   - the change was not applied: the same, with the change's error;
//   - the target's logs could not be expanded: failed;
//   - it replayed, and the replay (or Done) failed: interrupted or
//     failed, by that error;
//   - the replay gave no result: failed (ErrNoResult);
//   - the replay stopped before its end (a partial result): interrupted
//     when the command was, else failed (ErrStoppedEarly, with what the
//     result says it left out);
//   - else done, even when the command was interrupted after the replay.
//
// Under load (Cycle.UnderLoad) a round the command was interrupted
// during is interrupted, by the replay's error if any; else it failed
// when the replay did or gave no result, and is done otherwise, its
// result partial or not.
func (e Ended) Status() (Status, error) {
	switch e.Stage {
	case StageReset, StageChange:
		if e.Interrupted {
			return StatusInterrupted, nil
		}
		return StatusFailed, e.Err
	case StageLogs:
		return StatusFailed, e.Err
	}
	res := e.Result
	if e.underLoad {
		switch {
		case e.Interrupted:
			return StatusInterrupted, e.Err
		case e.Err != nil:
			return StatusFailed, e.Err
		case res == nil:
			return StatusFailed, ErrNoResult
		}
		return StatusDone, nil
	}
	switch {
	case e.Err != nil && e.Interrupted:
		return StatusInterrupted, e.Err
	case e.Err != nil:
		return StatusFailed, e.Err
	case res == nil:
		return StatusFailed, ErrNoResult
	case res.Partial && e.Interrupted:
		return StatusInterrupted, nil
	case res.Partial:
		if len(res.Incomplete) > 0 {
			return StatusFailed, fmt.Errorf("%w: %s", ErrStoppedEarly, strings.Join(res.Incomplete, "; "))
		}
		return StatusFailed, ErrStoppedEarly
	}
	return StatusDone, nil
}

// Replayed says whether the round went as far as its replay (whatever
// the replay did): a round that did not has nothing to record of it.
func (e Ended) Replayed() bool { return e.Stage == StageReplay }

// Run runs one round whole: reset, change, logs, replay, undo, release,
// Done. A round that ends before its replay has released what its reset
// made (and undone its change) when Run returns; one that replayed has
// too, unless Keep kept it.
func Run(ctx context.Context, c Cycle) Ended {
	end := run(ctx, c)
	end.Interrupted, end.underLoad = ctx.Err() != nil, c.UnderLoad
	return end
}

// run is Run but for what is said of the command (Ended.Interrupted,
// Cycle.UnderLoad).
func run(ctx context.Context, c Cycle) Ended {
	phase := func(p Phase, at Place) {
		if c.Phase != nil {
			c.Phase(p, at)
		}
	}
	var end Ended
	phase(PhaseReset, end.Place)
	// A reset that failed half way may have made some copies: start
	// releases them.
	lc := round{Reset: c.Reset, N: c.N, CleanupTimeout: c.CleanupTimeout}
	rerr, relErr := lc.start(ctx)
	end.Place.Reset = lc.State
	end.ReleaseSeconds = lc.ReleaseSeconds
	if rerr != nil {
		end.Stage, end.Err, end.ReleaseErr = StageReset, rerr, relErr
		return end
	}
	end.Place.DatabaseMap = lc.State.DatabaseMap(c.DatabaseMap)
	release := func(undo func(context.Context) error) error {
		var undoErr error
		if undo != nil {
			// The server's setting is put back whatever the replay
			// did: the reset of a copy does not undo it.
			cctx, cancel := CleanupContext(ctx, c.CleanupTimeout)
			if undoErr = undo(cctx); undoErr != nil {
				undoErr = fmt.Errorf("putting the server's setting back after the fix: %w", undoErr)
			}
			cancel()
		}
		err := errors.Join(undoErr, lc.release(ctx))
		end.ReleaseSeconds = lc.ReleaseSeconds
		return err
	}
	var undo func(context.Context) error
	if c.Change != nil {
		var err error
		if undo, err = ApplyChange(ctx, c.DSN, c.Reset, end.Place, *c.Change); err != nil {
			end.Stage, end.Err, end.ReleaseErr = StageChange, err, release(nil)
			return end
		}
	}
	logs, err := targetlog.Expand(c.Logs)
	if err != nil {
		end.Stage, end.Err, end.ReleaseErr = StageLogs, err, release(undo)
		return end
	}
	end.Place.Logs = logs
	phase(PhaseReplay, end.Place)
	var after func()
	if c.Measure != nil {
		after = c.Measure(ctx, end.Place)
	}
	end.Stage = StageReplay
	end.Result, end.Err = lc.replay(ctx, func(ctx context.Context) (*results.Result, error) { return c.Replay(ctx, end.Place) })
	end.ReplaySeconds = lc.ReplaySeconds
	if after != nil {
		after()
	}
	if c.Keep != nil && undo == nil && c.Keep(ctx, end.Result, end.Err) {
		end.Kept = true
	} else {
		end.ReleaseErr = release(undo)
	}
	if c.Done != nil {
		if derr := c.Done(end.Place, end.Result, end.Err); derr != nil {
			end.Err = errors.Join(end.Err, derr)
		}
	}
	return end
}

// Release releases what the reset made for a round Run kept
// (Ended.Kept), once the caller is done with the state it left, under
// the cleanup context: it survives Ctrl-C.
func Release(ctx context.Context, rs reset.Resetter, st reset.State, cleanupTimeout time.Duration) error {
	cctx, cancel := CleanupContext(ctx, cleanupTimeout)
	defer cancel()
	return rs.Release(cctx, st)
}
