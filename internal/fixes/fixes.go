// Package fixes names the change that undoes a cause the plans found
// behind a regression (an index the control has and the candidate lacks,
// a planner setting, a table never analyzed, extended statistics or a
// column's statistics target on one side only), as SQL to try on the
// candidate's reset copy. It also makes the fix a finding recommends
// (FromFindings), batched INSERTs (Batch) and the user's own change to
// try (ParseTry: rehearse --try, headroom --try). Its Outcome is the form of a fix's verdict:
// whether the regression is back within the control's noise, what share
// of its time came back, and what the fix cost the other queries, its
// table's writes most of all; the verdict itself is the judge's
// (judge.Fix), by the comparison's own rules. It runs nothing: a fix is
// applied by package rounds (ApplyChange) in the rounds of package
// rehearse (RunFixes) and in headroom's tries, and the words are
// internal/report's.
package fixes

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/explain"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
)

// DefaultRounds is the number of fix rounds per fix, and of the
// control's rounds run beside them: three a side, as the rehearsal's own
// (rehearse.DefaultRounds), are the fewest for which the comparison
// measures the rounds' noise (the rank interval at its level, the noise
// pooled over the queries and the family's level, package stats), so
// that a fix is judged as the rehearsal is; with two a side only the
// default noise floors stand for it (issue 57: a query the fix does not
// touch called 5.55x slower (1.26-24.43) on a busy machine). Each adds a
// whole replay.
const DefaultRounds = 3

// Kind is what a fix changes on the candidate's copy.
type Kind string

// Kinds of fixes.
const (
	// CreateIndex: an index the control has and the candidate lacks
	// (explain.CauseIndexMissing), created with the control's
	// definition.
	CreateIndex Kind = "create_index"
	// SetDatabase: a planner setting that differs (explain.CauseSetting),
	// verified by planning again with the control's value or tied to the
	// plans by evidence, and that a session may change (pg_settings' context user or
	// superuser, no restart or reload): the control's value for the
	// round's copy of the database (ALTER DATABASE ... SET), which the
	// reset undoes with the copy.
	SetDatabase Kind = "set_database"
	// Analyze: a table never analyzed on the candidate
	// (explain.CauseNeverAnalyzed): ANALYZE of it.
	Analyze Kind = "analyze"
	// SetServer: a setting as SetDatabase that a database cannot
	// carry. One a reload applies (pg_settings' context sighup) is set
	// for the server by ALTER SYSTEM and a reload for the round, and
	// put back as it was after it (the reset of a copy does not undo
	// postgresql.auto.conf); one that needs a restart (postmaster) is
	// named with its SQL and not tried (Untried).
	SetServer Kind = "set_server"
	// Statement: SQL of the user's own (rehearse --try), run as given.
	Statement Kind = "sql"
	// DropIndex: an index the candidate has and the control lacks that
	// stops its updates from being HOT (explain.CauseIndexStopsHOT),
	// dropped from the copy: it reverts the change, so a verified
	// verdict confirms the cause.
	DropIndex Kind = "drop_index"
	// CreateStatistics: an extended statistics object the control has
	// built and the candidate lacks (explain.CauseExtendedStatistics),
	// created with the control's definition, then ANALYZE of its table:
	// the planner uses it only once analyzed.
	CreateStatistics Kind = "create_statistics"
	// DropStatistics: an extended statistics object the candidate has
	// built and the control has not at all, dropped from the copy: it
	// reverts the change, so a verified verdict confirms the cause.
	DropStatistics Kind = "drop_statistics"
	// StatisticsTarget: a column's statistics target that differs
	// (explain.CauseStatisticsTarget), set to the control's (ALTER TABLE
	// ... ALTER COLUMN ... SET STATISTICS, -1 for the default), then
	// ANALYZE of its table, which samples with it.
	StatisticsTarget Kind = "statistics_target"
)

// Origin is who proposed a fix.
type Origin string

// Origins of fixes.
const (
	// OriginPlans: a cause the plans named (Plan).
	OriginPlans Origin = "plans"
	// OriginTry: the user's own SQL (ParseTry), tried whatever the
	// plans found.
	OriginTry Origin = "try"
	// OriginFinding: the change a finding of the workload recommends
	// (FromFindings), such as the index a sequential scan behind a
	// filter lacks: judged as the user's own, by what it changed.
	OriginFinding Origin = "finding"
)

// Fix is a change tried on the candidate's copy in fix rounds, for the
// regressions whose cause it undoes.
type Fix struct {
	// Name names the fix in files and in the index: its kind and what
	// it changes ("index-customers_email_idx").
	Name string `json:"name"`
	Kind Kind   `json:"kind"`
	// Origin says whether the plans named it or the user asked for it.
	Origin Origin `json:"origin"`
	// SQL is what is run on each of Databases' copies after the reset.
	SQL string `json:"sql"`
	// Databases are the databases (as the workload names them on the
	// target) the regressions ran in; "" is the DSN's own.
	Databases []string `json:"databases"`
	// Relation is the table the fix changes, whose writes it may cost.
	Relation string `json:"relation,omitempty"`
	// Setting and Value are SetDatabase's setting and the control's
	// value.
	Setting string `json:"setting,omitempty"`
	Value   string `json:"value,omitempty"`
	// Untried says why the fix cannot be tried on a reset copy (a
	// setting that needs a restart); such a fix has no rounds.
	Untried string `json:"untried,omitempty"`
	// Restart: a SetServer fix applied by restarting the server, not by
	// a reload (WithRestart).
	Restart bool `json:"restart,omitempty"`
	// BatchRows is a BatchInserts fix's batch size.
	BatchRows int `json:"batch_rows,omitempty"`
	// Fingerprints are the regressions it is for, largest time added
	// first; AddedMS their time added per run, summed.
	Fingerprints []string `json:"fingerprints"`
	AddedMS      float64  `json:"added_ms"`
}

// Plan returns the fixes for rep's regressions that plans names a
// cause of that a fix can undo on a reset copy, largest time added
// first, at most max (0: all). A regression with no such cause gets
// none, and a rehearsal without regressions none at all.
func Plan(rep *compare.Report, plans *explain.Report, max int) []Fix {
	if rep == nil || plans == nil {
		return nil
	}
	byFP := map[string]*explain.Outcome{}
	for i := range plans.Outcomes {
		byFP[plans.Outcomes[i].Fingerprint] = &plans.Outcomes[i]
	}
	var fixes []Fix
	// The work regressions too: an index that stops HOT updates, a
	// setting that WAL-logs more, cost no time but WAL.
	for _, fp := range slices.Concat(rep.RegressionsByAddedTime, rep.MoreWork) {
		q, o := rep.Query(fp), byFP[fp]
		if q == nil || o == nil {
			continue
		}
		for _, c := range o.Causes {
			f, ok := fixOf(c, plans)
			if !ok {
				continue
			}
			i := slices.IndexFunc(fixes, func(g Fix) bool { return g.Name == f.Name })
			if i < 0 {
				fixes = append(fixes, f)
				i = len(fixes) - 1
			}
			g := &fixes[i]
			if !slices.Contains(g.Databases, o.Database) {
				g.Databases = append(g.Databases, o.Database)
			}
			if !slices.Contains(g.Fingerprints, fp) {
				g.Fingerprints = append(g.Fingerprints, fp)
				// A work regression may add no time.
				if q.ImpactMS > 0 {
					g.AddedMS += q.ImpactMS
				}
			}
		}
	}
	for i := range fixes {
		if fixes[i].Kind == SetDatabase && fixes[i].Untried == "" {
			// Shown with the workload's database; run with each copy's.
			fixes[i].SQL = fixes[i].SQLIn(cmp.Or(fixes[i].Databases[0], "current database"))
		}
	}
	return Bound(fixes, max)
}

// Bound keeps, of the fixes to try, the max (0: all) whose regressions
// add the most time (AddedMS), largest first, whatever found them (the
// plans, the findings: a finding's fix for no regression adds none, so
// goes last); the fixes named and not tried (Untried) follow, all of
// them: they take no place among max, costing no round. The order among
// equals is planned's.
func Bound(planned []Fix, max int) []Fix {
	fixes := slices.Clone(planned)
	slices.SortStableFunc(fixes, func(a, b Fix) int { return cmp.Compare(b.AddedMS, a.AddedMS) })
	var tried, named []Fix
	for _, f := range fixes {
		if f.Untried != "" {
			named = append(named, f)
		} else {
			tried = append(tried, f)
		}
	}
	if max > 0 && len(tried) > max {
		tried = tried[:max]
	}
	return append(tried, named...)
}

// fixOf is the fix that undoes cause c on the candidate, if there is one.
func fixOf(c explain.Cause, plans *explain.Report) (Fix, bool) {
	switch {
	case c.Kind == explain.CauseIndexMissing && c.Side == explain.Candidate && c.Control != "" && c.Index != "":
		return Fix{Name: "index-" + fileSafe(c.Index), Kind: CreateIndex, Origin: OriginPlans, SQL: c.Control, Relation: c.Relation}, true
	case c.Kind == explain.CauseSetting && (c.Verified || c.Evidence != "") && c.Setting != "" && c.Control != "":
		// Only a setting the plans tie to the change (the control's plan
		// back with its value, or a spill, reads, JIT): every setting
		// that differs would cost rounds for nothing.
		f := Fix{Name: "setting-" + fileSafe(c.Setting), Kind: SetDatabase, Origin: OriginPlans, Setting: c.Setting, Value: c.Control}
		switch settingContext(plans, c.Setting) {
		case "user", "superuser":
		case "sighup":
			// A reload applies it: ALTER SYSTEM for the round, undone
			// after it (package rehearse).
			f.Kind = SetServer
			f.SQL = "ALTER SYSTEM SET " + quoteIdent(c.Setting) + " = " + quoteLiteral(c.Control)
		case "postmaster":
			f.Kind, f.Untried = SetServer, UntriedRestart
			f.SQL = "ALTER SYSTEM SET " + quoteIdent(c.Setting) + " = " + quoteLiteral(c.Control)
		default:
			return Fix{}, false
		}
		return f, true
	case c.Kind == explain.CauseIndexStopsHOT && c.Side == explain.Candidate && c.Index != "" && c.Control == "":
		// The control has no index of that name: dropping it is the
		// change undone. One of that name defined otherwise is not.
		return Fix{Name: "drop-index-" + fileSafe(c.Index), Kind: DropIndex, Origin: OriginPlans,
			SQL: "DROP INDEX " + quoteName(qualified(c.Index, c.Candidate)), Relation: c.Relation}, true
	case c.Kind == explain.CauseNeverAnalyzed && c.Side == explain.Candidate && c.Relation != "":
		return analyze(c.Relation), true
	case c.Kind == explain.CauseExtendedStatistics, c.Kind == explain.CauseStatisticsTarget:
		return statisticsFix(c)
	}
	return Fix{}, false
}

// analyze is the fix of a table never analyzed on the candidate.
func analyze(rel string) Fix {
	return Fix{Name: "analyze-" + fileSafe(rel), Kind: Analyze, Origin: OriginPlans, SQL: "ANALYZE " + quoteName(rel), Relation: rel}
}

// statisticsFix is the fix of extended statistics on one side only, or
// of a column's statistics target that differs.
func statisticsFix(c explain.Cause) (Fix, bool) {
	es := c.Statistics
	switch {
	case c.Relation == "":
	case c.Kind == explain.CauseStatisticsTarget && c.Target != nil && c.Target.Column != "":
		col := c.Target.Column
		return Fix{Name: "statistics-target-" + fileSafe(c.Relation) + "." + fileSafe(col), Kind: StatisticsTarget, Origin: OriginPlans,
			SQL: fmt.Sprintf("ALTER TABLE %s ALTER COLUMN %s SET STATISTICS %d; ANALYZE %s",
				quoteName(c.Relation), quoteIdent(col), max(c.Target.Control, explain.DefaultTarget), quoteName(c.Relation)),
			Relation: c.Relation}, true
	case es == nil || es.Name == "":
	case c.Side == explain.Candidate && c.Candidate != "":
		// The candidate has it, never analyzed since it was made.
		return analyze(c.Relation), true
	case c.Side == explain.Candidate && strings.HasPrefix(es.Def, "CREATE STATISTICS "):
		return Fix{Name: "statistics-" + fileSafe(es.Name), Kind: CreateStatistics, Origin: OriginPlans,
			SQL: es.Def + "; ANALYZE " + quoteName(c.Relation), Relation: c.Relation}, true
	case c.Side == explain.Control && c.Control == "":
		// The control has no object of that name: dropping it is the
		// change undone. One defined otherwise, unbuilt, is not.
		name := quoteIdent(es.Name)
		if es.Schema != "" {
			name = quoteIdent(es.Schema) + "." + name
		}
		return Fix{Name: "drop-statistics-" + fileSafe(es.Name), Kind: DropStatistics, Origin: OriginPlans,
			SQL: "DROP STATISTICS " + name, Relation: c.Relation}, true
	}
	return Fix{}, false
}

// UntriedRestart is why a setting that needs a restart is named and not
// tried, unless the reset may restart the server (WithRestart).
const UntriedRestart = "it needs a restart of the server"

// WithRestart makes the settings of planned that need a restart tried,
// restarting the server (Fix.Restart): for a reset that restarts the
// server anyway and undoes them with the data directory.
func WithRestart(planned []Fix) []Fix {
	out := slices.Clone(planned)
	for i := range out {
		if out[i].Kind == SetServer && out[i].Untried == UntriedRestart {
			out[i].Untried, out[i].Restart = "", true
		}
	}
	return out
}

// TryPrefix starts the name of every fix of the user's own (ParseTry),
// so that it never takes the name of one the plans name.
const TryPrefix = "try-"

// maxTryName bounds a --try's name, which names its rounds' files.
const maxTryName = 60

// ParseTry reads the user's own fix, "NAME:SQL": NAME names it in the
// report and in its rounds' files (letters, digits, '_', '-', '.'), SQL
// is run as given in the round's copy of each of the fix's databases
// (the caller's to set). Its regressions are the caller's too (Aim).
func ParseTry(spec string) (Fix, error) {
	name, sql, ok := strings.Cut(spec, ":")
	name, sql = strings.TrimSpace(name), strings.TrimSpace(sql)
	switch {
	case !ok:
		return Fix{}, errors.New("want NAME:SQL, e.g. 'orders_idx:CREATE INDEX ON orders (created_at)'")
	case name == "":
		return Fix{}, errors.New("the name before ':' is empty")
	case len(name) > maxTryName:
		return Fix{}, fmt.Errorf("the name %.20q... is longer than %d characters", name, maxTryName)
	case fileSafe(name) != name:
		return Fix{}, fmt.Errorf("the name %q may hold letters, digits, '_', '-' and '.' only: it names files", name)
	case sql == "":
		return Fix{}, fmt.Errorf("%s: the SQL after ':' is empty", name)
	}
	return Fix{Name: TryPrefix + name, Kind: Statement, Origin: OriginTry, SQL: sql}, nil
}

// Aim points f at every regression of rep (latency's, largest time
// added first, then server work's), so that its verdict against the
// control is on all of them: the user's own fix names none.
func Aim(f Fix, rep *compare.Report) Fix {
	f.Fingerprints, f.AddedMS = []string{}, 0
	if rep == nil {
		return f
	}
	for _, fp := range slices.Concat(rep.RegressionsByAddedTime, rep.MoreWork) {
		if q := rep.Query(fp); q != nil && !slices.Contains(f.Fingerprints, fp) {
			f.Fingerprints = append(f.Fingerprints, fp)
			f.AddedMS += max(0, q.ImpactMS)
		}
	}
	return f
}

// qualified is index schema-qualified as its definition's table is
// ("CREATE INDEX i ON public.t USING ...": public.i), else as it is: an
// index lives in its table's schema.
func qualified(index, def string) string {
	_, rest, ok := strings.Cut(def, " ON ")
	if !ok {
		return index
	}
	rest = strings.TrimPrefix(rest, "ONLY ")
	table, _, _ := strings.Cut(rest, " ")
	if schema, _, ok := strings.Cut(table, "."); ok && !strings.Contains(schema, `"`) {
		return schema + "." + index
	}
	return index
}

// JudgedByChanges reports whether the fix is judged by what it changed
// as well (Outcome.Changes): one that no cause of a regression proposed
// (the user's own, a finding's).
func (f Fix) JudgedByChanges() bool { return f.Origin == OriginTry || f.Origin == OriginFinding }

// Reverts reports whether the fix undoes the candidate's change itself
// (DropIndex, DropStatistics): verified, it confirms the cause.
func (f Fix) Reverts() bool { return f.Kind == DropIndex || f.Kind == DropStatistics }

// settingContext is pg_settings.context of setting on the candidate
// (user and superuser: a database may carry it; sighup: a reload;
// postmaster: a restart); "" when the snapshots do not know it.
func settingContext(plans *explain.Report, setting string) string {
	for _, snap := range plans.Candidate {
		if snap == nil {
			continue
		}
		if s, ok := snap.Settings[setting]; ok {
			return s.Context
		}
	}
	return ""
}

// SQLIn is the fix's SQL for database db (a round's copy, by its name).
func (f Fix) SQLIn(db string) string {
	if f.Kind == SetDatabase {
		return "ALTER DATABASE " + quoteIdent(db) + " SET " + quoteIdent(f.Setting) + " = " + quoteLiteral(f.Value)
	}
	return f.SQL
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// quoteName quotes a relation's name, schema-qualified or not.
func quoteName(rel string) string {
	parts := strings.Split(rel, ".")
	for i, p := range parts {
		parts[i] = quoteIdent(p)
	}
	return strings.Join(parts, ".")
}

// fileSafe keeps a name to the characters a file name may carry anywhere.
func fileSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.' {
			return r
		}
		return '_'
	}, s)
}

// Status is the verdict on a fix.
type Status string

// Fix verdicts.
const (
	// Verified: with the fix, the comparison with the control no
	// longer finds the regression: within the control's noise. A
	// query whose regressed figure is back within the control's noise
	// and faster beyond noise than without the fix is verified even
	// when another figure of it (a tail of a few calls) is still
	// flagged: Query.Remains says which.
	Verified Status = "verified"
	// Partial: still a regression, but less of one beyond noise: faster
	// beyond noise than on the candidate without the fix (Query.Delta),
	// or its interval against the control below the one without it;
	// another cause remains.
	Partial Status = "partial"
	// NoEffect: still a regression, and not less of one beyond
	// noise, neither against the candidate without the fix nor
	// against the control.
	NoEffect Status = "no_effect"
	// NotTried: the server refused the fix's SQL, or no fix round
	// finished.
	NotTried Status = "not_tried"
	// Tried: the user's own fix, tried when the rehearsal found no
	// regression to judge it on: what it changed is in Changes only.
	Tried Status = "tried"
)

// Direction is which way a query changed with a fix, against the
// candidate without it.
type Direction string

// Directions of a change.
const (
	Faster Direction = "faster"
	// Slower: slower (its mean or its tail) or writing more per call.
	Slower Direction = "slower"
)

// Outcome is a fix's verdict, the contract of rehearse --json's
// "fixes" (docs/fix-rounds.md).
type Outcome struct {
	Fix
	Status Status `json:"status"`
	// NotApplied is the server's error of a fix not tried.
	NotApplied string `json:"not_applied,omitempty"`
	// Rounds is the number of fix rounds finished.
	Rounds int `json:"rounds"`
	// ControlRounds are the control's rounds the fix was judged against
	// (with), by their seq in the rehearsal's index: those run in turn
	// with the fix rounds, which saw the machine as they did.
	ControlRounds []int `json:"control_rounds,omitempty"`
	// RecoveredPct is the share of the regressions' time added per run
	// that the fix took back (Partial), summed over its queries.
	RecoveredPct float64 `json:"recovered_pct"`
	// Queries are the regressions it is for, with and without it.
	Queries []Query `json:"queries"`
	// Costs are the other queries that regressed (slower or writing
	// more) against the control with the fix and not without it; a
	// query the fix does not touch only when the comparison is certain
	// of it at the family's level (Cost.Elsewhere, judge.FamilyLevel).
	Costs []Cost `json:"costs"`
	// WithinNoise are the queries the fix does not touch that the
	// comparison with the control called regressed with the fix and not
	// without it, where that comparison does not reach the family's
	// level (too few rounds a side to measure the rounds' noise, or no
	// histograms): within what the machine's noise may do to a query
	// between rounds, context, never a cost of the fix.
	WithinNoise []Cost `json:"within_noise,omitempty"`
	// Writes are the queries that write the fix's relation, with the
	// fix against the candidate without it: what the fix costs them,
	// beyond noise or not.
	Writes []Write `json:"writes"`
	// Changes are, for the user's own fix (OriginTry), every query
	// faster or slower beyond noise with it than on the candidate
	// without it, each also against the control.
	Changes []Change `json:"changes,omitempty"`
}

// Change is a query that the user's own fix made faster or slower beyond
// noise, against the candidate without it.
type Change struct {
	Fingerprint string    `json:"fingerprint"`
	Query       string    `json:"query"`
	Direction   Direction `json:"direction"`
	// Status is the comparison's (the candidate without the fix against
	// with it); Metric the figure that changed; Effect its effect, or
	// Work's for a query writing more per call.
	Status compare.Status      `json:"status"`
	Metric compare.Metric      `json:"metric"`
	Effect *compare.Effect     `json:"effect,omitempty"`
	Work   *compare.WorkEffect `json:"work,omitempty"`
	// Control is the query's mean with the fix against the control,
	// ControlStatus that comparison's status.
	Control       *compare.Effect `json:"control,omitempty"`
	ControlStatus compare.Status  `json:"control_status,omitempty"`
}

// Query is a regression with and without the fix, each against the
// control.
type Query struct {
	Fingerprint string `json:"fingerprint"`
	Query       string `json:"query"`
	Status      Status `json:"status"`
	// Metric is the regressed figure; Before and With its effect
	// against the control without and with the fix.
	Metric compare.Metric  `json:"metric"`
	Before *compare.Effect `json:"before,omitempty"`
	With   *compare.Effect `json:"with,omitempty"`
	// WithStatus is the comparison's status of the query with the fix.
	WithStatus compare.Status `json:"with_status"`
	// Delta is the regressed figure with the fix against the candidate
	// without it (below 1: faster), the direct comparison; faster
	// beyond noise, it makes the fix at least Partial.
	Delta *compare.Effect `json:"delta,omitempty"`
	// Remains is, for a query Verified while the comparison with the
	// control still flags another figure of it (the p95 of a few slow
	// calls; WithStatus says which kind), that figure, and RemainsWith
	// its effect against the control with the fix.
	Remains     compare.Metric  `json:"remains,omitempty"`
	RemainsWith *compare.Effect `json:"remains_with,omitempty"`
	// AddedMSBefore and AddedMSWith are its time added per run
	// (compare.QueryDiff.ImpactMS) without and with the fix.
	AddedMSBefore float64 `json:"added_ms_before"`
	AddedMSWith   float64 `json:"added_ms_with"`
	RecoveredPct  float64 `json:"recovered_pct"`
	// WorkMetric is the figure of a work regression (more WAL or blocks
	// dirtied per call); WorkBefore and WorkWith its effect against the
	// control without and with the fix.
	WorkMetric compare.Metric      `json:"work_metric,omitempty"`
	WorkBefore *compare.WorkEffect `json:"work_before,omitempty"`
	WorkWith   *compare.WorkEffect `json:"work_with,omitempty"`
}

// NoneAdded reports whether q, with the fix, adds no time per run by the
// verdict's reckoning: verified with nothing remaining, so that
// AddedMSWith's 0 is within the control's noise, not a measured +0.
func (q Query) NoneAdded() bool { return q.Status == Verified && q.Remains == "" }

// Cost is a query that regressed against the control with the fix
// and not without it.
type Cost struct {
	Fingerprint string         `json:"fingerprint"`
	Query       string         `json:"query"`
	Status      compare.Status `json:"status"`
	Metric      compare.Metric `json:"metric,omitempty"`
	Factor      float64        `json:"factor"`
	AddedMS     float64        `json:"added_ms"`
	// Effect is the regressed metric's ratio against the control with
	// the fix, with its interval (nil for a work regression).
	Effect *compare.Effect `json:"effect,omitempty"`
	// Elsewhere: the query does not touch the relation the fix changes
	// (an index, its statistics, an ANALYZE), so the fix cannot have
	// changed its plan: a slowdown of it in the fix's rounds may be the
	// machine's during those rounds (the control's rounds run in turn
	// with them see the same period, not every burst of it). Such a
	// query is a cost only when the comparison is certain of it beyond
	// the rounds' noise at the family's level (judge.FamilyLevel); otherwise
	// it is within noise (Outcome.WithinNoise), never a cost. Never set
	// for a setting, which reaches every query.
	Elsewhere bool `json:"elsewhere,omitempty"`
}

// Write is a query that writes the fix's relation: its mean with the
// fix against the candidate's without it.
type Write struct {
	Fingerprint string          `json:"fingerprint"`
	Query       string          `json:"query"`
	Mean        *compare.Effect `json:"mean,omitempty"`
	// Status is the comparison's (candidate without the fix against
	// with it); Beyond: slower beyond noise and the floors.
	Status compare.Status `json:"status"`
	Beyond bool           `json:"beyond_noise"`
}

// Elsewhere reports whether statement sql cannot reach what f changes:
// f changes its relation only (an index, its statistics, an ANALYZE)
// and sql does not touch it, so that the fix cannot have changed its
// plan.
func (f Fix) Elsewhere(sql string) bool {
	return f.Relation != "" && f.relationScoped() && !touches(sql, f.Relation)
}

// WritesRelation reports whether statement sql writes f's relation
// (schema qualified or not).
func (f Fix) WritesRelation(sql string) bool {
	return f.Relation != "" && writes(sql, f.Relation)
}

// relationScoped reports whether what the fix changes is its relation's
// only (an index, statistics, an ANALYZE), so that a query that does not
// touch the relation keeps its plan with the fix.
func (f *Fix) relationScoped() bool {
	switch f.Kind {
	case CreateIndex, DropIndex, Analyze, CreateStatistics, DropStatistics, StatisticsTarget:
		return true
	}
	return false
}

// touches reports whether sql reads or writes relation rel (schema.name
// or name); a statement whose relations its text does not tell (DDL,
// DO, CALL) is taken to touch it.
func touches(sql, rel string) bool {
	c := fingerprint.Classify(sql)
	if c.Opaque || c.ReadAll || len(c.Funcs) > 0 {
		// A function may read any relation: taken to touch it.
		return true
	}
	return slices.ContainsFunc(c.Touch, names(rel))
}

// writes reports whether statement sql writes relation rel (schema
// qualified or not).
func writes(sql, rel string) bool {
	is := names(rel)
	return slices.ContainsFunc(fingerprint.Classify(sql).Write, func(w fingerprint.Write) bool { return is(w.Name) })
}

// names returns whether a name the statement's text gives is relation rel
// (schema.name or name), a side without a schema matching any.
func names(rel string) func(fingerprint.Name) bool {
	schema, name, ok := strings.Cut(rel, ".")
	if !ok {
		schema, name = "", rel
	}
	return func(n fingerprint.Name) bool {
		return n.Name == name && (schema == "" || n.Schema == "" || n.Schema == schema)
	}
}
