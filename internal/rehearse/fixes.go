package rehearse

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/connstr"
	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/fixes"
	"github.com/pgrehearse/pgrehearse/internal/reset"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/rounds"
)

// FixRun is a fix tried in fix rounds, as the index records it.
type FixRun struct {
	fixes.Fix
	// NotApplied is the server's error when the fix's SQL failed on the
	// reset copy: the fix was not tried.
	NotApplied string `json:"not_applied,omitempty"`
	// Files are its rounds' results, relative to the index's directory.
	Files []string `json:"files,omitempty"`
	// Results are its finished rounds' results.
	Results []*results.Result `json:"-"`
}

// RunFixes runs perFix fix rounds (0: fixes.DefaultRounds) of each fix on
// the candidate after Run, which must have left the resets prepared
// (Config.KeepResets): each starts from the reset state, applies the
// fix's SQL to the copies of its databases and replays the whole
// traffic, so that what the fix costs elsewhere is measured too. A fix
// whose SQL the server refuses is recorded as not applied, and the next
// is tried; a reset or a replay that fails stops the fix rounds with an
// error. The rounds' results go to out.Fixes, their records to
// out.Records (with Fix set), and never into the comparison's inputs.
func RunFixes(ctx context.Context, cfg Config, out *Outcome, planned []fixes.Fix, perFix int) error {
	if len(planned) == 0 {
		return nil
	}
	if out.open == nil {
		return errors.New("rehearse: the resets were closed: fix rounds need Config.KeepResets")
	}
	if cfg.Candidate.Reset.Mode() == reset.ModeNone {
		// Nothing would undo the fix: it would stay on the candidate.
		return errors.New("rehearse: fix rounds need a reset that undoes the fix (not --reset none)")
	}
	if perFix <= 0 {
		perFix = fixes.DefaultRounds
	}
	r := &run{cfg: cfg, out: out, begun: time.Now()}
	r.cleanupCtx = func() (context.Context, context.CancelFunc) {
		return rounds.CleanupContext(ctx, cfg.CleanupTimeout)
	}
	triable := 0
	for _, f := range planned {
		if f.Untried == "" {
			triable++
		}
	}
	seq, of := len(out.Records), len(out.Records)+triable*perFix
	n := out.Rounds
	defer func() { out.EndedAt = time.Now() }()
	// The fixes one after another, each in its rounds, through the round
	// runner: no round starts once ctx is cancelled.
	next, left := 0, 0
	var fr *FixRun
	turn := func() (func(context.Context) (bool, error), bool) {
		for left == 0 {
			if next == len(planned) {
				return nil, false
			}
			out.Fixes = append(out.Fixes, FixRun{Fix: planned[next]})
			next++
			if fr = &out.Fixes[len(out.Fixes)-1]; fr.Untried == "" {
				left = perFix
			}
		}
		left--
		return func(ctx context.Context) (bool, error) {
			seq++
			n++
			// N goes on from the rounds', so that a template reset's
			// copies never take the name of a kept round's.
			round := Round{Seq: seq, Of: of, Side: Candidate, N: n, BatchInserts: fr.BatchRows}
			applied, err := r.fixRound(ctx, round, cfg.Candidate, fr)
			if err != nil {
				return true, fmt.Errorf("fix %s: %w", fr.Name, err)
			}
			if !applied {
				left = 0
			}
			if left == 0 {
				// The fix's rounds are over: the index lists them.
				if err := r.writeIndex(); err != nil {
					return true, err
				}
			}
			return false, nil
		}, true
	}
	if before, err := rounds.Sequence(ctx, turn); before > 0 {
		return ctx.Err()
	} else if err != nil {
		return err
	}
	return nil
}

// fixRound is one fix round: reset, the fix applied, replay, release.
// applied is false when the server refused the fix (fr.NotApplied).
func (r *run) fixRound(ctx context.Context, round Round, target Target, fr *FixRun) (applied bool, err error) {
	rec := RoundRecord{Seq: round.Seq, Side: round.Side, N: round.N, Fix: fr.Name, StartedAt: time.Now()}
	lc := rounds.Round{Reset: target.Reset, N: round.N, CleanupTimeout: r.cfg.CleanupTimeout}
	release := func() error {
		err := lc.Release(ctx)
		rec.ReleaseSeconds = lc.ReleaseSeconds
		r.out.ReleaseSeconds += rec.ReleaseSeconds
		return err
	}
	fail := func(err error) (bool, error) {
		rec.Status, rec.Error, rec.EndedAt = StatusFailed, err.Error(), time.Now()
		if ctx.Err() != nil {
			rec.Status = StatusInterrupted
		}
		r.add(rec)
		return false, err
	}
	r.progress(round, PhaseReset)
	// A reset that failed half way is released by Start.
	rerr, relErr := lc.Start(ctx)
	st := lc.State
	rec.Reset = st
	if rerr != nil {
		rec.ReleaseSeconds = lc.ReleaseSeconds
		r.out.ReleaseSeconds += rec.ReleaseSeconds
		return fail(errors.Join(rerr, relErr))
	}
	r.out.ResetSeconds += st.Seconds
	round.Reset = st
	round.DatabaseMap = st.DatabaseMap(r.cfg.DatabaseMap)
	undo, err := applyFix(ctx, target, round, fr.Fix)
	if err != nil {
		if ctx.Err() != nil {
			return fail(errors.Join(err, release()))
		}
		fr.NotApplied = err.Error()
		err = release()
		rec.Status, rec.Error, rec.EndedAt = StatusFailed, "the fix was not applied: "+fr.NotApplied, time.Now()
		r.add(rec)
		return false, err
	}
	// After the fix: a restart for it may have begun another log file.
	if round.Logs, err = expandLogs(target.Logs); err != nil {
		if undo != nil {
			cctx, cancel := r.cleanupCtx()
			err = errors.Join(err, undo(cctx))
			cancel()
		}
		return fail(errors.Join(err, release()))
	}
	r.progress(round, PhaseReplay)
	res, rerr := rounds.Replay(ctx, &lc, func(ctx context.Context) (*results.Result, error) { return r.cfg.Replay(ctx, round, target) })
	rec.ReplaySeconds = lc.ReplaySeconds
	r.out.ReplaySeconds += rec.ReplaySeconds
	var undoErr error
	if undo != nil {
		// The server's setting is put back whatever the replay did:
		// the reset of a copy does not undo it.
		cctx, cancel := r.cleanupCtx()
		if undoErr = undo(cctx); undoErr != nil {
			undoErr = fmt.Errorf("putting the server's setting back after the fix: %w", undoErr)
		}
		cancel()
	}
	relErr = errors.Join(undoErr, release())
	rec.EndedAt = time.Now()
	switch {
	case rerr != nil:
		return false, r.failedFix(rec, errors.Join(rerr, relErr))
	case res == nil || res.Partial:
		return false, r.failedFix(rec, errors.Join(errors.New("the replay stopped early"), relErr))
	}
	unmapDatabases(res, st.Databases)
	name := fmt.Sprintf("round-%02d-candidate-fix-%s.json", round.Seq, fr.Name)
	res.Source = fmt.Sprintf("candidate with fix %s, round %d", fr.Name, len(fr.Results)+1)
	if r.cfg.Dir != "" {
		path := filepath.Join(r.cfg.Dir, name)
		if err := writeResult(path, res); err != nil {
			return false, r.failedFix(rec, errors.Join(err, relErr))
		}
		rec.File, res.Source = name, path
		fr.Files = append(fr.Files, name)
	}
	rec.Status = StatusDone
	if relErr != nil {
		rec.Error = relErr.Error()
	}
	r.add(rec)
	fr.Results = append(fr.Results, res)
	r.progress(round, PhaseDone)
	return true, relErr
}

func (r *run) failedFix(rec RoundRecord, err error) error {
	rec.Status, rec.Error = StatusFailed, err.Error()
	r.add(rec)
	return err
}

// applyFix runs the fix's SQL in the round's copy of each of its
// databases; a setting for the server (fixes.SetServer) is set once, by
// ALTER SYSTEM and a reload, and undo puts it back as it was.
func applyFix(ctx context.Context, target Target, round Round, f fixes.Fix) (undo func(context.Context) error, err error) {
	dsn := target.DSN
	if f.Kind == fixes.SetServer {
		var restart func(context.Context) error
		if f.Restart {
			r, ok := target.Reset.(reset.Restarter)
			if !ok {
				return nil, errors.New("the setting needs a restart of the server, which this reset cannot make")
			}
			restart = r.Restart
		}
		return setServer(ctx, dsn, f, restart)
	}
	for _, db := range f.Databases {
		conn, err := fixConn(ctx, dsn, copyOf(db, round))
		if err != nil {
			return nil, err
		}
		var name string
		if err = conn.QueryRow(ctx, "SELECT current_database()").Scan(&name); err == nil {
			_, err = conn.Exec(ctx, f.SQLIn(name))
		}
		conn.Close(context.WithoutCancel(ctx))
		if err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// fixConn connects to database db of dsn's server ("": the DSN's own),
// named as pgrehearse's own session.
func fixConn(ctx context.Context, dsn, db string) (*pgx.Conn, error) {
	cfg, err := connstr.ParsePgx(dsn)
	if err != nil {
		return nil, err
	}
	if db != "" {
		cfg.Database = db
	}
	cfg.RuntimeParams["application_name"] = event.OwnApplicationPrefix + "fix"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, connstr.SafeError(err)
	}
	return conn, nil
}

// setServer sets f's setting for the server (ALTER SYSTEM, a reload, or
// restart when not nil) and waits until new sessions have it. undo puts
// postgresql.auto.conf back as it was, the candidate's own value of the
// setting or none, and reloads (restarts) again.
func setServer(ctx context.Context, dsn string, f fixes.Fix, restart func(context.Context) error) (undo func(context.Context) error, err error) {
	conn, err := fixConn(ctx, dsn, "")
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	// The candidate's own line in postgresql.auto.conf, if any, is what
	// the undo writes back.
	var prev *string
	err = conn.QueryRow(ctx, `SELECT setting FROM pg_file_settings
		WHERE name = $1 AND sourcefile LIKE '%postgresql.auto.conf' ORDER BY seqno DESC LIMIT 1`, f.Setting).Scan(&prev)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return nil, err
	}
	back := "ALTER SYSTEM RESET " + pgx.Identifier{f.Setting}.Sanitize()
	if prev != nil {
		back = "ALTER SYSTEM SET " + pgx.Identifier{f.Setting}.Sanitize() + " = '" + strings.ReplaceAll(*prev, "'", "''") + "'"
	}
	undo = func(ctx context.Context) error {
		conn, err := fixConn(ctx, dsn, "")
		if err != nil {
			return err
		}
		defer conn.Close(context.WithoutCancel(ctx))
		_, err = reload(ctx, conn, dsn, back, restart)
		return err
	}
	if altered, err := reload(ctx, conn, dsn, f.SQL, restart); err != nil {
		// The ALTER SYSTEM written, the reload failed: put it back
		// all the same.
		if !altered {
			return nil, err
		}
		if uerr := undo(context.WithoutCancel(ctx)); uerr != nil {
			err = errors.Join(err, fmt.Errorf("putting the server's setting back: %w", uerr))
		}
		return nil, err
	}
	return undo, nil
}

// reload runs an ALTER SYSTEM on conn, reloads the server's
// configuration, and waits until a new session of dsn has loaded it
// (pg_conf_load_time later than before): the postmaster reloads on its
// own time, and a round's session forked before would not have it.
// altered says whether the ALTER SYSTEM was run. With restart, the
// server is restarted instead (conn is then ended).
func reload(ctx context.Context, conn *pgx.Conn, dsn, alter string, restart func(context.Context) error) (altered bool, err error) {
	var before time.Time
	if err := conn.QueryRow(ctx, "SELECT pg_conf_load_time()").Scan(&before); err != nil {
		return false, err
	}
	if _, err := conn.Exec(ctx, alter); err != nil {
		return false, err
	}
	if restart != nil {
		return true, restart(ctx)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
		return true, err
	}
	deadline := time.Now().Add(reloadTimeout)
	for {
		c, err := fixConn(ctx, dsn, "")
		if err != nil {
			return true, err
		}
		var at time.Time
		err = c.QueryRow(ctx, "SELECT pg_conf_load_time()").Scan(&at)
		c.Close(context.WithoutCancel(ctx))
		switch {
		case err != nil:
			return true, err
		case at.After(before):
			return true, nil
		case time.Now().After(deadline):
			return true, fmt.Errorf("the server did not reload its configuration within %v", reloadTimeout)
		}
		select {
		case <-ctx.Done():
			return true, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// reloadTimeout bounds the wait for a reload, which takes the postmaster
// milliseconds.
const reloadTimeout = 30 * time.Second

// copyOf is the round's copy of database db (as the target names it, or
// as the logs do), else db itself.
func copyOf(db string, round Round) string {
	if c, ok := round.Reset.Databases[db]; ok {
		return c
	}
	if c, ok := round.DatabaseMap[db]; ok {
		return c
	}
	return db
}

// JudgeFixes judges each fix of out.Fixes with the comparison's options:
// its rounds against the control's (with), against the regressions the
// rehearsal found (before), and against the candidate's rounds (what it
// changed, for the writes of its relation).
func JudgeFixes(out *Outcome, before *compare.Report, opts compare.Options) ([]fixes.Outcome, error) {
	var all []fixes.Outcome
	for _, fr := range out.Fixes {
		if fr.Kind == fixes.BatchInserts {
			// Judged per inserted row (judge.BatchInserts): its
			// statements are not the candidate's.
			continue
		}
		if fr.NotApplied != "" || len(fr.Results) == 0 {
			all = append(all, fixes.Outcome{Fix: fr.Fix, Status: fixes.NotTried, NotApplied: fr.NotApplied, Queries: []fixes.Query{}, Costs: []fixes.Cost{}, Writes: []fixes.Write{}})
			continue
		}
		with, err := compare.Runs(out.Control, fr.Results, opts)
		if err != nil {
			return all, fmt.Errorf("fix %s against the control: %w", fr.Name, err)
		}
		delta, err := compare.Runs(out.Candidate, fr.Results, opts)
		if err != nil {
			return all, fmt.Errorf("fix %s against the candidate: %w", fr.Name, err)
		}
		o := fixes.Judge(fr.Fix, before, with, delta)
		o.Rounds = len(fr.Results)
		all = append(all, o)
	}
	return all, nil
}
