package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/pgrehearse/pgrehearse/internal/rehearse"
	"github.com/pgrehearse/pgrehearse/internal/replayrun"
	"github.com/pgrehearse/pgrehearse/internal/report"
	"github.com/pgrehearse/pgrehearse/internal/reset"
)

// checkStartFirst compares both targets with the capture's starting point
// before any round under --require-start-state (digests that differ:
// exit 6), when the first round's reset leaves the databases as they are
// (none) or copies them (template); else each first round checks what
// its reset made. It reports whether it checked. sc: the logs' scan.
func checkStartFirst(ctx context.Context, stdio IO, cfg replayrun.Config, mode reset.Mode, sc *replayrun.Scanned, dsn map[rehearse.Side]string) (bool, error) {
	if cfg.StartCheck != replayrun.StartCheckRequire || sc == nil || (mode != reset.ModeNone && mode != reset.ModeTemplate) {
		return false, nil
	}
	for _, side := range []rehearse.Side{rehearse.Control, rehearse.Candidate} {
		c := cfg
		c.Replay.Target = dsn[side]
		pf, err := replayrun.CheckStart(ctx, c, sc.Logins)
		var se *replayrun.StartStateError
		switch {
		case errors.As(err, new(*replayrun.DataDiffersError)):
			return true, &exitError{code: ExitDiverged, err: fmt.Errorf("REHEARSAL FAILED: the %s (--%s), before the first round: %v", side, side, err)}
		case errors.As(err, &se):
			return true, fmt.Errorf("the %s (--%s), before the first round: %w", side, side, report.StartStateFailed(stdio.Stderr, se))
		case err != nil:
			return true, openError(err)
		}
		fmt.Fprintf(stdio.Stderr, "rehearse: the %s (--%s), before the first round:\n", side, side)
		report.WriteStartCheck(stdio.Stderr, pf)
	}
	return true, nil
}
