package rehearse

import (
	"context"

	"github.com/pgrehearse/pgrehearse/internal/observe"
	"github.com/pgrehearse/pgrehearse/internal/replayrun"
	"github.com/pgrehearse/pgrehearse/internal/reset"
)

// Needs are what a rehearsal's options ask of each target
// (docs/target-checklist.md).
type Needs struct {
	// Template: the template reset, which needs CREATEDB and copies
	// Databases.
	Template  bool
	Databases []string
	// Observe: the observer, which needs pg_stat_statements and
	// pg_read_all_stats.
	Observe bool
	// Logins are the traffic's (the template reset's scan of the logs;
	// nil: left to each round's pre-flight), checked with Replay's
	// options.
	Logins []replayrun.Login
	Replay replayrun.Config
	// Peak is the logs' scan for their sessions open at once (nil: not
	// known), compared with each target's free connection slots
	// (Servers: what each said of itself; a side missing did not
	// answer).
	Peak    *replayrun.Scanned
	Servers map[Side]*replayrun.Server
	// Logs are each target's own logs, which need the settings that
	// give server-side durations.
	Logs map[Side][]string
}

// Lacks are what one target lacks of Needs, in the order they are said.
type Lacks struct {
	Side Side
	// Refused are the logins the target refused. Unreachable says the
	// last refusals were the server's (it does not answer, or is not
	// ready), which refuses every login alike: nothing else was asked
	// of it.
	Refused     []replayrun.Check
	Unreachable bool
	// Slots, when not nil, is the pre-flight of a peak beyond the
	// target's free connection slots.
	Slots *replayrun.Preflight
	// Template and TargetLog are what the template reset and the
	// target's log lack.
	Template, TargetLog []string
	// Observe is what the observer lacks: a warning, never a failure.
	Observe []string
}

// Lacking reports whether the target lacks anything that fails the
// checklist (Observe only thins the evidence).
func (l Lacks) Lacking() bool {
	return len(l.Refused) > 0 || l.Slots != nil || len(l.Template) > 0 || len(l.TargetLog) > 0
}

// CheckTimeout bounds each question of the checklist, as each login of
// the replay's pre-flight.
const CheckTimeout = replayrun.PreflightTimeout

// CheckTargets asks both targets (dsn), before anything runs, for what
// the options need of them: the traffic's logins, the connection slots,
// the template reset's rights, the log settings and the observer's.
// A question that cannot be answered is left to the round's pre-flight;
// the error is for the logins' check that could not run.
func CheckTargets(ctx context.Context, n Needs, dsn map[Side]string) ([]Lacks, error) {
	var out []Lacks
	for _, side := range []Side{Control, Candidate} {
		ask := func(check func(context.Context) ([]string, error)) []string {
			cctx, cancel := context.WithTimeout(ctx, CheckTimeout)
			defer cancel()
			items, err := check(cctx)
			if err != nil {
				return nil
			}
			return items
		}
		l := Lacks{Side: side}
		if len(n.Logins) > 0 {
			cctx, cancel := context.WithTimeout(ctx, 2*CheckTimeout)
			failed, err := replayrun.CheckLogins(cctx, n.Replay, dsn[side], n.Logins)
			cancel()
			if err != nil {
				return nil, err
			}
			l.Refused = failed
			for _, c := range failed {
				if replayrun.ServerProblem(c.Problem) {
					l.Unreachable = true
				}
			}
			if l.Unreachable {
				out = append(out, l)
				continue
			}
		}
		l.Slots = slotsLacking(n, n.Servers[side])
		if n.Template {
			l.Template = ask(func(ctx context.Context) ([]string, error) {
				return reset.CheckTemplate(ctx, dsn[side], n.Databases)
			})
		}
		if len(n.Logs[side]) > 0 {
			l.TargetLog = ask(func(ctx context.Context) ([]string, error) { return replayrun.CheckTargetLog(ctx, dsn[side]) })
		}
		if n.Observe {
			l.Observe = ask(func(ctx context.Context) ([]string, error) { return observe.Check(ctx, dsn[side]) })
		}
		out = append(out, l)
	}
	return out, nil
}

// slotsLacking is the pre-flight of the input's peak of sessions open at
// once (scanned: the part of the logs read) on a target with too few
// free slots for it; nil when it has enough or that is not known.
func slotsLacking(n Needs, s *replayrun.Server) *replayrun.Preflight {
	if n.Peak == nil || s == nil || n.Replay.IgnoreConnectionLimit {
		return nil
	}
	pf := &replayrun.Preflight{Peak: n.Peak.Peak * max(1, n.Replay.Replay.Multiply), PeakAt: n.Peak.PeakAt, Complete: n.Peak.Complete, Server: s}
	if !pf.TooFewSlots() {
		return nil
	}
	return pf
}
