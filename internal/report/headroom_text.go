package report

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/pgrehearse/pgrehearse/internal/headroom"
	"github.com/pgrehearse/pgrehearse/internal/judge"
	"github.com/pgrehearse/pgrehearse/internal/texttable"
)

// WriteHeadroom renders a headroom run for a terminal: the answer first
// (how many times the log's load each target holds, with its interval,
// and what broke first), then each side's steps.
func WriteHeadroom(w io.Writer, out *headroom.Outcome) error {
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	p("HEADROOM by %s: SLO %s relative to each target at 1x, lag p99 below %v; %s\n",
		out.By, out.SLO.String(), out.SLO.MaxLag, searchLine(out))
	if out.Partial {
		why := out.Stopped
		if why == "" {
			why = "a search did not finish"
		}
		p("PARTIAL: %s; the answer below rests on the steps finished\n", why)
	}
	p("  %s\n", HeadroomLine(out))
	if line := ThinkLine(out); line != "" {
		p("  %s\n", line)
	}
	for _, so := range out.Sides {
		for _, line := range sideNotes(out, so) {
			p("  %s\n", line)
		}
	}
	for _, to := range out.Tries {
		p("  %s\n", TryLine(to))
	}
	if line := TriesNotRunLine(out); line != "" {
		p("  %s\n", line)
	}
	for _, so := range out.Sides {
		p("\n%s: %d steps\n", so.Side, len(so.Steps))
		p("%s", headroomStepsTable(so, out.SLO))
	}
	for _, to := range out.Tries {
		if to.With == nil || len(to.With.Steps) == 0 || to.NotTried != "" {
			continue
		}
		p("\n%s with %s: %d steps\n", to.Side, to.Name, len(to.With.Steps))
		p("%s", headroomStepsTable(to.With, out.SLO))
	}
	return bw.Flush()
}

// ThinkLine says, of a run by speed over a log whose transactions think
// between their statements, that its steps shortened that think time and
// with it the time their locks were held; "" otherwise.
func ThinkLine(out *headroom.Outcome) string {
	if !out.ThinkShortened() {
		return ""
	}
	t := out.Think
	return fmt.Sprintf("by speed a step at k shortens k times the think time inside the log's transactions: their sessions spent %.0f%% of their %d transactions' time between statements (%s ms a transaction), "+
		"their locks held; where those locks bind, a target holds less than these steps say: --by fold keeps each session's own pace (docs/headroom.md)",
		100*t.Share(), t.Blocks, fmtMS(t.GapMS()))
}

// TryLine is a try's answer beside the search's without it: "try
// orders_idx on the candidate: k held: 1.5x without, 4x with
// orders_idx", or why it was not tried.
func TryLine(to *headroom.TryOutcome) string {
	if to.NotTried != "" {
		return fmt.Sprintf("try %s on the %s: not tried: %s", to.Name, to.Side, oneLine(to.NotTried))
	}
	k := func(a *headroom.Answer) string {
		switch {
		case a == nil:
			return "not measured"
		case a.AtLeast:
			return "at least " + fmtK(a.Lo)
		}
		return fmtK(a.Holds)
	}
	var with *headroom.Answer
	if to.With != nil {
		with = to.With.Answer
	}
	line := fmt.Sprintf("try %s on the %s: k held: %s without, %s with %s", to.Name, to.Side, k(to.Without), k(with), to.Name)
	if to.Partial {
		line += "; partial: its search did not finish, the k with it rests on the steps finished"
	}
	return line
}

// TriesNotRunLine names the tries whose search never began, the run
// stopped before them; "" when every try began.
func TriesNotRunLine(out *headroom.Outcome) string {
	if len(out.TriesNotRun) == 0 {
		return ""
	}
	return "tries not run (the run stopped before them): " + strings.Join(out.TriesNotRun, ", ")
}

// RequireVerdict is headroom --require's verdict.
type RequireVerdict string

const (
	// RequireMet: every side holds the k required.
	RequireMet RequireVerdict = "met"
	// RequireNotMet: a side holds less (its answer, or none).
	RequireNotMet RequireVerdict = "not_met"
	// RequireNotJudged: every side held it, but in steps at that k
	// shorter than headroom.MinStepSeconds, which over-state capacity:
	// the answer cannot carry the requirement.
	RequireNotJudged RequireVerdict = "not_judged"
)

// HeadroomRequire judges headroom --require k: met when every side's
// search holds k at least, in steps at k that lasted
// headroom.MinStepSeconds (a log of that length times k; unknown span:
// not asked). It judges the searches of the targets as they are, never
// a try's (a change the target does not have): the line says so when
// there are tries, with their ks beside.
func HeadroomRequire(out *headroom.Outcome, k float64) (line string, v RequireVerdict) {
	var short, held []string
	for _, so := range out.Sides {
		holds := "no answer"
		if a := so.Answer; a != nil {
			holds = fmtK(a.Holds)
			if a.Holds < k && holds == fmtK(k) {
				// Not "holds 2.0x" beside "NOT met" of 2x.
				holds = fmt.Sprintf("%.2fx", a.Holds)
			}
			if a.AtLeast {
				holds = "at least " + holds
			}
		}
		held = append(held, fmt.Sprintf("the %s holds %s", so.Side, holds))
		if so.Answer == nil || so.Answer.Holds < k {
			short = append(short, string(so.Side))
		}
	}
	tooShort, need := headroom.ShortStep(out.SpanSeconds, k)
	switch {
	case len(short) > 0:
		v, line = RequireNotMet, "NOT met by the "+strings.Join(short, " and the ")
	case k > 1 && tooShort:
		v, line = RequireNotJudged, fmt.Sprintf("NOT JUDGED: its steps at %s lasted %.1f s, too short for the queue near a target's capacity to build, "+
			"so what they held may over-state it; a log of at least %.0f s judges it", fmtK(k), headroom.StepSeconds(out.SpanSeconds, k), need)
	default:
		v, line = RequireMet, "met"
	}
	line = fmt.Sprintf("--require %s: %s (%s)", fmtK(k), line, strings.Join(held, ", "))
	if len(out.Tries)+len(out.TriesNotRun) > 0 {
		line += "; judged on the searches without the tries: a try's k is not judged"
	}
	return line, v
}

func searchLine(out *headroom.Outcome) string {
	s := out.Search
	line := fmt.Sprintf("steps up to %gx, %s at 1x, %s at each end of the interval", s.MaxK,
		plural(s.BaseRounds, "1 round", fmt.Sprintf("%d rounds", s.BaseRounds)), plural(s.BoundaryRounds, "1 round", fmt.Sprintf("%d rounds", s.BoundaryRounds)))
	switch {
	case out.Shards > 1 && out.ShardsRun == "processes":
		line += fmt.Sprintf(", every step in %d shard processes", out.Shards)
	case out.Shards > 1 && out.ShardsRun == "in_process":
		line += fmt.Sprintf(", every step in %d shards inside one process", out.Shards)
	case out.Shards > 1:
		line += fmt.Sprintf(", every step in %d shards", out.Shards)
	}
	return line
}

// curveLine says where a side's throughput peaked and where more load
// stopped paying (its knee), each with the ks within noise of it, as a
// sweep says them of client counts.
func curveLine(so *headroom.SideOutcome) string {
	p, k := so.Peak, so.Knee
	if p == nil || k == nil {
		return ""
	}
	within := func(lo, hi float64) string {
		if lo == hi {
			return ""
		}
		return fmt.Sprintf(" (%s-%s within noise)", fmtKBare(lo), fmtK(hi))
	}
	line := fmt.Sprintf("curve: the %s's throughput was highest at %s asked%s, %.0f statements/s; ", so.Side, fmtK(p.K), within(p.Lo, p.Hi), p.StatementsPerS)
	if k.Found {
		return line + fmt.Sprintf("more load stopped paying (statements/s over latency highest) at %s%s", fmtK(k.K), within(k.Lo, k.Hi))
	}
	return line + fmt.Sprintf("more load still paid up to %s (no knee beyond the noise)", fmtK(k.UpTo))
}

// HeadroomLine is the answer in one sentence: "control holds 3.1x
// (2.8-3.4) the log's load, candidate 2.2x (2.0-2.5)".
func HeadroomLine(out *headroom.Outcome) string {
	var parts []string
	for i, so := range out.Sides {
		phrase := holdsPhrase(so)
		if i == 0 && so.Answer != nil {
			phrase += " the log's load"
		}
		parts = append(parts, string(so.Side)+" "+phrase)
	}
	return strings.Join(parts, ", ")
}

func holdsPhrase(so *headroom.SideOutcome) string {
	a := so.Answer
	switch {
	case a == nil:
		return "not measured (its 1x rounds did not finish)"
	case a.AtLeast:
		return fmt.Sprintf("holds at least %s", fmtK(a.Lo))
	case a.Lo <= 1.0001 && a.Holds <= 1.0001:
		return fmt.Sprintf("holds less than %s", fmtK(a.Hi))
	}
	return fmt.Sprintf("holds %s (%s-%s)", fmtK(a.Holds), fmtKBare(a.Lo), fmtKBare(a.Hi))
}

func fmtK(k float64) string { return fmtKBare(k) + "x" }

func fmtKBare(k float64) string {
	if k >= 10 {
		return fmt.Sprintf("%.0f", k)
	}
	return fmt.Sprintf("%.1f", k)
}

// sideNotes say, per side, what broke first, what bound the search, and
// the model's peak.
func sideNotes(out0 *headroom.Outcome, so *headroom.SideOutcome) []string {
	var out []string
	if fb := so.FirstBreak; fb != nil {
		out = append(out, fmt.Sprintf("first to break on the %s: %s", so.Side, breakText(fb.Break, fb.K)))
	}
	if a := so.Answer; a != nil {
		if a.Mixed {
			out = append(out, fmt.Sprintf("on the %s, rounds at one k disagreed up to %s (some held, some broke): the steps' noise is as large as the SLO's margin; "+
				"a longer log, server-side durations (--control-log) or more --boundary-rounds narrow it", so.Side, fmtK(a.AskedHi)))
		}
		if k := a.UpperK(); so.StepSeconds > 0 && so.StepSeconds < headroom.MinStepSeconds {
			_, need := headroom.ShortStep(out0.SpanSeconds, k)
			out = append(out, fmt.Sprintf("on the %s a step at %s lasted %.1f s (the log's %.0f s at 1x over k): near its capacity a target's queue builds over longer, "+
				"so this answer may over-state what it holds; a log of at least %.0f s makes every step up to %s last %d s (docs/headroom.md)",
				so.Side, fmtK(k), so.StepSeconds, out0.SpanSeconds, need, fmtK(k), headroom.MinStepSeconds))
		}
		switch a.Bound {
		case judge.BoundReplayer:
			more := "run more replayers (--shards) to ask more of it"
			switch {
			case out0.Shards > 1 && out0.ShardsRun == "in_process":
				more = "its shards ran in one process (pgrehearse's binary was not found): run them as processes, on more cores, to ask more of it"
			case out0.Shards > 1:
				more = fmt.Sprintf("its %d shard processes ran on this machine's cores: run the shards on more machines (pgrehearse replay --shard K/N, docs/sharding.md) to ask more of it", out0.Shards)
			}
			out = append(out, fmt.Sprintf("the %s was not the limit: the replayer was (%s); the target held what it was sent: %s", so.Side, so.BoundWhy, more))
		case judge.BoundRoundTrips:
			out = append(out, fmt.Sprintf("on the %s the sessions' own round trips bound the load (%s): "+
				"the same sessions cannot go faster; k times real traffic needs more sessions (--by fold)", so.Side, so.BoundWhy))
		}
	}
	if bl := so.Baseline; bl != nil && out0.SLO.MaxLag > 0 && bl.LagP99MS > float64(out0.SLO.MaxLag.Microseconds())/1000 {
		// A step's lag is judged over 1x's, so a lagging 1x breaks
		// nothing by itself; but every step then rests on a replay
		// that could not keep even today's pace.
		if bl.LagByTarget {
			// The target could not keep today's pace: no advice about
			// the replayer's machine helps.
			out = append(out, fmt.Sprintf("at 1x the %s's replay already fell behind the log's pace, waiting on the target (lag p99 %s ms, above %v): "+
				"the %s is at its capacity with today's load, and its ks are relative to a 1x that was already late", so.Side, fmtMS(bl.LagP99MS), out0.SLO.MaxLag, so.Side))
		} else {
			out = append(out, fmt.Sprintf("at 1x the %s's replay already fell behind the log's pace (lag p99 %s ms, above %v): "+
				"its steps are judged against a 1x that was late, and what they hold is doubtful; run headroom where the replayer keeps 1x on time "+
				"(a quieter machine, more cores, or --shards)", so.Side, fmtMS(bl.LagP99MS), out0.SLO.MaxLag))
		}
	}
	if line := curveLine(so); line != "" {
		out = append(out, line)
	}
	if u := so.USL; u != nil {
		var measured, topK float64
		for _, st := range so.Steps {
			if st.Measurement != nil {
				measured = max(measured, st.Measurement.StatementsPerS)
				topK = max(topK, st.K)
			}
		}
		line := fmt.Sprintf("model (Universal Scalability Law, R² %.2f, %d steps): the %s ", u.R2, u.Points, so.Side)
		switch {
		case u.PeakK > 2*topK:
			// A peak far beyond the steps is the fit's extrapolation.
			line += fmt.Sprintf("shows no peak within twice the largest k tried (its fit peaks at %s, beyond what the steps measured); %.0f statements/s the most measured", fmtK(u.PeakK), measured)
		case u.PeakK > 0:
			line += fmt.Sprintf("peaks at %s (%.0f statements/s predicted, %.0f the most measured)", fmtK(u.PeakK), u.PeakX, measured)
		default:
			line += fmt.Sprintf("shows no peak (contention %.3f, coherency 0: throughput only flattens); %.0f statements/s the most measured", u.Sigma, measured)
		}
		out = append(out, line)
	}
	return out
}

// breakText is a broken rule at load factor k in words: "SELECT ... p95
// +62% (1.20 ms -> 1.90 ms) at 2.4x, its sessions waiting on
// Lock:transactionid".
func breakText(b judge.Break, k float64) string {
	at := " at " + fmtK(k)
	switch b.Metric {
	case judge.SLOMetricErrors:
		return fmt.Sprintf("errors %.2f%% -> %.2f%% (+%.2fpp)%s", b.Base, b.Value, b.Value-b.Base, at)
	case judge.SLOMetricLag:
		s := fmt.Sprintf("the replay fell behind the log's pace%s, lag p99 %s ms (1x: %s ms), waiting on the target", at, fmtMS(b.Value), fmtMS(b.Base))
		if b.Limit > 0 && b.Value <= b.Limit {
			// Broken by the load falling short of the k asked (the
			// achieved k is the one said), its lag within the limit:
			// "lag p99 1618 ms (1x: 1979 ms)" read as a lag that broke.
			s = fmt.Sprintf("the replay fell short of the load asked, %s achieved, waiting on the target (lag p99 %s ms, within its limit of %s ms)", fmtK(k), fmtMS(b.Value), fmtMS(b.Limit))
		}
		if c := b.Cause; c != nil && c.AddedMS > 0 {
			// The culprit, by the time it added over its own 1x (as
			// rehearse ranks regressions); where the sessions waited
			// is evidence beside it.
			s += "; " + culpritText(c)
			if w := b.WaitedMost; w != nil {
				s += fmt.Sprintf("; the sessions waited most on %s", shorten(oneLine(w.Query), 60))
				if len(w.Waits) > 0 {
					s += ", waiting on " + w.Waits[0].Event
				}
			}
		} else if c != nil && c.Value <= c.Base {
			// Where the sessions waited, which was no slower than at
			// 1x: not a cause ("waited most on ..., p95 -55%").
			s += fmt.Sprintf("; no query was slower than at 1x, and the sessions' time went most to %s, %s %s ms -> %s ms", shorten(oneLine(c.Query), 60), c.Metric, fmtMS(c.Base), fmtMS(c.Value))
			if len(c.Waits) > 0 {
				s += ", its sessions waiting on " + c.Waits[0].Event
			}
		} else if c != nil {
			s += fmt.Sprintf("; the sessions waited most on %s, %s %+.0f%% (%s ms -> %s ms)", shorten(oneLine(c.Query), 60), c.Metric, 100*(c.Value/c.Base-1), fmtMS(c.Base), fmtMS(c.Value))
			if len(c.Waits) > 0 {
				s += ", its sessions waiting on " + c.Waits[0].Event
			}
		}
		return s
	case "incomplete":
		return "the replay could not run whole (statements lost, connections refused)" + at
	}
	s := fmt.Sprintf("%s %s %+.0f%% (%s ms -> %s ms)%s", shorten(oneLine(b.Query), 60), b.Metric, 100*(b.Value/b.Base-1), fmtMS(b.Base), fmtMS(b.Value), at)
	if len(b.Waits) > 0 {
		s += ", its sessions waiting on " + b.Waits[0].Event
	}
	if c := b.Cause; c != nil && c.AddedMS > 0 {
		// Another query added more time over its 1x than this one.
		s += "; " + culpritText(c)
	}
	return s
}

// culpritText is the query that added the most time over its 1x, with
// what it added a run: "the most time added over 1x: INSERT ..., mean
// +1600% (0.200 ms -> 3.40 ms), +3.84 s a run".
func culpritText(c *judge.Break) string {
	s := fmt.Sprintf("the most time added over 1x: %s, %s %+.0f%% (%s ms -> %s ms), %s a run", shorten(oneLine(c.Query), 60), c.Metric, 100*(c.Value/c.Base-1), fmtMS(c.Base), fmtMS(c.Value), fmtSignedTotal(c.AddedMS))
	if len(c.Waits) > 0 {
		s += ", its sessions waiting on " + c.Waits[0].Event
	}
	return s
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// headroomStepsTable lists a side's steps: k asked and achieved, throughput,
// errors, lag, the replayer's and the server's CPU (in cores), the
// verdict, the rule nearest to (or past) its limit and the top wait
// event.
func headroomStepsTable(so *headroom.SideOutcome, slo judge.SLO) string {
	rows := [][]string{{"step", "k", "achieved", "stmts/s", "errors", "lag p99", "replayer CPU", "server CPU", "verdict", "worst rule", "top wait"}}
	for _, st := range so.Steps {
		row := []string{fmt.Sprint(st.Seq), fmtKBare(st.K)}
		m := st.Measurement
		if m == nil {
			row = append(row, "-", "-", "-", "-", "-", "-", string(st.Status), firstLine(st.Error), "")
			rows = append(rows, row)
			continue
		}
		achieved, verdict, worst := "1.00", "baseline", ""
		if v := st.Verdict; v != nil {
			achieved = fmt.Sprintf("%.2f", v.AchievedK)
			verdict = "held"
			if !v.Held {
				verdict = "BROKE"
			}
			if v.Bound != judge.BoundTarget {
				verdict += " (" + strings.ReplaceAll(string(v.Bound), "_", " ") + ")"
			}
			worst = worstShort(v, slo)
		}
		wait := ""
		if len(m.Waits) > 0 {
			wait = fmt.Sprintf("%s %.0f%%", m.Waits[0].Event, 100*m.Waits[0].Share)
		}
		server := "-"
		if m.ServerCPUSeconds != nil {
			server = fmt.Sprintf("%.2f", m.ServerCPU)
		}
		row = append(row, achieved, fmt.Sprintf("%.0f", m.StatementsPerS), fmt.Sprintf("%.2f%%", m.ErrorRate),
			fmtMS(m.LagP99MS), fmt.Sprintf("%.2f", m.ReplayerCPU), server, verdict, worst, wait)
		rows = append(rows, row)
	}
	return texttable.Format("  ", rows, 8)
}

// worstShort is ruleShort of a step's first broken rule, or of the rule
// closest to breaking when none broke; "" without either.
func worstShort(v *judge.StepVerdict, slo judge.SLO) string {
	switch {
	case len(v.Broken) > 0:
		return ruleShort(v.Broken[0], slo)
	case v.Closest != nil:
		return ruleShort(*v.Closest, slo)
	}
	return ""
}

// ruleShort is a rule's figure in a table cell: "p95 +12% lookup". A
// latency figure past the SLO's own limit but within the limit the
// query's spread between the 1x rounds raised it to (judge.Step) says
// so: "p95 +55%, within the 1x spread (limit +62%) lookup", so that a
// step that held with it does not read as a contradiction.
func ruleShort(b judge.Break, slo judge.SLO) string {
	switch b.Metric {
	case judge.SLOMetricErrors:
		return fmt.Sprintf("errors %+.2fpp", b.Value-b.Base)
	case judge.SLOMetricLag:
		return "lag " + fmtMS(b.Value) + " ms"
	case "incomplete":
		return "incomplete"
	}
	s := fmt.Sprintf("%s %+.0f%%", b.Metric, 100*(b.Value/b.Base-1))
	if r, ok := sloRule(slo, b.Metric); ok && b.Base > 0 && b.Value > b.Base*r.Ratio && b.Value <= b.Limit {
		s += fmt.Sprintf(", within the 1x spread (limit %+.0f%%)", 100*(b.Limit/b.Base-1))
	}
	return s + " " + shorten(oneLine(b.Query), 40)
}

// sloRule is slo's latency rule on m.
func sloRule(slo judge.SLO, m judge.SLOMetric) (judge.SLORule, bool) {
	for _, r := range slo.Rules {
		if r.Metric == m && r.Ratio > 0 {
			return r, true
		}
	}
	return judge.SLORule{}, false
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
