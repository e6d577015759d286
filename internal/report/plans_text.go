package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/explain"
	"github.com/pgrehearse/pgrehearse/internal/numfmt"
	"github.com/pgrehearse/pgrehearse/internal/plan"
	"github.com/pgrehearse/pgrehearse/internal/redact"
)

// PlanHints say, in the caller's words, how to get what the plans lack.
type PlanHints struct {
	// KeepSamples keeps parameter values for custom plans
	// ("--keep-samples").
	KeepSamples string
	// Connections gives the two servers ("--control-dsn and
	// --candidate-dsn").
	Connections string
}

// PlanLines are how one statement's plans are said: the verdict with the
// first change or the growth, and the cause.
type planWords struct {
	verdict string // "plan changed", "same plan, slower", "same plan, more work", "same plan", "not explained"
	what    string // "Index Scan (customers_email_idx) -> Seq Scan (customers)"
	cause   string // "index missing on candidate"
}

// PlanLine is one statement's plans in one line: "plan changed: Index
// Scan (customers_email_idx) -> Seq Scan (customers); cause: index missing
// on candidate". status is the comparison's status of the statement: a
// latency regression turns "same plan" into "same plan, slower", a work
// regression (compare.StatusMoreWork) into "same plan, more work", and
// either names the cause.
func PlanLine(o *explain.Outcome, status compare.Status) string {
	w := planWordsOf(o, status)
	s := w.verdict
	if w.what != "" {
		s += ": " + w.what
	}
	if w.cause != "" {
		s += "; cause: " + w.cause
	}
	if o.Generic && o.Verdict != explain.NotCompared {
		s += " (generic plans)"
	}
	if m := o.Main(); m != nil && m.Sample == explain.SampleExample {
		s += " (an execution from the log: its normalized text cannot be planned)"
	}
	return s
}

// flagged reports whether the comparison found a statement of status
// slower or doing more work: what its causes are named for.
func flagged(status compare.Status) bool {
	return status.Regression() || status == compare.StatusMoreWork
}

func planWordsOf(o *explain.Outcome, status compare.Status) planWords {
	m := o.Main()
	slower := flagged(status)
	switch o.Verdict {
	case explain.PlanChanged:
		w := planWords{verdict: "plan changed", what: changeShort(m)}
		if len(o.Causes) == 0 {
			w.cause = noneFound(o)
		} else {
			w.cause = causeShort(o.Causes[0])
			if n := len(o.Causes) - 1; n > 0 {
				w.cause += fmt.Sprintf(" (+%d more)", n)
			}
		}
		return w
	case explain.SamePlan:
		w := planWords{verdict: "same plan"}
		switch {
		case status == compare.StatusMoreWork:
			w.verdict = "same plan, more work"
		case slower:
			w.verdict = "same plan, slower"
		}
		if g := topGrowth(m); g != nil {
			w.what = growthShort(m, g)
			if !slower && status != compare.StatusMoreWork {
				// Issue 57: one EXPLAIN ANALYZE a side is not the
				// comparison's rounds; a node's time that grew in a
				// query the comparison does not call slower is
				// context, never a finding.
				w.what += "; " + growthContext(status)
			}
		}
		// A cause is named only for a slowdown or more work: a same
		// plan that does neither needs none.
		switch {
		case slower && len(o.Causes) > 0:
			w.cause = causeShort(o.Causes[0])
		case slower:
			w.cause = noneFound(o)
		}
		return w
	}
	w := planWords{verdict: "not explained"}
	var why []string
	// A reason of the statement itself (a utility statement) is the
	// same on both sides: said once.
	if len(o.Problems) == 2 && o.Problems[0].Kind == o.Problems[1].Kind && o.Problems[0].Message == o.Problems[1].Message &&
		o.Problems[0].Relation == o.Problems[1].Relation {
		w.what = ProblemText(o.Problems[0])
		return w
	}
	for _, p := range o.Problems {
		why = append(why, string(p.Side)+": "+ProblemText(p))
	}
	w.what = strings.Join(why, "; ")
	return w
}

// growthContext says that a node's growth in the plans of a query the
// comparison does not call slower (status) is not a regression: the
// plans are one execution a side, the query's time is the rounds'.
func growthContext(status compare.Status) string {
	if status == compare.StatusUnchanged {
		return "context, not a regression: the query's time did not change beyond noise"
	}
	return "context, not a regression: the comparison does not call the query slower"
}

// noneFound says that no cause was found, and where it was not looked
// for: a side whose statistics could not be read.
func noneFound(o *explain.Outcome) string {
	if len(o.Unchecked) == 0 {
		return "none found in settings, indexes or statistics"
	}
	var why []string
	for _, p := range o.Unchecked {
		msg := redact.Message(p.Message)
		if p.Kind == explain.ProblemTimeout {
			msg = "the read ran out of time (statement_timeout or lock_timeout): " + msg
		}
		why = append(why, string(p.Side)+": "+msg)
	}
	return "none found in settings or indexes; statistics not checked (" + strings.Join(why, "; ") + ")"
}

// nodeShort names a node briefly: "Seq Scan (customers)", "Index Scan
// (customers_email_idx)", "Hash Join (orders, customers)".
func nodeShort(n *plan.Node) string {
	if n == nil {
		return "nothing"
	}
	switch {
	case n.Index != "":
		return n.Name() + " (" + n.Index + ")"
	case n.Relation != "":
		return n.Name() + " (" + n.Relation + ")"
	case n.CTE != "":
		return n.Name() + " (" + n.CTE + ")"
	}
	return n.Name()
}

// changeShort is the first change of m in brief.
func changeShort(m *explain.Explained) string {
	if m == nil || m.Diff == nil {
		return ""
	}
	c, a, b, ok := m.Diff.First(m.Control.Plan, m.Candidate.Plan)
	if !ok {
		return ""
	}
	switch c.Kind {
	case plan.Added:
		return "added " + nodeShort(b)
	case plan.Removed:
		return "no more " + nodeShort(a)
	case plan.JoinOrder:
		return "join order of " + nodeShort(a) + " changed"
	}
	return nodeShort(a) + " -> " + nodeShort(b)
}

// ChangeLong is the first change of m in full, with the estimated rows
// on both sides and what the candidate's node filters: "Index Scan using
// customers_email_idx on customers (est. 1 row) -> Seq Scan on customers
// (est. 1 row; Filter: (email = $1); rows removed by filter 49,999)".
func ChangeLong(m *explain.Explained) string {
	if m == nil || m.Diff == nil {
		return ""
	}
	c, a, b, ok := m.Diff.First(m.Control.Plan, m.Candidate.Plan)
	if !ok {
		return ""
	}
	side := func(n *plan.Node) string {
		if n == nil {
			return "nothing"
		}
		var det []string
		det = append(det, "est. "+rowsText(n.PlanRows))
		if n.Filter != "" {
			det = append(det, "Filter: "+n.Filter)
		}
		if n.Actual != nil && n.Actual.RemovedByFilter > 0 {
			det = append(det, "rows removed by filter "+numfmt.Figure(n.Actual.RemovedByFilter))
		}
		if n.Actual != nil && !n.Actual.NeverExecuted {
			det = append(det, "actual "+rowsText(n.Actual.Rows*n.Actual.Loops))
		}
		return n.Label() + " (" + strings.Join(det, "; ") + ")"
	}
	if c.Kind == plan.JoinOrder {
		return "join order changed at " + side(a) + " -> " + side(b)
	}
	return side(a) + " -> " + side(b)
}

func rowsText(r float64) string {
	if r == 1 {
		return "1 row"
	}
	return numfmt.Figure(r) + " rows"
}

// topGrowth is the growth worth naming first: the node whose own time
// grew most, else whose reads or temporary blocks did.
func topGrowth(m *explain.Explained) *plan.Growth {
	if m == nil || len(m.Growths) == 0 {
		return nil
	}
	if g := &m.Growths[0]; g.TimeAdded() >= minGrowthMS {
		return g // the growths come most time added first
	}
	best := &m.Growths[0]
	for i := range m.Growths {
		g := &m.Growths[i]
		if g.TempAdded() > best.TempAdded() || g.TempAdded() == best.TempAdded() && g.ReadsAdded() > best.ReadsAdded() {
			best = g
		}
	}
	return best
}

// minGrowthMS is the least own time a node must add for its time to be
// named.
const minGrowthMS = 0.5

// growthShort says where a same plan did more: "Seq Scan (orders) 15 ->
// 18 ms, shared read 0 -> 1,471 blocks".
func growthShort(m *explain.Explained, g *plan.Growth) string {
	n := m.Candidate.Plan.Nodes()[g.Candidate]
	s := nodeShort(n)
	var parts []string
	if m.Control.Plan.Timing && m.Candidate.Plan.Timing && g.TimeAdded() >= minGrowthMS {
		parts = append(parts, "own time "+msText(g.Before.SelfMS)+" -> "+msText(g.After.SelfMS))
	}
	if g.ReadsAdded() > 0 {
		parts = append(parts, "shared read "+blockCount(g.Before.SharedRead)+" -> "+blockCount(g.After.SharedRead)+" blocks")
	}
	if g.TempAdded() > 0 {
		parts = append(parts, "temp blocks "+blockCount(g.Before.TempRead+g.Before.TempWritten)+" -> "+blockCount(g.After.TempRead+g.After.TempWritten))
	}
	if g.After.Spilled && !g.Before.Spilled {
		parts = append(parts, spillText(n))
	}
	if len(parts) > 0 {
		s += " " + strings.Join(parts, ", ")
	}
	return s
}

// spillText says how a node went to disk: "Sort Method external merge,
// Disk 4,392kB".
func spillText(n *plan.Node) string {
	switch {
	case n.Sort.Disk():
		return "Sort Method " + n.Sort.Method + ", Disk " + numfmt.Thousands(i64(n.Sort.SpaceKB)) + "kB"
	case n.Hash.Disk():
		return "hash in " + i64(n.Hash.Batches) + " batches (originally " + i64(n.Hash.OriginalBatches) + ")"
	case n.HashAgg.Disk():
		return "aggregate in " + i64(n.HashAgg.Batches) + " batches, Disk " + numfmt.Thousands(i64(n.HashAgg.DiskKB)) + "kB"
	}
	return "spilled to disk"
}

func blockCount(n int64) string { return numfmt.Thousands(i64(n)) }

func i64(n int64) string { return fmt.Sprintf("%d", n) }

// causeShort names a cause in a few words: "index missing on candidate",
// "random_page_cost 1.1 -> 4".
func causeShort(c explain.Cause) string {
	switch c.Kind {
	case explain.CauseIndexMissing:
		return "index missing on " + string(c.Side)
	case explain.CauseIndexInvalid:
		return "index " + c.Index + " invalid on " + string(c.Side)
	case explain.CauseIndexDiffers:
		return "index " + c.Index + " defined differently"
	case explain.CauseIndexNew:
		return "index " + c.Index + " only on candidate"
	case explain.CauseNeverAnalyzed:
		return c.Relation + " never analyzed on " + string(c.Side)
	case explain.CauseStaleStatistics:
		return "stale statistics of " + c.Relation + " on " + string(c.Side)
	case explain.CauseRowsDiffer:
		return c.Relation + " rows " + tuplesText(c.Control) + " -> " + tuplesText(c.Candidate)
	case explain.CauseExtendedStatistics:
		return "extended statistics " + c.Setting + " only on " + string(otherSide(c.Side))
	case explain.CauseStatisticsTarget:
		return "statistics target of " + c.Relation + "." + strings.Join(c.Columns, ", ") + " " + c.Control + " -> " + c.Candidate
	case explain.CauseVersion:
		return "version " + c.Control + " -> " + c.Candidate
	case explain.CauseSetting:
		return c.Setting + " " + c.Control + " -> " + c.Candidate
	case explain.CauseIndexStopsHOT:
		return "index " + c.Index + " stops HOT updates"
	}
	return string(c.Kind)
}

// genericSame says, of statistics named as a cause behind the same
// generic plans (explain names them for a slowdown then), why the plans
// do not show them.
func genericSame(m *explain.Explained) string {
	if m == nil || m.Diff == nil || !m.Diff.Same || m.Candidate == nil || m.Candidate.Mode != explain.ModeGeneric {
		return ""
	}
	return "; the generic plans, made without the statement's values, cannot show an estimate of a value: the values' plans may differ"
}

func otherSide(s explain.Side) explain.Side {
	if s == explain.Control {
		return explain.Candidate
	}
	return explain.Control
}

func tuplesText(s string) string {
	var f float64
	if _, err := fmt.Sscan(s, &f); err != nil {
		return s
	}
	if f < 0 {
		return "-1 (never analyzed)"
	}
	return numfmt.Figure(float64(int64(f)))
}

// CauseText is a cause in a sentence: "index customers_email_idx does
// not exist on the candidate", "customers has never been analyzed on the
// candidate (reltuples -1)", "random_page_cost 1.1 -> 4 (verified: with
// 1.1 the candidate plans as the control does)".
func CauseText(c explain.Cause, m *explain.Explained) string {
	switch c.Kind {
	case explain.CauseIndexMissing:
		s := "index " + c.Index + " on " + c.Relation + " does not exist on the " + string(c.Side)
		if c.Control != "" {
			s += " (" + c.Control + ")"
		}
		if c.Verified {
			s += "; verified with hypopg: created hypothetically, the candidate's plan uses it"
		}
		return s
	case explain.CauseIndexInvalid:
		return "index " + c.Index + " is invalid on the " + string(c.Side) + " (a failed CREATE INDEX CONCURRENTLY?): the planner ignores it"
	case explain.CauseIndexDiffers:
		return "index " + c.Index + " is defined differently: " + c.Control + " on the control, " + c.Candidate + " on the candidate"
	case explain.CauseIndexNew:
		return "the candidate's plan uses index " + c.Index + " on " + c.Relation + ", which the control does not have"
	case explain.CauseNeverAnalyzed:
		v := c.Candidate
		if c.Side == explain.Control {
			v = c.Control
		}
		detail := "no column statistics"
		if strings.HasPrefix(v, "-") {
			detail = "reltuples -1"
		}
		return c.Relation + " has never been analyzed on the " + string(c.Side) + " (" + detail + "): the planner guesses its selectivities; run ANALYZE " + c.Relation
	case explain.CauseStaleStatistics:
		return c.Relation + " has many rows modified since its last analyze on the " + string(c.Side) +
			" (" + numfmt.Thousands(c.Control) + " on the control, " + numfmt.Thousands(c.Candidate) + " on the candidate)"
	case explain.CauseRowsDiffer:
		return c.Relation + " holds " + tuplesText(c.Control) + " rows on the control and " + tuplesText(c.Candidate) + " on the candidate"
	case explain.CauseExtendedStatistics:
		s := "extended statistics " + c.Setting + " on " + c.Relation + " exist only on the " + string(otherSide(c.Side))
		if c.Statistics != nil && c.Statistics.Def != "" {
			s += " (" + c.Statistics.Def + ")"
		}
		return s + genericSame(m)
	case explain.CauseStatisticsTarget:
		return "the statistics target of " + c.Relation + "." + strings.Join(c.Columns, ", ") + " is " + c.Control + " on the control and " +
			c.Candidate + " on the candidate: the planner's estimates of the column differ with it" + genericSame(m)
	case explain.CauseVersion:
		if m != nil && m.Diff.Same {
			return "PostgreSQL " + c.Control + " on the control, " + c.Candidate + " on the candidate: the same plan runs on another version's executor and storage"
		}
		return "PostgreSQL " + c.Control + " on the control, " + c.Candidate + " on the candidate: the planner differs"
	case explain.CauseSetting:
		s := c.Setting + " " + c.Control + " -> " + c.Candidate
		switch {
		case c.Evidence == "spill" && c.Verified:
			s += ": " + spillEvidence(m) + " (verified: with " + c.Control + " nothing goes to disk)"
		case c.Evidence == "spill":
			s += ": " + spillEvidence(m)
		case c.Evidence == "reads":
			s += ": " + readsEvidence(m)
		case c.Evidence == "jit":
			s += ": JIT time on the candidate"
		case c.Evidence == explain.EvidenceWAL:
			s += ": " + walEvidence(c.Setting)
		case c.Evidence == explain.EvidenceDirtied:
			s += ": the candidate dirties more blocks per call, and with fewer buffers a block written out to make room is dirtied again"
		case c.Verified && c.Together:
			s += " (verified with the other settings marked so: with the control's values together the candidate plans as the control does)"
		case c.Verified:
			s += ": " + changeShort(m) + " (verified: with " + c.Control + " the candidate plans as the control does)"
		default:
			s += " (not verified: it cannot be changed for one transaction)"
		}
		return s
	case explain.CauseIndexStopsHOT:
		return hotText(c)
	}
	return string(c.Kind)
}

// hotText is an index that stops HOT updates in a sentence: "index
// pgbench_accounts_abalance_idx (candidate only) on pgbench_accounts
// (abalance) covers abalance, which this statement sets: its updates that
// change it cannot be HOT on the candidate; HOT updates of
// pgbench_accounts 94% -> 0% (table statistics when the plans were
// explained: 1,548 and 1,548 rows updated)". Counters that show no drop
// are said so, and why they may not.
func hotText(c explain.Cause) string {
	where := "candidate only"
	if c.Control != "" {
		where = "defined as " + indexKeys(c.Control) + " on the control"
	}
	it := "it"
	if len(c.Columns) > 1 {
		it = "them"
	}
	s := "index " + c.Index + " (" + where + ") on " + c.Relation + " " + indexKeys(c.Candidate) + " covers " + andList(c.Columns) +
		", which this statement sets: its updates that change " + it + " cannot be HOT on the candidate"
	h := c.HOT
	if h == nil || h.ControlUpdates <= 0 || h.CandidateUpdates <= 0 {
		return s
	}
	shares := share(h.ControlHOT, h.ControlUpdates) + " -> " + share(h.CandidateHOT, h.CandidateUpdates)
	counted := numfmt.Thousands(i64(h.ControlUpdates)) + " and " + numfmt.Thousands(i64(h.CandidateUpdates)) + " rows updated"
	if float64(h.CandidateHOT)/float64(h.CandidateUpdates) < float64(h.ControlHOT)/float64(h.ControlUpdates) {
		return s + "; HOT updates of " + c.Relation + " " + shares + " (table statistics when the plans were explained: " + counted + ")"
	}
	return s + "; the table statistics show no drop in HOT updates of " + c.Relation + " (" + shares + ", " + counted +
		"), but they count every statement's updates since they were last reset, which may be before the index was made"
}

// indexKeys is what an index definition (pg_get_indexdef) indexes:
// "(abalance)", "(sku) WHERE (qty > 0)", "(lower(email))"; the definition
// itself when it has no USING.
func indexKeys(def string) string {
	_, rest, ok := strings.Cut(def, " USING ")
	if !ok {
		return def
	}
	if _, keys, ok := strings.Cut(rest, " "); ok {
		return keys
	}
	return rest
}

// share is part of whole in percent, never rounded to 0% or 100% when
// it is not.
func share(part, whole int64) string {
	switch {
	case part <= 0:
		return "0%"
	case part >= whole:
		return "100%"
	}
	p := 100 * float64(part) / float64(whole)
	switch {
	case p < 1:
		return "<1%"
	case p > 99:
		return ">99%"
	}
	return fmt.Sprintf("%.0f%%", p)
}

// andList is "a", "a and b", "a, b and c".
func andList(xs []string) string {
	if len(xs) < 2 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}

func spillEvidence(m *explain.Explained) string {
	for _, g := range m.Growths {
		if g.TempAdded() > 0 || g.After.Spilled && !g.Before.Spilled {
			n := m.Candidate.Plan.Nodes()[g.Candidate]
			return "the " + n.Name() + " went to disk (" + spillText(n) + "; temp blocks " +
				blockCount(g.Before.TempRead+g.Before.TempWritten) + " -> " + blockCount(g.After.TempRead+g.After.TempWritten) + ")"
		}
	}
	return "temporary blocks grew"
}

// walEvidence says why a WAL setting turned on adds WAL per call.
func walEvidence(setting string) string {
	const more = "the candidate writes more WAL per call"
	switch setting {
	case "data_checksums":
		return more + ": with data checksums, the first hint bit set on a page after a checkpoint, by a read too, writes the whole page to WAL (pg_upgrade keeps the old cluster's setting: initdb the new one alike)"
	case "wal_log_hints":
		return more + ": with wal_log_hints, the first hint bit set on a page after a checkpoint, by a read too, writes the whole page to WAL"
	case "full_page_writes":
		return more + ": with full_page_writes, the first change of a page after a checkpoint writes the whole page to WAL"
	}
	return more
}

func readsEvidence(m *explain.Explained) string {
	var before, after int64
	for _, g := range m.Growths {
		before += g.Before.SharedRead
		after += g.After.SharedRead
	}
	return "blocks read from outside shared_buffers " + blockCount(before) + " -> " + blockCount(after)
}

// ProblemText says why a statement was not explained on a side.
func ProblemText(p explain.Problem) string {
	switch p.Kind {
	case explain.ProblemNoConnection:
		return "no connection to the server and no plan in its log"
	case explain.ProblemUtility:
		return "DDL or a utility statement, which EXPLAIN cannot plan"
	case explain.ProblemSeveral:
		return "several statements in one query string"
	case explain.ProblemUnparsable:
		return "the statement does not parse"
	case explain.ProblemRelationMissing:
		return "relation " + p.Relation + " does not exist there (a temporary table of a session that is gone, or a schema difference)"
	case explain.ProblemNoParams:
		return "no parameter values known, and the generic plan cannot be made: " + p.Message
	case explain.ProblemNoSample:
		return "no sample: no execution of it was kept or found in the logs, and its normalized text does not plan: " + p.Message
	case explain.ProblemTimeout:
		return "EXPLAIN ran out of time (statement_timeout or lock_timeout): " + p.Message
	case explain.ProblemConnect:
		return "cannot connect: " + p.Message
	}
	return redact.Message(p.Message)
}

// VersionsNote says, once for all the plans, which major versions the
// control and the candidate run when they differ, and that what only one
// version's EXPLAIN prints is no plan change; it is empty when they run
// the same major version.
func VersionsNote(rep *explain.Report) string {
	var ctl, cand *explain.Snapshot
	for db, c := range rep.Control {
		if d := rep.Candidate[db]; c != nil && d != nil {
			ctl, cand = c, d
			break
		}
	}
	if ctl == nil || ctl.Version/10000 == cand.Version/10000 {
		return ""
	}
	return "The control runs PostgreSQL " + ctl.VersionText + ", the candidate PostgreSQL " + cand.VersionText +
		": plans are compared by their nodes, relations, indexes and conditions, not by what only one version's EXPLAIN prints" +
		" (from 18: fractional row counts, index searches, buffers without asking)"
}

// WritePlans writes the plans of the statements explained, one line
// each, with the causes and what could not be explained. status holds
// the comparison's status of the fingerprints it found slower or doing
// more work (compareplans.Flagged).
func WritePlans(w io.Writer, rep *explain.Report, status map[string]compare.Status, h PlanHints) error {
	ew := &errWriter{w: w}
	if rep == nil || len(rep.Outcomes) == 0 {
		return nil
	}
	ew.printf("\nPlans on the control and the candidate\n")
	if v := VersionsNote(rep); v != "" {
		ew.printf("  %s.\n", v)
	}
	generic := false
	for i := range rep.Outcomes {
		o := &rep.Outcomes[i]
		generic = generic || o.Generic
		ew.printf("  %s  %s\n", o.Fingerprint, PlanLine(o, status[o.Fingerprint]))
		m := o.Main()
		if o.Verdict == explain.PlanChanged {
			ew.printf("      %s\n", ChangeLong(m))
		}
		if o.Verdict == explain.SamePlan && !flagged(status[o.Fingerprint]) {
			continue
		}
		for _, c := range o.Causes {
			ew.printf("      cause: %s\n", CauseText(c, m))
		}
	}
	if generic {
		ew.printf("  Generic plans: no parameter values were kept, so the plans are those of unknown values%s.\n", paren(h.KeepSamples))
	}
	return ew.err
}
