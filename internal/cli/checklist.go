package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/pgrehearse/pgrehearse/internal/observe"
	"github.com/pgrehearse/pgrehearse/internal/rehearse"
	"github.com/pgrehearse/pgrehearse/internal/replayrun"
	"github.com/pgrehearse/pgrehearse/internal/report"
	"github.com/pgrehearse/pgrehearse/internal/reset"
)

// targetNeeds are what a rehearsal's options ask of each target
// (docs/target-checklist.md).
type targetNeeds struct {
	template  bool     // --reset template: CREATEDB, and copying the databases
	databases []string // the databases the template reset copies
	observe   bool     // the observer: pg_stat_statements, pg_read_all_stats
	// logins are the traffic's (the template reset's scan of the logs;
	// nil: left to each round's pre-flight), checked with the replay's
	// options; hints word the advice.
	logins []replayrun.Login
	replay replayrun.Config
	hints  report.LoginHints
	// peak is the logs' scan for their sessions open at once (nil: not
	// known), compared with each target's free connection slots
	// (servers: what each said of itself; a side missing did not
	// answer).
	peak    *replayrun.Scanned
	servers map[rehearse.Side]*replayrun.Server
}

// checkPreflightTimeout bounds each question of the checklist, as each
// login of the replay's pre-flight.
const checkPreflightTimeout = replayrun.PreflightTimeout

// checkTargets asks both targets, before anything runs, for what the
// options need of them (the traffic's logins, the template reset's
// rights, the log settings), and fails with every item either lacks,
// listed at once (exit 1); what only thins the evidence is a warning. A
// target that does not answer is said once, by its logins' check, or,
// without one, left to the round's pre-flight.
func checkTargets(ctx context.Context, stdio IO, n targetNeeds, dsn map[rehearse.Side]string, logs map[rehearse.Side][]string) error {
	var lacks []string
	for _, side := range []rehearse.Side{rehearse.Control, rehearse.Candidate} {
		ask := func(check func(context.Context) ([]string, error)) []string {
			cctx, cancel := context.WithTimeout(ctx, checkPreflightTimeout)
			defer cancel()
			items, err := check(cctx)
			if err != nil {
				return nil
			}
			return items
		}
		var need []string
		if len(n.logins) > 0 {
			cctx, cancel := context.WithTimeout(ctx, 2*checkPreflightTimeout)
			failed, err := replayrun.CheckLogins(cctx, n.replay, dsn[side], n.logins)
			cancel()
			if err != nil {
				return err
			}
			// A server that does not answer refuses every login alike:
			// said once, and the rest of its list cannot be asked.
			alike := 0
			for _, c := range failed {
				if report.ServerProblem(c.Problem) {
					if alike++; alike > 1 {
						continue
					}
				}
				need = append(need, report.DescribeCheck(c, n.hints))
			}
			if alike > 1 {
				need = append(need, report.LoginsAlike(alike-1))
			}
			if alike > 0 {
				for _, m := range need {
					lacks = append(lacks, fmt.Sprintf("the %s target: %s", side, m))
				}
				continue
			}
		}
		if m := slotsLacking(n, n.servers[side]); m != "" {
			need = append(need, m)
		}
		if n.template {
			need = append(need, ask(func(ctx context.Context) ([]string, error) {
				return reset.CheckTemplate(ctx, dsn[side], n.databases)
			})...)
		}
		if len(logs[side]) > 0 {
			for _, m := range ask(func(ctx context.Context) ([]string, error) { return replayrun.CheckTargetLog(ctx, dsn[side]) }) {
				need = append(need, fmt.Sprintf("--%s-log: the target's log cannot give server-side durations: %s", side, m))
			}
		}
		for _, m := range need {
			lacks = append(lacks, fmt.Sprintf("the %s target: %s", side, m))
		}
		if n.observe {
			for _, m := range ask(func(ctx context.Context) ([]string, error) { return observe.Check(ctx, dsn[side]) }) {
				fmt.Fprintf(stdio.Stderr, "pre-flight: WARNING: the %s target, for the server-side evidence (--observe): %s\n", side, m)
			}
		}
	}
	if len(lacks) == 0 {
		return nil
	}
	if ctx.Err() != nil {
		// What failed was cut short: not the targets' lack.
		return &exitError{code: ExitIncomplete, err: errors.New("INTERRUPTED: during the targets' pre-flight; nothing was replayed")}
	}
	return errors.New("PRE-FLIGHT FAILED: what the targets need (docs/target-checklist.md) is missing; nothing was replayed:\n  " +
		strings.Join(lacks, "\n  "))
}
