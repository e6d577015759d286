package replayrun

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	capfile "github.com/pgrehearse/pgrehearse/internal/capture"
	"github.com/pgrehearse/pgrehearse/internal/catalog"
	"github.com/pgrehearse/pgrehearse/internal/connstr"
	"github.com/pgrehearse/pgrehearse/internal/replay"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/source"
)

// StartCheckMode says what the pre-flight does with the starting point a
// capture recorded (capture.StartState): a replay onto a target that is
// not that state shows errors and divergences that look like the
// target's fault.
type StartCheckMode int

const (
	// StartCheckWarn compares the target with the starting point and
	// tells what differs (Preflight.StartCheck); the replay goes on.
	StartCheckWarn StartCheckMode = iota
	// StartCheckRequire fails the pre-flight (*StartStateError) when the
	// target differs, when it could not be compared, or when the input
	// records no starting point.
	StartCheckRequire
	// StartCheckSkip does not compare (a rehearsal's rounds after the
	// first, whose reset returns the target to the state the first
	// round's check saw).
	StartCheckSkip
)

// StartCheckTimeout bounds the whole comparison; each query of it is
// bounded by PreflightTimeout, and its counts together by
// StartCountBudget.
const StartCheckTimeout = 3 * time.Minute

// StartCountBudget bounds the comparison's counts together (the tables
// the start counted, counted on the target): the tables left when it is
// spent are compared by their estimates, and say so.
const StartCountBudget = 2 * time.Minute

// StartStateError is Run's error when the target is not the starting
// point the capture recorded and the run requires it
// (StartCheckRequire): nothing was replayed.
type StartStateError struct{ Preflight *Preflight }

func (e *StartStateError) Error() string {
	switch {
	case e.Preflight.StartState == nil:
		return "pre-flight failed: the input records no starting point to compare the target with; nothing was replayed"
	case e.Preflight.StartErr != nil:
		return "pre-flight failed: the target could not be compared with the starting point: " + e.Preflight.StartErr.Error() + "; nothing was replayed"
	}
	return "pre-flight failed: the target is not the starting point the capture recorded; nothing was replayed"
}

// checkStart compares the target with the starting point of the set's
// captures, in the databases the replay's logins use, and fills pf.
func checkStart(ctx context.Context, cfg Config, set *source.Set, logins []replay.Login, pf *Preflight) {
	pf.StartState, pf.StartFrom = set.StartState()
	if pf.StartState == nil {
		return
	}
	used := loginDatabases(cfg, logins)
	dbs := map[string]string{}
	for _, d := range pf.StartState.Databases {
		target := d.Name
		if to, ok := cfg.Replay.DatabaseMap[d.Name]; ok {
			target = to
		}
		if used[target] {
			dbs[d.Name] = target
		}
	}
	ctx, cancel := context.WithTimeout(ctx, StartCheckTimeout)
	defer cancel()
	pf.StartCheck, pf.StartErr = catalog.CheckStartState(ctx, cfg.Replay.Target, pf.StartState, dbs,
		catalog.DefaultStartTolerance, StartCountBudget, catalog.Options{StatementTimeout: PreflightTimeout})
	if rec := pf.StartState.Digests; rec != nil {
		db := rec.Database
		if to, ok := cfg.Replay.DatabaseMap[db]; ok {
			db = to
		}
		pf.Digests, pf.DigestErr = digestTarget(ctx, cfg.Replay.Target, db, rec)
		pf.DigestDiffs = catalog.CompareDigests(rec, pf.Digests)
	}
}

// loginDatabases are the databases the replay connects to on the
// target.
func loginDatabases(cfg Config, logins []replay.Login) map[string]bool {
	used := map[string]bool{}
	for _, l := range logins {
		db := l.Database
		if db == "" {
			if c, err := connstr.Parse(cfg.Replay.Target); err == nil {
				db = c.Database
			}
		}
		if db != "" {
			used[db] = true
		}
	}
	return used
}

// provenTables are the tables whose digests matched on the target, when
// every login of the replay uses the digested database (a table's name
// does not say its database); none otherwise.
func provenTables(cfg Config, pf *Preflight, logins []replay.Login) []string {
	if pf.StartState == nil {
		return nil
	}
	rec := pf.StartState.Digests
	if rec == nil || pf.Digests == nil || pf.DigestErr != nil || len(catalog.ProvenDiffs(pf.DigestDiffs)) > 0 {
		return nil
	}
	db := rec.Database
	if to, ok := cfg.Replay.DatabaseMap[db]; ok {
		db = to
	}
	for d := range loginDatabases(cfg, logins) {
		if d != db {
			return nil
		}
	}
	differs := map[string]bool{}
	for _, d := range pf.DigestDiffs {
		differs[d.Schema+"."+d.Name] = true
	}
	// A table written around the start's digest is proven by neither
	// a match nor a difference.
	var out []string
	for _, t := range rec.Tables {
		if t.NotDigested == "" && t.Written == 0 && !differs[t.Schema+"."+t.Name] {
			out = append(out, t.Schema+"."+t.Name)
		}
	}
	return out
}

// digestTarget reads, in the target's database db, the digests of the
// tables the recording's start digested (rec), on its key ranges.
func digestTarget(ctx context.Context, target, db string, rec *capfile.TableDigests) (*capfile.TableDigests, error) {
	cfg, err := connstr.ParsePgx(target)
	if err != nil {
		return nil, err
	}
	cfg.Database = db
	cfg.RuntimeParams["application_name"] = catalog.StartStateApplication
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, connstr.SafeError(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return catalog.DigestTables(ctx, conn, rec.Below, rec)
}

// DataDiffersError is Run's error when the target's table digests differ
// from those the recording stored at its start, on a table nothing was
// seen written in meanwhile (catalog.DigestDiff.Proven): the target is
// not the start, proven by its rows; nothing was replayed.
type DataDiffersError struct{ Preflight *Preflight }

func (e *DataDiffersError) Error() string {
	var ds []string
	for _, d := range catalog.ProvenDiffs(e.Preflight.DigestDiffs) {
		ds = append(ds, d.String())
	}
	return "the target's data differs from the recording's start (table digests at WAL " + e.Preflight.StartState.Digests.LSN +
		"): " + strings.Join(ds, "; ") + "; nothing was replayed"
}

// startFailed reports whether the start check fails the pre-flight.
func (p *Preflight) startFailed(mode StartCheckMode) bool {
	if mode != StartCheckRequire {
		return false
	}
	return p.StartState == nil || p.StartErr != nil || p.StartCheck.Differs()
}

// CheckStart compares cfg's target with the starting point of cfg's
// input in the databases logins use (a Scan's, the maps applied), as a
// replay's pre-flight does, without replaying anything: a rehearsal
// checks both targets so before its first round. Under
// StartCheckRequire a target that fails the check is a
// *StartStateError, with the Preflight.
func CheckStart(ctx context.Context, cfg Config, logins []replay.Login) (*Preflight, error) {
	set, err := openInput(&cfg)
	if err != nil {
		return nil, err
	}
	defer set.Close()
	pf := &Preflight{Own: -1}
	checkStart(ctx, cfg, set, logins, pf)
	if pf.startFailed(cfg.StartCheck) {
		return pf, &StartStateError{Preflight: pf}
	}
	if len(catalog.ProvenDiffs(pf.DigestDiffs)) > 0 {
		return pf, &DataDiffersError{Preflight: pf}
	}
	return pf, nil
}

// startDigests is the result's account of the digests' comparison:
// nil when none was made.
func startDigests(pf *Preflight) *results.StartDigests {
	if pf == nil || pf.StartState == nil || pf.StartState.Digests == nil || pf.Digests == nil || pf.DigestErr != nil {
		return nil
	}
	sd := &results.StartDigests{}
	for _, t := range pf.StartState.Digests.Tables {
		if t.NotDigested == "" {
			sd.Compared++
		}
	}
	sd.Match = sd.Compared - len(pf.DigestDiffs)
	for _, d := range pf.DigestDiffs {
		if !d.Proven() {
			sd.Unproven = append(sd.Unproven, results.UnprovenDigest{Table: d.Schema + "." + d.Name, Ranges: d.Ranges, Why: d.Why, Written: d.Written})
		}
	}
	return sd
}
