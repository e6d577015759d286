package headroom

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/pgrehearse/pgrehearse/internal/connstr"
	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/judge"
	"github.com/pgrehearse/pgrehearse/internal/rounds"
)

// Try is the user's own change (headroom --try NAME:SQL): its SQL runs
// as given after every reset of its search, in the reset's copy of each
// of the workload's databases.
type Try struct {
	Name string `json:"name"`
	SQL  string `json:"sql"`
}

// TryOutcome is a side's search again with a try applied: the k it
// holds with it (With.Answer) beside the k without it (Without).
type TryOutcome struct {
	Try
	Side Side `json:"side"`
	// Without is the side's answer in the search without the try.
	Without *Answer `json:"without,omitempty"`
	// With is the side's search with the try applied.
	With *SideOutcome `json:"with,omitempty"`
	// NotTried is the server's error when the try's SQL failed: its
	// search stopped there, and With holds no answer.
	NotTried string `json:"not_tried,omitempty"`
	// Partial: its search did not finish (interrupted, the budget, a
	// failed step); With's answer rests on the steps finished.
	Partial bool `json:"partial,omitempty"`
}

// trySide is the side the tries are searched on: the candidate, else
// the one target.
func (cfg *Config) trySide() Target {
	for _, t := range cfg.Targets {
		if t.Side == Candidate {
			return t
		}
	}
	return cfg.Targets[0]
}

// tries runs, after the searches finished whole, the try side's search
// again for each of Config.Tries, in the prepared resets. Stopped in
// one (Ctrl-C, the budget), the searches and tries finished are kept,
// the one under way is partial, and those after it are not run
// (Outcome.TriesNotRun, filled by Run).
func (r *run) tries(ctx context.Context) error {
	if len(r.cfg.Tries) == 0 || r.out.Stopped != "" || r.out.Interrupted {
		return nil
	}
	t := r.cfg.trySide()
	r.answer()
	for i := range r.cfg.Tries {
		try := r.cfg.Tries[i]
		to := &TryOutcome{Try: try, Side: t.Side, Without: r.out.Side(t.Side).Answer}
		r.out.Tries = append(r.out.Tries, to)
		cfg := r.cfg
		cfg.Targets = []Target{t}
		s := NewSearch(cfg.Search)
		if cfg.By == ByFold {
			s.Integer = true
		}
		sub := &run{cfg: cfg, begun: r.begun, searches: map[Side]*Search{t.Side: s}, base: map[Side][]judge.Measurement{},
			baseline: map[Side]*judge.Baseline{}, n: r.n, seq: r.seq, overheads: r.overheads, try: &try, tried: to,
			out: &Outcome{Sides: []*SideOutcome{{Side: t.Side, Steps: []Step{}}}}, triesLater: len(r.cfg.Tries) - i - 1, oneTry: r.oneTry}
		r.tryRuns = append(r.tryRuns, sub)
		before, err := sub.search(ctx)
		r.overheads = sub.overheads
		sub.answer()
		to.With = sub.out.Sides[0]
		switch {
		case before > 0:
			r.out.Interrupted, r.out.Stopped = true, fmt.Sprintf("interrupted before step %d (try %s)", before, try.Name)
			return nil
		case err != nil:
			r.out.Stopped = sub.out.Stopped
			return fmt.Errorf("try %s: %w", try.Name, err)
		case sub.out.Interrupted:
			r.out.Interrupted, r.out.Stopped = true, sub.out.Stopped
			return nil
		case sub.out.Stopped != "":
			// The budget.
			r.out.Stopped = sub.out.Stopped
			return nil
		}
	}
	return nil
}

// withTry names the try of a try's search, for the messages.
func (r *run) withTry() string {
	if r.try == nil {
		return ""
	}
	return " with " + r.try.Name
}

// applyTry applies the try after step st's reset. When it could not,
// it records the step, releases the reset and says applied false: the
// try's search stops there, not tried when the server refused it (the
// run goes on), interrupted when ctx was cancelled; err is the
// release's.
func (r *run) applyTry(ctx context.Context, st StepRun, t Target, rec Step, round *rounds.Round) (applied bool, err error) {
	aerr := r.execTry(ctx, st, t)
	if aerr == nil {
		return true, nil
	}
	relErr := round.Release(ctx)
	so := r.out.Side(t.Side)
	if ctx.Err() != nil {
		rec.Status = StatusInterrupted
		so.Steps = append(so.Steps, rec)
		r.out.Interrupted, r.out.Stopped = true, fmt.Sprintf("interrupted while applying try %s before step %d", r.try.Name, st.Seq)
		return false, relErr
	}
	rec.Status, rec.Error = StatusFailed, "the try was not applied: "+aerr.Error()
	so.Steps = append(so.Steps, rec)
	r.tried.NotTried = aerr.Error()
	return false, relErr
}

// execTry runs the try's SQL in the step's copy of each of the
// workload's databases (the DSN's own when none is known).
func (r *run) execTry(ctx context.Context, st StepRun, t Target) error {
	var dbs []string
	for _, db := range r.cfg.Databases {
		if c, ok := st.DatabaseMap[db]; ok {
			db = c
		}
		if !slices.Contains(dbs, db) {
			dbs = append(dbs, db)
		}
	}
	if len(dbs) == 0 {
		dbs = []string{""}
	}
	for _, db := range dbs {
		if err := execIn(ctx, t.DSN, db, r.try.SQL); err != nil {
			return err
		}
	}
	return nil
}

// execIn runs sql in database db of dsn's server ("": the DSN's own),
// as pgrehearse's own session.
func execIn(ctx context.Context, dsn, db, sql string) error {
	cfg, err := connstr.ParsePgx(dsn)
	if err != nil {
		return err
	}
	if db != "" {
		cfg.Database = db
	}
	cfg.RuntimeParams["application_name"] = event.OwnApplicationPrefix + "try"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return connstr.SafeError(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, sql)
	return err
}
