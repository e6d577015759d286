package explain

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/pgrehearse/pgrehearse/internal/catalog"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/plan"
)

// CauseKind is a kind of difference between the servers that explains a
// plan change or a slowdown.
type CauseKind string

// Kinds of causes.
const (
	// CauseIndexMissing: an index the control's plan uses does not
	// exist on the candidate.
	CauseIndexMissing CauseKind = "index_missing"
	// CauseIndexInvalid: it exists but is invalid there (a failed
	// CREATE INDEX CONCURRENTLY): the planner ignores it.
	CauseIndexInvalid CauseKind = "index_invalid"
	// CauseIndexDiffers: an index of that name has another definition.
	CauseIndexDiffers CauseKind = "index_differs"
	// CauseIndexNew: the candidate's plan uses an index the control
	// does not have.
	CauseIndexNew CauseKind = "index_new"
	// CauseNeverAnalyzed: a relation of the plans has no statistics on
	// one side (Side), and has them on the other: after a restore or a
	// pg_upgrade without ANALYZE.
	CauseNeverAnalyzed CauseKind = "never_analyzed"
	// CauseStaleStatistics: many rows changed since the relation was
	// last analyzed on one side (Side).
	CauseStaleStatistics CauseKind = "stale_statistics"
	// CauseRowsDiffer: the relation's size (reltuples) differs by more
	// than half between the servers.
	CauseRowsDiffer CauseKind = "rows_differ"
	// CauseExtendedStatistics: an extended statistics object on the
	// relation exists (built) on one side only: Side is the side that
	// lacks it, Statistics the object on the other, whose definition
	// is that side's value (Control or Candidate). The lacking side's
	// value is its own definition when it has the object unbuilt (not
	// analyzed since it was made).
	CauseExtendedStatistics CauseKind = "extended_statistics"
	// CauseStatisticsTarget: a column of the relation that the query
	// names has another statistics target on each side (ALTER TABLE
	// ... SET STATISTICS): Target has both, Columns the column, and
	// Control and Candidate the targets as text ("default" for none
	// set). The planner's estimates of the column differ with it.
	CauseStatisticsTarget CauseKind = "statistics_target"
	// CauseSetting: a planner or resource setting differs.
	CauseSetting CauseKind = "setting"
	// CauseVersion: the major versions differ, and with them the
	// planner.
	CauseVersion CauseKind = "version"
	// CauseIndexStopsHOT: an UPDATE (or ON CONFLICT DO UPDATE, or
	// MERGE's UPDATE) assigns Columns of Relation, which Index covers
	// on the candidate (key, INCLUDE, expression or predicate) and no
	// index covers on the control: its updates that change them
	// cannot be HOT there, and write a new entry in every index of the
	// relation, more WAL and more dirtied blocks per call. It needs no
	// plan change. Candidate is the index's definition; Control is its
	// definition on the control when an index of that name is there
	// and does not cover them. HOT, when both sides' statistics counted
	// updates of the relation, are their counters.
	CauseIndexStopsHOT CauseKind = "index_stops_hot"
)

// Cause is one difference behind a plan change or a slowdown. Control
// and Candidate are the two sides' values where the kind has values (a
// setting's, reltuples, an index definition).
type Cause struct {
	Kind      CauseKind `json:"kind"`
	Side      Side      `json:"side,omitempty"`
	Relation  string    `json:"relation,omitempty"`
	Index     string    `json:"index,omitempty"`
	Setting   string    `json:"setting,omitempty"`
	Control   string    `json:"control,omitempty"`
	Candidate string    `json:"candidate,omitempty"`
	// Verified: planning the statement on the candidate with the
	// control's value gave the control's plan back. Together: only with
	// every verified setting changed at once.
	Verified bool `json:"verified,omitempty"`
	Together bool `json:"together,omitempty"`
	// Evidence names what in the plans ties the cause to them: "spill"
	// (a sort, hash or aggregate went to disk), "reads" (shared blocks
	// read from outside shared_buffers grew), "jit"; or what in the
	// comparison does: EvidenceWAL, EvidenceDirtied.
	Evidence string `json:"evidence,omitempty"`
	// Columns are the columns the statement assigns that the index
	// covers (CauseIndexStopsHOT).
	Columns []string `json:"columns,omitempty"`
	// HOT are the relation's update counters on both sides
	// (CauseIndexStopsHOT).
	HOT *HOTUpdates `json:"hot_updates,omitempty"`
	// Statistics is the extended statistics object of the side that
	// has it (CauseExtendedStatistics).
	Statistics *ExtStat `json:"statistics,omitempty"`
	// Target is the column's statistics target on both sides
	// (CauseStatisticsTarget).
	Target *StatisticsTarget `json:"statistics_target,omitempty"`
}

// StatisticsTarget is a column's statistics target on both sides,
// DefaultTarget where none is set.
type StatisticsTarget struct {
	Column    string `json:"column"`
	Control   int    `json:"control"`
	Candidate int    `json:"candidate"`
}

// Evidence of a setting that the comparison's work per call ties to the
// statement (Statement.MoreWork).
const (
	// EvidenceWAL: the candidate writes more WAL per call, and the
	// setting makes it WAL-log more (data_checksums, wal_log_hints,
	// full_page_writes turned on).
	EvidenceWAL = "wal"
	// EvidenceDirtied: the candidate dirties more shared blocks per
	// call, and has fewer shared_buffers.
	EvidenceDirtied = "dirtied"
)

// HOTUpdates are a relation's pg_stat_all_tables counters on both sides
// when the snapshots read them (once, after the runs): rows updated
// (n_tup_upd) and of them updated HOT (n_tup_hot_upd), counted since
// the statistics were reset or the database made. They count every
// statement's updates of the relation, not one statement's.
type HOTUpdates struct {
	ControlUpdates   int64 `json:"control_updates"`
	ControlHOT       int64 `json:"control_hot"`
	CandidateUpdates int64 `json:"candidate_updates"`
	CandidateHOT     int64 `json:"candidate_hot"`
}

// plannerSetting reports whether a setting changes how the planner
// plans (not only how the executor runs).
func plannerSetting(name string) bool {
	switch name {
	case "work_mem", "hash_mem_multiplier", "effective_cache_size", "max_parallel_workers_per_gather",
		"max_parallel_workers", "max_worker_processes":
		return true
	case "shared_buffers", "effective_io_concurrency", "maintenance_io_concurrency", "temp_buffers",
		"maintenance_work_mem", "autovacuum_work_mem", "logical_decoding_work_mem", "max_stack_depth",
		"dynamic_shared_memory_type", "huge_pages", "huge_page_size", "shared_memory_type", "min_dynamic_shared_memory",
		"track_io_timing", "max_connections", "server_version", "jit_provider", "backend_flush_after",
		"old_snapshot_threshold", "max_prepared_transactions", "vacuum_buffer_usage_limit", "io_combine_limit",
		"max_parallel_maintenance_workers", "data_checksums", "wal_log_hints", "full_page_writes":
		return false
	}
	return true // Query Tuning: enable_*, cost constants, GEQO, collapse limits, jit...
}

// settingDiffs returns the settings whose values differ between the
// snapshots, sorted by name.
func settingDiffs(a, b *Snapshot) []string {
	var out []string
	for name, sa := range a.Settings {
		sb, ok := b.Settings[name]
		if !ok || sa.Raw == sb.Raw && sa.Unit == sb.Unit {
			continue
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// SettingDiffs returns the settings whose values differ between two
// snapshots, by name, with both values.
func SettingDiffs(control, candidate *Snapshot) []Cause {
	var out []Cause
	if control == nil || candidate == nil {
		return out
	}
	for _, name := range settingDiffs(control, candidate) {
		out = append(out, Cause{Kind: CauseSetting, Setting: name, Control: control.Settings[name].Value, Candidate: candidate.Settings[name].Value})
	}
	return out
}

// attribute finds the causes of main's change or slowdown, and of the
// more work per call the comparison found (more).
func (r *runner) attribute(ctx context.Context, out *Outcome, main *Explained, ctl, cand *session, more []Work) {
	var cs, cd *Snapshot
	if ctl != nil {
		cs = ctl.snap
	}
	if cand != nil {
		cd = cand.snap
	}
	pa, pb := main.Control.Plan, main.Candidate.Plan
	rels := append(pa.Relations(), pb.Relations()...)
	assigned := fingerprint.AssignedColumns(out.Query)
	for _, a := range assigned {
		rels = append(rels, a.Name.Name)
	}
	for _, s := range []*session{ctl, cand} {
		if s != nil {
			// A relation snapshot that cannot be read loses the
			// causes from statistics, and says so.
			if err := s.snap.LoadRelations(ctx, s.conn, r.opts.statementTimeout(), rels); err != nil {
				out.Unchecked = append(out.Unchecked, problemOf(s.side, "", err))
			}
		}
	}
	var causes []Cause
	if cs != nil && cd != nil && cs.Version/10000 != cd.Version/10000 {
		causes = append(causes, Cause{Kind: CauseVersion, Control: cs.VersionText, Candidate: cd.VersionText})
	}
	changed := !main.Diff.Same
	if changed {
		causes = append(causes, r.verifyIndexes(ctx, main, cand, indexCauses(main, cs, cd))...)
	}
	causes = append(causes, hotCauses(assigned, cs, cd)...)
	// Generic plans, made without the statement's values, cannot show
	// an estimate of a value (a column's most common values, extended
	// statistics' MCV lists): the same generic plans do not clear the
	// statistics the values' plans rest on, which are named for a
	// slowdown as for a changed plan.
	hidden := changed || main.req.mode == ModeGeneric
	causes = append(causes, statisticsCauses(rels, cs, cd, changed, hidden)...)
	if hidden {
		causes = append(causes, targetCauses(out.Query, rels, cs, cd)...)
	}
	if cs != nil && cd != nil {
		if changed {
			causes = append(causes, r.settingCauses(ctx, main, ctl, cand)...)
		} else {
			causes = append(causes, r.verifySpill(ctx, main, cand, slowdownSettings(main, cs, cd))...)
		}
		causes = append(causes, workSettings(more, cs, cd, causes)...)
	}
	slices.SortStableFunc(causes, func(x, y Cause) int { return cmp.Compare(causeRank(x), causeRank(y)) })
	out.Causes = causes
}

// causeRank orders causes, strongest first.
func causeRank(c Cause) int {
	switch c.Kind {
	case CauseIndexMissing, CauseIndexInvalid:
		return 0
	case CauseNeverAnalyzed:
		return 1
	case CauseIndexDiffers, CauseIndexNew, CauseIndexStopsHOT:
		return 2
	case CauseSetting:
		switch {
		case c.Verified:
			return 3
		case c.Evidence != "":
			return 4
		}
		return 9
	case CauseStaleStatistics:
		return 5
	case CauseRowsDiffer:
		return 6
	case CauseExtendedStatistics, CauseStatisticsTarget:
		return 7
	}
	return 8
}

// indexCauses compares the indexes the two plans use across the servers.
func indexCauses(main *Explained, cs, cd *Snapshot) []Cause {
	var out []Cause
	seen := map[string]bool{}
	look := func(p *plan.Plan, here, there *Snapshot, new bool) {
		for _, n := range p.Nodes() {
			if n.Index == "" || n.Relation == "" && n.Type != "Bitmap Index Scan" || seen[n.Index] {
				continue
			}
			rel := n.Relation
			if rel == "" {
				rel = bitmapRelation(p, n)
			}
			seen[n.Index] = true
			rt := relation(there, rel)
			rh := relation(here, rel)
			if rt == nil {
				continue
			}
			ix := rt.Index(n.Index)
			var mine *Index
			if rh != nil {
				mine = rh.Index(n.Index)
			}
			switch {
			case ix == nil && mine != nil && sameShapeIndex(rt, mine) != "":
				// The same index under another name: not a cause.
			case ix == nil && new:
				out = append(out, Cause{Kind: CauseIndexNew, Relation: rel, Index: n.Index, Candidate: defOf(mine)})
			case ix == nil:
				out = append(out, Cause{Kind: CauseIndexMissing, Side: Candidate, Relation: rel, Index: n.Index, Control: defOf(mine)})
			case !ix.Valid && !new:
				out = append(out, Cause{Kind: CauseIndexInvalid, Side: Candidate, Relation: rel, Index: n.Index, Control: defOf(mine), Candidate: ix.Def})
			case mine != nil && ix.Def != mine.Def:
				c := Cause{Kind: CauseIndexDiffers, Relation: rel, Index: n.Index, Control: mine.Def, Candidate: ix.Def}
				if new {
					c.Control, c.Candidate = ix.Def, mine.Def
				}
				out = append(out, c)
			}
		}
	}
	if cd != nil {
		look(main.Control.Plan, cs, cd, false)
	}
	if cs != nil && cd != nil {
		look(main.Candidate.Plan, cd, cs, true)
	}
	return out
}

// hotCauses finds, for each relation the statement updates, the indexes
// that stop its updates from being HOT on the candidate and not on the
// control: a column it assigns that an index covers on the candidate and
// none covers on the control. A column covered on both sides is not a
// cause (the control's updates of it were not HOT either), nor one
// covered on the control only (the candidate does less). The relation's
// update counters go with the cause when both sides counted updates, but
// never decide it: they count every statement's updates since the
// statistics were last reset, which may be before the index was made.
func hotCauses(assigned []fingerprint.Assigned, cs, cd *Snapshot) []Cause {
	var out []Cause
	for _, a := range assigned {
		rc, rd := relation(cs, a.Name.Name), relation(cd, a.Name.Name)
		if rc == nil || rd == nil {
			continue
		}
		var hot *HOTUpdates
		if rc.Updates > 0 && rd.Updates > 0 {
			hot = &HOTUpdates{ControlUpdates: rc.Updates, ControlHOT: rc.HOTUpdates, CandidateUpdates: rd.Updates, CandidateHOT: rd.HOTUpdates}
		}
		for _, ix := range rd.Indexes {
			var cols []string
			for _, col := range a.Columns {
				if ix.Covers(col) && !slices.ContainsFunc(rc.Indexes, func(c Index) bool { return c.Covers(col) }) {
					cols = append(cols, col)
				}
			}
			if len(cols) == 0 {
				continue
			}
			c := Cause{Kind: CauseIndexStopsHOT, Side: Candidate, Relation: a.Name.Name, Index: ix.Name, Candidate: ix.Def, Columns: cols, HOT: hot}
			if mine := rc.Index(ix.Name); mine != nil {
				c.Control = mine.Def
			}
			out = append(out, c)
		}
	}
	return out
}

// verifyIndexes checks, with hypopg when the candidate's database has it,
// each index the candidate lacks (or has invalid): created
// hypothetically, in the explaining backend's memory only, the planner
// uses it for the statement. Without hypopg the causes stay unverified.
func (r *runner) verifyIndexes(ctx context.Context, main *Explained, cand *session, causes []Cause) []Cause {
	if cand == nil || !cand.snap.HypoPG || r.opts.NoVerify {
		return causes
	}
	ex := &catalog.Explainer{Conn: cand.conn, Timeout: r.opts.statementTimeout()}
	req := catalog.Request{Query: main.req.query, Params: main.req.params, Generic: main.req.mode == ModeGeneric}
	for i, c := range causes {
		if c.Kind != CauseIndexMissing && c.Kind != CauseIndexInvalid || !strings.HasPrefix(c.Control, "CREATE ") {
			continue
		}
		// hypopg names the index itself; CONCURRENTLY means nothing
		// to it.
		ddl := strings.Replace(c.Control, " CONCURRENTLY", "", 1)
		if h, err := ex.Hypothetical(ctx, req, ddl); err == nil && h.Used {
			causes[i].Verified = true
		}
	}
	return causes
}

// bitmapRelation is the relation of the Bitmap Heap Scan above a Bitmap
// Index Scan.
func bitmapRelation(p *plan.Plan, ix *plan.Node) string {
	rel := ""
	p.Root.Walk(func(n *plan.Node) bool {
		if n.Type == "Bitmap Heap Scan" {
			n.Walk(func(c *plan.Node) bool {
				if c == ix {
					rel = n.Relation
				}
				return rel == ""
			})
		}
		return rel == ""
	})
	return rel
}

func sameShapeIndex(r *Relation, ix *Index) string {
	for i := range r.Indexes {
		if r.Indexes[i].Shape() == ix.Shape() && r.Indexes[i].Valid {
			return r.Indexes[i].Name
		}
	}
	return ""
}

func defOf(ix *Index) string {
	if ix == nil {
		return ""
	}
	return ix.Def
}

func relation(s *Snapshot, name string) *Relation {
	if s == nil {
		return nil
	}
	return s.Relations[name]
}

// statisticsCauses compares the statistics of the plans' relations:
// stale statistics when the plan changed, extended statistics on one side
// only when it changed or the plans are generic (ext).
func statisticsCauses(rels []string, cs, cd *Snapshot, changed, ext bool) []Cause {
	var out []Cause
	seen := map[string]bool{}
	for _, name := range rels {
		if seen[name] {
			continue
		}
		seen[name] = true
		a, b := relation(cs, name), relation(cd, name)
		if b == nil {
			continue
		}
		switch {
		case b.NeverAnalyzed() && (a == nil || !a.NeverAnalyzed()):
			out = append(out, Cause{Kind: CauseNeverAnalyzed, Side: Candidate, Relation: name, Control: tuples(a), Candidate: tuples(b)})
			continue
		case a != nil && a.NeverAnalyzed() && !b.NeverAnalyzed():
			out = append(out, Cause{Kind: CauseNeverAnalyzed, Side: Control, Relation: name, Control: tuples(a), Candidate: tuples(b)})
			continue
		}
		if a == nil {
			continue
		}
		if changed {
			for _, side := range []Side{Candidate, Control} {
				r, o := b, a
				if side == Control {
					r, o = a, b
				}
				if stale(r) && !stale(o) {
					out = append(out, Cause{Kind: CauseStaleStatistics, Side: side, Relation: name,
						Control: itoa(a.ModSinceAnalyze), Candidate: itoa(b.ModSinceAnalyze)})
				}
			}
		}
		if a.Tuples > 0 && b.Tuples > 0 && (b.Tuples > 1.5*a.Tuples || a.Tuples > 1.5*b.Tuples) {
			out = append(out, Cause{Kind: CauseRowsDiffer, Relation: name, Control: tuples(a), Candidate: tuples(b)})
		}
		if ext {
			out = append(out, extStatCauses(name, a, b)...)
		}
	}
	return out
}

// extStatCauses are the extended statistics objects of relation name
// built on one side (a: the control's, b: the candidate's) and not on
// the other.
func extStatCauses(name string, a, b *Relation) []Cause {
	var out []Cause
	// The side that lacks them, the side that built them, the other.
	for _, s := range []struct {
		lacks        Side
		built, other *Relation
	}{{Candidate, a, b}, {Control, b, a}} {
		for _, es := range s.built.ExtStats {
			if es.Built && !builtExt(s.other, es.Name) {
				c := Cause{Kind: CauseExtendedStatistics, Side: s.lacks, Relation: name, Setting: es.Name, Statistics: &es}
				builtDef, otherDef := &c.Control, &c.Candidate
				if s.lacks == Control {
					builtDef, otherDef = &c.Candidate, &c.Control
				}
				*builtDef = es.Def
				if mine := s.other.ExtStat(es.Name); mine != nil {
					*otherDef = mine.Def
				}
				out = append(out, c)
			}
		}
	}
	return out
}

// targetCauses are the columns named by query, of the plans' relations,
// whose statistics targets differ between the sides.
func targetCauses(query string, rels []string, cs, cd *Snapshot) []Cause {
	var out []Cause
	words := identifiers(query)
	seen := map[string]bool{}
	for _, name := range rels {
		a, b := relation(cs, name), relation(cd, name)
		if seen[name] || a == nil || b == nil {
			continue
		}
		seen[name] = true
		cols := slices.Concat(slices.Collect(maps.Keys(a.StatisticsTargets)), slices.Collect(maps.Keys(b.StatisticsTargets)))
		slices.Sort(cols)
		for _, col := range slices.Compact(cols) {
			ta, tb := a.StatisticsTarget(col), b.StatisticsTarget(col)
			if ta == tb || !words[col] {
				continue
			}
			out = append(out, Cause{Kind: CauseStatisticsTarget, Relation: name, Columns: []string{col},
				Control: TargetText(ta), Candidate: TargetText(tb), Target: &StatisticsTarget{Column: col, Control: ta, Candidate: tb}})
		}
	}
	return out
}

// TargetText is a statistics target as text: "default" for
// DefaultTarget.
func TargetText(n int) string {
	if n == DefaultTarget {
		return "default"
	}
	return strconv.Itoa(n)
}

// identifiers are the words of sql that may name a column, folded to
// lower case as PostgreSQL folds unquoted names, quoted ones as written.
func identifiers(sql string) map[string]bool {
	out := map[string]bool{}
	word := func(r rune) bool {
		return r == '_' || r == '$' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r > 127
	}
	for i, part := range strings.Split(sql, `"`) {
		if i%2 == 1 { // between quotes
			out[part] = true
		}
	}
	for _, w := range strings.FieldsFunc(sql, func(r rune) bool { return !word(r) }) {
		out[strings.ToLower(w)] = true
	}
	return out
}

// stale: more than a fifth of the rows (and more than 1,000) changed
// since the last analyze, which autovacuum's default
// (autovacuum_analyze_scale_factor 0.1) should not have let happen.
func stale(r *Relation) bool {
	return r.ModSinceAnalyze > 1000 && float64(r.ModSinceAnalyze) > 0.2*max(r.Tuples, 1)
}

func builtExt(r *Relation, name string) bool {
	for _, es := range r.ExtStats {
		if es.Name == name && es.Built {
			return true
		}
	}
	return false
}

func tuples(r *Relation) string {
	if r == nil {
		return ""
	}
	return ftoa(r.Tuples)
}

// settingCauses verifies which differing planner settings explain a
// changed plan: the candidate plans the statement again with the
// control's value of each (then of all together), in a transaction of
// its own. A setting that gives back the control's plan is Verified; one
// that does not is not a cause and is left out. Without a connection to
// the candidate, or with NoVerify, every differing planner setting is
// listed, unverified.
func (r *runner) settingCauses(ctx context.Context, main *Explained, ctl, cand *session) []Cause {
	control, cd := ctl.snap, cand.snap
	var diffs []string
	for _, name := range settingDiffs(control, cd) {
		if plannerSetting(name) {
			diffs = append(diffs, name)
		}
	}
	if len(diffs) == 0 {
		return nil
	}
	mk := func(name string) Cause {
		return Cause{Kind: CauseSetting, Setting: name, Control: control.Settings[name].Value, Candidate: cd.Settings[name].Value}
	}
	var causes []Cause
	if r.opts.NoVerify {
		for _, name := range diffs {
			causes = append(causes, mk(name))
		}
		return causes
	}
	want := main.Control.Plan.Hash()
	replan := func(set map[string]string) (same, tried bool) {
		req := main.req
		req.analyze, req.set = false, set
		p, err := cand.explain(ctx, req)
		if err != nil {
			return false, false
		}
		return p.Hash() == want, true
	}
	var settable []string
	for _, name := range diffs {
		same, tried := replan(map[string]string{name: control.Settings[name].Value})
		if !tried {
			continue
		}
		settable = append(settable, name)
		if same {
			c := mk(name)
			c.Verified = true
			causes = append(causes, c)
		}
	}
	if len(causes) == 0 && len(settable) > 1 {
		set := map[string]string{}
		for _, name := range settable {
			set[name] = control.Settings[name].Value
		}
		if same, _ := replan(set); same {
			for _, name := range settable {
				c := mk(name)
				c.Verified, c.Together = true, true
				causes = append(causes, c)
			}
		}
	}
	// Settings that cannot be set per transaction stay as suspects.
	for _, name := range diffs {
		if !slices.Contains(settable, name) {
			causes = append(causes, mk(name))
		}
	}
	return causes
}

// verifySpill checks the settings blamed for a spill: the candidate runs
// the statement again (analyzed, as it was) with the control's values of
// work_mem and hash_mem_multiplier, in a transaction of its own; when
// nothing goes to disk then, they are Verified.
func (r *runner) verifySpill(ctx context.Context, main *Explained, cand *session, causes []Cause) []Cause {
	set := map[string]string{}
	for _, c := range causes {
		if c.Evidence == "spill" {
			set[c.Setting] = c.Control
		}
	}
	if len(set) == 0 || r.opts.NoVerify || !main.Candidate.Plan.Analyzed {
		return causes
	}
	req := main.req
	req.analyze, req.set = true, set
	p, err := cand.explain(ctx, req)
	if err != nil {
		return causes
	}
	for _, n := range p.Nodes() {
		if n.Spilled() || n.Buffers != nil && n.Buffers.TempWritten > 0 {
			return causes
		}
	}
	for i := range causes {
		if causes[i].Evidence == "spill" {
			causes[i].Verified = true
			causes[i].Together = len(set) > 1
		}
	}
	return causes
}

// slowdownSettings are the differing settings that the figures of a same
// plan tie to its slowdown: shared_buffers when shared reads grew,
// work_mem and hash_mem_multiplier when something spilled or temporary
// blocks grew, the JIT settings when JIT time is there.
func slowdownSettings(main *Explained, cs, cd *Snapshot) []Cause {
	var reads, spill bool
	for _, g := range main.Growths {
		reads = reads || g.ReadsAdded() > 0
		spill = spill || g.TempAdded() > 0 || g.After.Spilled && !g.Before.Spilled
	}
	jit := main.Candidate.Plan.JIT != nil && (main.Control.Plan.JIT == nil || main.Candidate.Plan.JIT.TotalMS > main.Control.Plan.JIT.TotalMS)
	var out []Cause
	for _, name := range settingDiffs(cs, cd) {
		ev := ""
		switch {
		case reads && (name == "shared_buffers" || name == "effective_io_concurrency"):
			ev = "reads"
		case spill && (name == "work_mem" || name == "hash_mem_multiplier"):
			ev = "spill"
		case jit && strings.HasPrefix(name, "jit"):
			ev = "jit"
		default:
			continue
		}
		out = append(out, Cause{Kind: CauseSetting, Setting: name, Control: cs.Settings[name].Value, Candidate: cd.Settings[name].Value, Evidence: ev})
	}
	return out
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func ftoa(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// walSettings are the settings that, turned on, make the same statements
// write more WAL: data checksums and wal_log_hints WAL-log the first hint
// bit set on a page after a checkpoint (a whole page, and reads set hint
// bits), full_page_writes the first change of a page after one.
var walSettings = []string{"data_checksums", "wal_log_hints", "full_page_writes"}

// workSettings are the differing settings that change the work the
// comparison found the candidate does more of per call (more), in the
// direction that adds it: a WAL setting off on the control and on on the
// candidate for more WAL, a smaller shared_buffers for more blocks
// dirtied (a block written out to make room is dirtied again). They are
// causes whatever the plans, which cannot show that work: the comparison
// counted it. A setting already among have, with the plans' evidence,
// is left there.
func workSettings(more []Work, cs, cd *Snapshot, have []Cause) []Cause {
	var out []Cause
	for _, name := range settingDiffs(cs, cd) {
		a, b := cs.Settings[name], cd.Settings[name]
		ev := ""
		switch {
		case slices.Contains(more, WorkWAL) && slices.Contains(walSettings, name) && a.Raw == "off" && b.Raw == "on":
			ev = EvidenceWAL
		case slices.Contains(more, WorkDirtied) && name == "shared_buffers" && smaller(b, a):
			ev = EvidenceDirtied
		default:
			continue
		}
		if slices.ContainsFunc(have, func(c Cause) bool { return c.Kind == CauseSetting && c.Setting == name }) {
			continue
		}
		out = append(out, Cause{Kind: CauseSetting, Setting: name, Control: a.Value, Candidate: b.Value, Evidence: ev})
	}
	return out
}

// smaller reports whether setting a is a smaller number than b in the
// same unit.
func smaller(a, b Setting) bool {
	x, errA := strconv.ParseInt(a.Raw, 10, 64)
	y, errB := strconv.ParseInt(b.Raw, 10, 64)
	return errA == nil && errB == nil && a.Unit == b.Unit && x < y
}
