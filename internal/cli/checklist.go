package cli

import (
	"context"
	"errors"
	"strings"

	"github.com/pgrehearse/pgrehearse/internal/rehearse"
	"github.com/pgrehearse/pgrehearse/internal/report"
	"github.com/pgrehearse/pgrehearse/internal/report/rehearsal"
)

// checkTargets asks both targets, before anything runs, for what the
// options need of them (rehearse.CheckTargets: the traffic's logins, the
// template reset's rights, the log settings), and fails with every item
// either lacks, listed at once (exit 1); what only thins the evidence is
// a warning. A target that does not answer is said once, by its logins'
// check, or, without one, left to the round's pre-flight.
func checkTargets(ctx context.Context, stdio IO, n rehearse.Needs, dsn map[rehearse.Side]string, hints report.LoginHints) error {
	lacks, err := rehearse.CheckTargets(ctx, n, dsn)
	if err != nil {
		return err
	}
	lines := rehearsal.TargetLacks(stdio.Stderr, lacks, hints)
	if len(lines) == 0 {
		return nil
	}
	if ctx.Err() != nil {
		// What failed was cut short: not the targets' lack.
		return &exitError{code: ExitIncomplete, err: errors.New("INTERRUPTED: during the targets' pre-flight; nothing was replayed")}
	}
	return errors.New("PRE-FLIGHT FAILED: what the targets need (docs/target-checklist.md) is missing; nothing was replayed:\n  " +
		strings.Join(lines, "\n  "))
}
