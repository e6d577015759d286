package headroom

import (
	"context"
	"fmt"
	"slices"

	"github.com/pgrehearse/pgrehearse/internal/fixes"
	"github.com/pgrehearse/pgrehearse/internal/judge"
)

// TryOutcome is a side's search again with a try (a fixes.Fix of
// Config.Tries) applied: the k it holds with it (With.Answer) beside the
// k without it (Without).
type TryOutcome struct {
	// Name and SQL are the try's: its fix's name and SQL.
	Name string `json:"name"`
	SQL  string `json:"sql"`
	Side Side   `json:"side"`
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
		try := r.cfg.tryAt(i)
		to := &TryOutcome{Name: try.Name, SQL: try.SQL, Side: t.Side, Without: r.out.Side(t.Side).Answer}
		r.out.Tries = append(r.out.Tries, to)
		cfg := r.cfg
		cfg.Targets = []Target{t}
		s := NewSearch(cfg.Search)
		if cfg.By == ByFold {
			s.Integer = true
		}
		sub := &run{cfg: cfg, begun: r.begun, searches: map[Side]*Search{t.Side: s}, base: map[Side][]judge.Measurement{},
			baseline: map[Side]*judge.Baseline{}, n: r.n, seq: r.seq, overheads: r.overheads, try: &try, tried: to,
			out: &Outcome{Sides: []*SideOutcome{{Side: t.Side, Steps: []Step{}}}}, triesLater: len(r.cfg.Tries) - i - 1, oneTry: r.oneTry, control: r.control}
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

// notTried records step st, whose try the server refused (aerr) or
// whose application was interrupted: the try's search stops there, not
// tried when refused (the run goes on), interrupted when rec's status
// says so (rounds.Ended.Status).
func (r *run) notTried(st StepRun, rec Step, aerr error) {
	so := r.out.Side(st.Side)
	if rec.Status == StatusInterrupted {
		so.Steps = append(so.Steps, rec)
		r.out.Interrupted, r.out.Stopped = true, fmt.Sprintf("interrupted while applying try %s before step %d", r.try.Name, st.Seq)
		return
	}
	rec.Status, rec.Error = StatusFailed, "the try was not applied: "+aerr.Error()
	so.Steps = append(so.Steps, rec)
	r.tried.NotTried = aerr.Error()
}

// tryAt is Config.Tries[i] as its search applies it: in the workload's
// databases (Config.Databases; the DSN's own when none is known) when
// the fix names none.
func (cfg *Config) tryAt(i int) fixes.Fix {
	f := cfg.Tries[i]
	if len(f.Databases) == 0 {
		f.Databases = slices.Clone(cfg.Databases)
		if len(f.Databases) == 0 {
			f.Databases = []string{""}
		}
	}
	return f
}

// checkTry says why fix f cannot be a try: one that changes the replay
// (batched INSERTs), or one that cannot be tried on a reset copy.
func checkTry(f fixes.Fix) error {
	switch {
	case f.Kind == fixes.BatchInserts:
		return fmt.Errorf("headroom: try %s batches INSERTs, which changes the replay, not the target: a step cannot try it", f.Name)
	case f.Untried != "":
		return fmt.Errorf("headroom: try %s cannot be tried: %s", f.Name, f.Untried)
	}
	return nil
}
