package compare

import (
	"math"

	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/stats"
)

// A query's time per call at the levels a user may ask about (issue 58
// item 3): the server's own work (pg_stat_statements), the durations the
// server logged (a distribution, each call with the protocol's overhead
// around its execution), and the application's round trip (what the
// replay waited for each call). The logged duration of a 0.1 ms lookup
// carries about 0.2 ms of overhead: the same replays gave 35x from the
// log and 72-75x from pg_stat_statements, the truth being 56-96x. The
// mean is judged on the server's time where every run has it and the
// noise is measured; the percentiles stay the log's, and beside each the
// log's with the per-call overhead taken out (QueryLevels.LogP95), which
// a percentile rule reads too (Rule.check).

// Level is where a query's time per call was measured.
type Level string

// Levels of time per call.
const (
	// LevelServer is the server's own time per call:
	// pg_stat_statements' execution and planning time (the run's delta
	// of total_exec_time + total_plan_time) over its calls. Planning
	// counts only where pg_stat_statements.track_planning is on
	// (QueryLevels.Planning).
	LevelServer Level = "server"
	// LevelLog is the durations the server logged
	// (log_min_duration_statement): every call's, so the
	// distribution, each with the overhead around the execution.
	LevelLog Level = "server_log"
	// LevelApplication is the replay's round trip per call: what the
	// application waited for it.
	LevelApplication Level = "application"
)

// levelOf is the level of a result's durations.
func levelOf(src LatencySource) Level {
	switch src {
	case results.LatencyClient:
		return LevelApplication
	case results.LatencyPgStatStatements:
		return LevelServer
	}
	return LevelLog
}

// LevelTime is a query's mean time per call at one level, per run and
// over the runs of each side, and its change.
type LevelTime struct {
	Level Level `json:"level"`
	// BaselineRunsMS and CandidateRunsMS are each run's mean per call,
	// in the order of the runs.
	BaselineRunsMS  []float64 `json:"baseline_runs_ms"`
	CandidateRunsMS []float64 `json:"candidate_runs_ms"`
	// BaselineMS and CandidateMS are the medians over the runs.
	BaselineMS  float64 `json:"baseline_ms"`
	CandidateMS float64 `json:"candidate_ms"`
	// Mean is the change of the mean with its interval, as the
	// comparison's over the runs (stats.Effect, the control's runs
	// giving the noise floor).
	Mean Effect `json:"mean"`
	// Window: some run's mean is over its calls within the replay's
	// schedule window (results.Window), that replay having run past
	// it; the others' over the whole run.
	Window bool `json:"window,omitempty"`
}

// QueryLevels are a query's times per call at each level it was
// measured at, side by side.
type QueryLevels struct {
	// Judged is the level the query's mean is judged on: its status,
	// Effects.Mean, the figures' MeanMS and the mean rules read it.
	// LevelServer when every run of both sides has pg_stat_statements
	// figures of the query (MinCalls calls at least, no entry
	// restarted) and the noise is measured (three runs a side at the
	// default level: pg_stat_statements gives no calls' sampling error
	// to judge fewer by); LevelApplication instead when
	// Options.JudgeLevel asks for it and every run has MinCalls round
	// trips of the query, the noise measured; else the level of the
	// results' durations.
	Judged Level `json:"judged"`
	// Percentiles is the level of the p50, p95 and p99 and of the
	// total: the results' durations (the log's distribution).
	Percentiles Level `json:"percentiles"`
	// Server, Log and Application are the query's mean at each level;
	// nil where a run lacks it.
	Server      *LevelTime `json:"server,omitempty"`
	Log         *LevelTime `json:"server_log,omitempty"`
	Application *LevelTime `json:"application,omitempty"`
	// OverheadMS is the per-call overhead of the log's durations over
	// pg_stat_statements' time, measured on the control: the median
	// over its runs of the log's mean less pg_stat_statements' (0 at
	// least); 0 without both.
	OverheadMS float64 `json:"log_overhead_ms"`
	// CandidateOverheadMS is the same measured on the candidate, where
	// OverheadMS is: 0 without it. Where it is the larger, it is what
	// the figures without the overhead take out of the candidate's runs
	// (LessOverhead), so that calls carrying more time outside the
	// server's work on the candidate (another version's protocol, some
	// waiting) never read as a slower server: a p95 of 0.09 ms of server
	// time behind 0.20 ms of overhead on the control and 0.23 ms on the
	// candidate is 1.35x with the control's taken out of both, 1.0x
	// with each side's own.
	CandidateOverheadMS float64 `json:"candidate_log_overhead_ms,omitempty"`
	// LogP50, LogP95 and LogP99 are the changes of the log's p50, p95
	// and p99 with the per-call overhead taken out of every run's
	// figure (OverheadMS out of the baseline's runs, the larger of
	// OverheadMS and CandidateOverheadMS out of the candidate's): the
	// distribution without the overhead compressing its ratio (a 2x
	// slower lookup of 0.09 ms behind 0.2 ms reads 1.3x in the log).
	// Each is judged as the log's own figure is (comparer.effect: the
	// runs' interval, the control's spread as its noise floor, the p95
	// slower with its calls' evidence, each run's bounds less the
	// overhead); a rule on the figure reads it beside the log's own
	// (Rule.check). nil without OverheadMS.
	LogP50 *Effect `json:"log_p50_without_overhead,omitempty"`
	LogP95 *Effect `json:"log_p95_without_overhead,omitempty"`
	LogP99 *Effect `json:"log_p99_without_overhead,omitempty"`
	// Planning: pg_stat_statements counted planning time in some run
	// (pg_stat_statements.track_planning on).
	Planning bool `json:"planning,omitempty"`
	// AppOverheadMS is the part of the application level's round trip
	// spent outside the server's work, measured on the control: the
	// median over its runs of the round trip's mean less
	// pg_stat_statements' time per call (0 at least); 0 without both.
	// The application level includes it on both sides: the protocol,
	// the network and the replayer's own client work, not the original
	// application's client, whose own overhead no log holds. It is
	// shown, never taken out: a constant on both sides compresses the
	// ratio of a short query (or stretches it, where the application's
	// own overhead is the larger), while Application.Mean.DeltaMS, the
	// time added per call, is untouched by it.
	AppOverheadMS float64 `json:"application_overhead_ms,omitempty"`
	// Paced is, for a COMMIT (TxCommit), its round trips with each
	// run's pace taken out by BEGIN's round trip in the run (Pace): what
	// its mean is judged on where every run has both and the noise is
	// measured. nil otherwise.
	Paced *LevelTime `json:"paced_application,omitempty"`
	Pace  *TxPace    `json:"pace,omitempty"`
}

// JudgedOnServer reports whether q's mean is judged on the server's
// time (pg_stat_statements): what a rule on the mean reads.
func (q *QueryDiff) JudgedOnServer() bool {
	return q.Levels != nil && q.Levels.Judged == LevelServer
}

// JudgedApart reports whether q's mean is judged on another level than
// its percentiles (the server's time, or the application's round trips
// asked by Options.JudgeLevel, beside the log's distribution): the
// level a report names beside the mean.
func (q *QueryDiff) JudgedApart() bool {
	return q.Levels != nil && q.Levels.Judged != q.Levels.Percentiles
}

// LevelOf is the level q's figure m is judged on: Levels.Judged for the
// mean, Levels.Percentiles for the others; empty for a query not
// judged.
func (q *QueryDiff) LevelOf(m Metric) Level {
	switch {
	case q.Levels == nil:
		return ""
	case m == MetricMean:
		return q.Levels.Judged
	}
	return q.Levels.Percentiles
}

// effectOf is a stats.Result as an Effect, with deltaMS the candidate's
// median less the baseline's.
func effectOf(r stats.Result, deltaMS float64) Effect {
	return Effect{Estimate: estimateOf(r, ChangeSlower, ChangeFaster), DeltaMS: deltaMS, P: r.P}
}

// levelTime is the change of the means bv (the baseline's runs) to kv,
// at level l, with noise floor noise assumed without runs enough.
func (c *comparer) levelTime(l Level, bv, kv []float64, noise float64) *LevelTime {
	so := stats.Options{Alpha: c.o.Alpha, MinEffect: c.o.MinEffect, DefaultNoise: noise, Min: msResolution}
	lt := &LevelTime{Level: l, BaselineRunsMS: bv, CandidateRunsMS: kv, BaselineMS: stats.Median(bv), CandidateMS: stats.Median(kv)}
	lt.Mean = effectOf(stats.Effect(bv, kv, so), lt.CandidateMS-lt.BaselineMS)
	lt.Mean.NextRun = nextRun(bv, kv, &lt.Mean.Estimate, c.o.Alpha)
	if c.measured {
		// The smallest change these runs could tell, as a figure of the
		// log's (minDetectable) but from the level's runs alone: no
		// calls' distribution is kept of them.
		lt.Mean.MinDetectable = finite(runsDetectable(bv, kv, c.lookAlpha(), stats.DefaultPower))
	}
	return lt
}

// serverRuns are each run's pg_stat_statements time per call of a
// query (execution + planning over calls): all is false when a run
// lacks it; least is the fewest calls of a run; restarted and planning
// say whether an entry restarted, and whether planning was counted;
// windowed whether some run's figure is its schedule window's.
type serverRuns struct {
	ms                            []float64
	all                           bool
	least                         int64
	restarted, planning, windowed bool
}

// serverMeans are w's runs' figures of fp: a run's within its schedule
// window where it has one with calls of fp (results.Window: the replay
// ran past it, as sessions that fell behind finished one by one), its
// whole observation's otherwise.
func serverMeans(w workRows, fp string) serverRuns {
	out := serverRuns{least: math.MaxInt64}
	for i, m := range w.runs {
		q := m[fp]
		if q == nil || q.Calls == 0 || q.TotalExecMS+q.TotalPlanMS <= 0 {
			// No time counted: an entry without timing is no level.
			return serverRuns{}
		}
		calls, execMS, planMS, restarted := q.Calls, q.TotalExecMS, q.TotalPlanMS, q.Restarted
		if i < len(w.windows) {
			if wq := w.windows[i][fp]; wq != nil && wq.Calls > 0 && wq.TotalExecMS+wq.TotalPlanMS > 0 {
				calls, execMS, planMS, restarted = wq.Calls, wq.TotalExecMS, wq.TotalPlanMS, wq.Restarted
				out.windowed = true
			}
		}
		out.ms = append(out.ms, (execMS+planMS)/float64(calls))
		out.least = min(out.least, calls)
		out.restarted = out.restarted || restarted
		out.planning = out.planning || planMS > 0
	}
	out.all = len(w.runs) > 0
	return out
}

// appRows are, per run, its round trips by fingerprint: the replay's
// client round trips kept beside server-side queries, or the queries
// themselves when they are round trips; nil for a run without. A
// replay that ran past its schedule window gives its round trips
// within it, where it has some of the query (windowRows).
func appRows(runs []*Run, windowed map[string]bool) []map[string]*Query {
	out := make([]map[string]*Query, len(runs))
	for i, r := range runs {
		var src []Query
		switch {
		case r.LatencySource == LatencyClient:
			src = r.Queries
		case r.Replay != nil:
			src = r.ClientQueries
		}
		if len(src) == 0 {
			continue
		}
		m := map[string]*Query{}
		for j := range src {
			if _, dup := m[src[j].Fingerprint]; !dup {
				m[src[j].Fingerprint] = &src[j]
			}
		}
		out[i] = m
	}
	for i, r := range runs {
		windowRows(r, out[i], windowed)
	}
	return out
}

// windowRows replaces, in rows, run r's round trips by those issued
// within its schedule window (results.Window), query by query where the
// window timed some, each a copy, and notes those queries in windowed.
func windowRows(r *Run, rows map[string]*Query, windowed map[string]bool) {
	if r.Replay == nil || r.Window == nil || rows == nil {
		return
	}
	for _, wq := range r.Window.Queries {
		q := rows[wq.Fingerprint]
		if q == nil || wq.TimedCalls == 0 {
			continue
		}
		c := *q
		c.Calls, c.TimedCalls, c.TotalMS, c.MeanMS = wq.Calls, wq.TimedCalls, wq.TotalMS, wq.MeanMS
		rows[wq.Fingerprint] = &c
		windowed[wq.Fingerprint] = true
	}
}

// appMeans are each run's mean round trip of fp; false when a run lacks
// it.
func appMeans(rows []map[string]*Query, fp string) ([]float64, bool) {
	var ms []float64
	for _, m := range rows {
		q := m[fp]
		if q == nil || q.TimedCalls == 0 {
			return nil, false
		}
		ms = append(ms, q.MeanMS)
	}
	return ms, len(rows) > 0
}

// levels fills d.Levels from the runs' rows b and k of a judged query,
// whose Effects are the log's (or the results' durations'), and, when
// the mean is judged on the server's time, makes the mean's figures
// (Effects.Mean, MeanMS, Ratio.Mean) the server's.
func (c *comparer) levels(d *QueryDiff, b, k []*Query) {
	lv := &QueryLevels{Judged: levelOf(c.source), Percentiles: levelOf(c.source)}
	own := &LevelTime{Level: lv.Judged, BaselineRunsMS: values(b, MetricMean), CandidateRunsMS: values(k, MetricMean),
		BaselineMS: d.Baseline.MeanMS, CandidateMS: d.Candidate.MeanMS, Mean: d.Effects.Mean}
	switch lv.Judged {
	case LevelLog:
		lv.Log = own
	case LevelApplication:
		lv.Application = own
		c.appWindow(d, lv, b, k)
	}
	if lv.Application == nil {
		if bv, ok := appMeans(c.bApp, d.Fingerprint); ok {
			if kv, ok := appMeans(c.cApp, d.Fingerprint); ok {
				lv.Application = c.levelTime(LevelApplication, bv, kv, c.o.Noise.Mean)
				lv.Application.Window = c.appWindowed[d.Fingerprint]
			}
		}
	}
	d.TxControl = txControlOf(d.Query)
	onApp := c.o.JudgeLevel == LevelApplication && c.appJudgeable(lv, d.Fingerprint)
	if d.TxControl == TxCommit {
		// The server's time of a COMMIT leaves out the commit's WAL
		// flush (txcontrol.go): shown, never judged.
		onApp = false
	}
	bs, ks := serverMeans(c.bWork, d.Fingerprint), serverMeans(c.cWork, d.Fingerprint)
	if bs.all && ks.all && lv.Judged != LevelServer {
		lv.Server = c.levelTime(LevelServer, bs.ms, ks.ms, c.o.Noise.Mean)
		lv.Server.Window = bs.windowed || ks.windowed
		lv.Planning = bs.planning || ks.planning
		if lv.Log != nil {
			c.logOverhead(lv, b, k, d.Candidate.TimedCalls)
		}
		lv.AppOverheadMS = appOverhead(lv)
		if !onApp && d.TxControl != TxCommit && c.measured && !c.mixed && !bs.restarted && !ks.restarted && min(bs.least, ks.least) >= c.o.MinCalls {
			lv.Judged = LevelServer
			lv.Server.Mean.setShare(lv.Server.BaselineMS, d.Candidate.TimedCalls, c.bServerRunMS)
			c.serverCarried(b, k, lv.Server)
			judgeOn(d, lv.Server)
		}
	}
	if onApp {
		lv.Judged = LevelApplication
		c.judgeOnApp(d, lv, b, k)
	}
	if d.TxControl == TxCommit {
		c.judgePaced(d, lv, b, k)
	}
	d.Levels = lv
}

// judgePaced judges a COMMIT's mean on its round trips paced by BEGIN's
// (TxPace) where every run of both sides has MinCalls round trips of it
// and BEGIN's, and the noise is measured; else it stays on the level it
// had (the round trips' own where they are the results' durations).
func (c *comparer) judgePaced(d *QueryDiff, lv *QueryLevels, b, k []*Query) {
	if lv.Application == nil || !c.measured || c.mixed {
		return
	}
	for _, rows := range [][]map[string]*Query{c.bApp, c.cApp} {
		for _, m := range rows {
			if q := m[d.Fingerprint]; q == nil || q.TimedCalls < c.o.MinCalls {
				return
			}
		}
	}
	pb, pk, pace, ok := c.paced(lv.Application.BaselineRunsMS, lv.Application.CandidateRunsMS)
	if !ok {
		return
	}
	lt := c.levelTime(LevelApplication, pb, pk, c.o.Noise.Mean)
	lt.Window = lv.Application.Window
	lv.Paced, lv.Pace, lv.Judged = lt, pace, LevelApplication
	lt.Mean.setShare(lt.BaselineMS, d.Candidate.TimedCalls, c.bAppRunMS)
	c.serverCarried(b, k, lt)
	judgeOn(d, lt)
}

// appWindow makes lv.Application, the results' own round trips, their
// means within each run's schedule window where a run has one
// (windowRows), and judges the mean on them when the noise is measured
// (three runs a side: the window keeps no calls' distribution to judge
// fewer by), as Options.JudgeLevel's application level is judged.
func (c *comparer) appWindow(d *QueryDiff, lv *QueryLevels, b, k []*Query) {
	if !c.appWindowed[d.Fingerprint] {
		return
	}
	bv, bOK := appMeans(c.bApp, d.Fingerprint)
	kv, kOK := appMeans(c.cApp, d.Fingerprint)
	if !bOK || !kOK {
		return
	}
	lv.Application = c.levelTime(LevelApplication, bv, kv, c.o.Noise.Mean)
	lv.Application.Window = true
	if c.measured && !c.mixed {
		c.judgeOnApp(d, lv, b, k)
	}
}

// judgeOnApp judges d's mean on the application level's round trips:
// its share of the run, the calls' evidence (serverCarried), and the
// mean's figures made the level's (judgeOn).
func (c *comparer) judgeOnApp(d *QueryDiff, lv *QueryLevels, b, k []*Query) {
	lv.Application.Mean.setShare(lv.Application.BaselineMS, d.Candidate.TimedCalls, c.bAppRunMS)
	c.serverCarried(b, k, lv.Application)
	judgeOn(d, lv.Application)
}

// appJudgeable says whether the mean of fp can be judged on the
// application's round trips (Options.JudgeLevel): they are another level
// than the results' durations, every run of both sides has MinCalls of
// them at least, and the noise is measured (the round trips keep no
// calls' distribution of their own to judge fewer runs by).
func (c *comparer) appJudgeable(lv *QueryLevels, fp string) bool {
	if lv.Application == nil || lv.Judged == LevelApplication || !c.measured || c.mixed {
		return false
	}
	for _, rows := range [][]map[string]*Query{c.bApp, c.cApp} {
		for _, m := range rows {
			if q := m[fp]; q == nil || q.TimedCalls < c.o.MinCalls {
				return false
			}
		}
	}
	return true
}

// appRunMS is the median over runs of their round trips' total time; 0
// without.
func appRunMS(rows []map[string]*Query) float64 {
	var xs []float64
	for _, m := range rows {
		total := 0.0
		for _, q := range m {
			total += q.TotalMS
		}
		if total > 0 {
			xs = append(xs, total)
		}
	}
	if len(xs) == 0 {
		return 0
	}
	return stats.Median(xs)
}

// appOverhead is the application level's round trip less the server's
// time per call on the control (QueryLevels.AppOverheadMS): the median
// over its runs, 0 at least; 0 without both levels.
func appOverhead(lv *QueryLevels) float64 {
	if lv.Application == nil || lv.Server == nil || len(lv.Application.BaselineRunsMS) != len(lv.Server.BaselineRunsMS) {
		return 0
	}
	var over []float64
	for i, v := range lv.Application.BaselineRunsMS {
		over = append(over, v-lv.Server.BaselineRunsMS[i])
	}
	if len(over) == 0 {
		return 0
	}
	return math.Max(0, stats.Median(over))
}

// logOverhead measures the per-call overhead of the log's durations on
// the control, and on the candidate, run by run against
// pg_stat_statements' time, and the log's percentiles without it
// (QueryLevels.LogP95), each judged as the log's own (comparer.effect);
// calls is the candidate's timed calls.
func (c *comparer) logOverhead(lv *QueryLevels, b, k []*Query, calls int64) {
	lv.OverheadMS = runsOverhead(b, lv.Server.BaselineRunsMS)
	if lv.OverheadMS == 0 {
		return
	}
	lv.CandidateOverheadMS = runsOverhead(k, lv.Server.CandidateRunsMS)
	for _, m := range []Metric{MetricP50, MetricP95, MetricP99} {
		e, _ := c.effect(b, k, m, calls, lv.overhead())
		p, _ := latencyOf(m, nil, &lv.LogP50, &lv.LogP95, &lv.LogP99)
		*p = &e
	}
}

// runsOverhead is the median over the runs of the log's mean less the
// server's time per call (server, in the order of the runs), 0 at least;
// 0 without.
func runsOverhead(rows []*Query, server []float64) float64 {
	var over []float64
	for i, q := range rows {
		if q != nil && q.TimedCalls > 0 && i < len(server) {
			over = append(over, q.MeanMS-server[i])
		}
	}
	if len(over) == 0 {
		return 0
	}
	return math.Max(0, stats.Median(over))
}

// overhead is what the figures without the overhead take out of each
// side's runs: OverheadMS out of the baseline's, the larger of it and
// CandidateOverheadMS out of the candidate's.
func (lv *QueryLevels) overhead() overhead {
	return overhead{b: lv.OverheadMS, k: math.Max(lv.OverheadMS, lv.CandidateOverheadMS)}
}

// WithoutOverhead is the change of the log's percentile m with the
// per-call overhead taken out (LogP50, LogP95, LogP99); nil for the mean
// and the total, or without an overhead measured.
func (lv *QueryLevels) WithoutOverhead(m Metric) *Effect {
	if lv == nil || m == MetricMean {
		return nil
	}
	e, _ := latencyOf(m, nil, lv.LogP50, lv.LogP95, lv.LogP99)
	return e
}

// LessOverhead is a percentile of the log's durations with the per-call
// overhead taken out of every run's figure (QueryLevels.LogP95): the
// overhead taken out of each side's runs, and the medians over the runs
// without it.
type LessOverhead struct {
	// OverheadMS is the overhead taken out of the baseline's runs,
	// measured on the control (QueryLevels.OverheadMS);
	// CandidateOverheadMS out of the candidate's: the control's, or
	// the candidate's own where that is the larger
	// (QueryLevels.CandidateOverheadMS).
	OverheadMS          float64 `json:"overhead_ms"`
	CandidateOverheadMS float64 `json:"candidate_overhead_ms"`
	// Baseline and Candidate are the figure's medians over the runs
	// without it, in ms.
	Baseline  float64 `json:"baseline"`
	Candidate float64 `json:"candidate"`
}

// LessOverhead is q's percentile m of the log's durations without the
// per-call overhead, and its change (QueryLevels.WithoutOverhead); false
// for the mean and the total, or without an overhead measured.
func (q *QueryDiff) LessOverhead(m Metric) (LessOverhead, *Effect, bool) {
	e := q.Levels.WithoutOverhead(m)
	if e == nil {
		return LessOverhead{}, nil, false
	}
	o := q.Levels.overhead()
	return LessOverhead{OverheadMS: o.b, CandidateOverheadMS: o.k,
		Baseline: median0(lessValues(q.BaselineRows, m, o.b)), Candidate: median0(lessValues(q.CandidateRows, m, o.k))}, e, true
}

// judgeOn makes the mean's figures of d level s's (the server's, or the
// application's when asked): its effect, its medians, its runs' and its
// spread, so that the status, the ranking, the rules and every report of
// the mean read one level.
func judgeOn(d *QueryDiff, s *LevelTime) {
	d.Effects.Mean = s.Mean
	d.Baseline.MeanMS, d.Candidate.MeanMS = s.BaselineMS, s.CandidateMS
	d.Ratio.Mean = ratio(s.CandidateMS, s.BaselineMS)
	d.Factor = d.Ratio.Mean
	for _, side := range []struct {
		f    *Figures
		runs []float64
	}{{d.Baseline, s.BaselineRunsMS}, {d.Candidate, s.CandidateRunsMS}} {
		if len(side.f.Runs) == len(side.runs) {
			for i := range side.f.Runs {
				side.f.Runs[i].MeanMS = side.runs[i]
			}
		}
		if side.f.Spread != nil {
			side.f.Spread.MeanMS = spread0(side.runs)
		}
	}
}

// serverCarried asks of the server's mean (or the application's, judged
// on it when asked: the same shift, by the round trip's), slower over the runs beyond
// every floor, what effect asks of the log's: that the calls inside the
// runs carry it, and the rounds' noise pooled over the comparison
// (CallsEvidence, set on s.Mean when they do not: then it is no
// regression). pg_stat_statements keeps no calls' distribution: each
// run's bounds are its log mean's, moved by the run's overhead (the
// server's mean less the log's), as under an overhead alike for every
// call the calls spread as in the log, or less.
//
// A server's mean faster beyond every floor gets the same evidence the
// other way (Effect.Faster), which a fix's verdict needs to claim a gain,
// as the log's mean has it (comparer.effect).
func (c *comparer) serverCarried(b, k []*Query, s *LevelTime) {
	e := &s.Mean
	if !c.useHist || e.Interval != IntervalRuns || !e.Beyond {
		return
	}
	switch {
	case e.Change == ChangeSlower && (e.pastMSFloor(c.o.MinEffectMS, c.o.MinTimeShare) || len(c.o.Rules) > 0):
		if ev, ok := c.serverEvidence(b, k, s); ok {
			e.setEvidence(ev, c.o.MinEffectMS, c.o.MinTimeShare)
		}
	case e.Change == ChangeFaster && -e.DeltaMS >= c.o.MinEffectMS:
		if ev, ok := c.serverEvidence(b, k, s); ok {
			e.Faster = ev
		}
	}
}

// serverEvidence is callsEvidence for the server's mean: each run's
// bounds its log mean's, moved by the run's overhead; false when a run
// lacks the figures.
func (c *comparer) serverEvidence(b, k []*Query, s *LevelTime) (*CallsEvidence, bool) {
	ev := &CallsEvidence{Alpha: stats.CallsAlpha(c.o.Alpha, c.tests), Tests: c.tests}
	side := func(rows []*Query, server []float64, baseline bool) ([]float64, []stats.Bounds, bool) {
		var figs []float64
		var bds []stats.Bounds
		for i, q := range rows {
			if q == nil || q.TimedCalls == 0 || i >= len(server) {
				return nil, nil, false
			}
			bd, few, ok := c.runBounds(q, MetricMean, ev.Alpha)
			if !ok {
				return nil, nil, false
			}
			if few && (baseline && math.IsInf(bd.High, 1) || !baseline && bd.Low <= 0) {
				ev.TooFewCalls = true
			}
			shift := server[i] - q.MeanMS
			if bd.Low > 0 {
				bd.Low = math.Max(bd.Low+shift, msResolution)
			}
			if !math.IsInf(bd.High, 1) {
				bd.High = math.Max(bd.High+shift, msResolution)
			}
			figs, bds = append(figs, math.Max(server[i], msResolution)), append(bds, bd)
		}
		return figs, bds, true
	}
	bf, bx, okB := side(b, s.BaselineRunsMS, true)
	kf, kx, okK := side(k, s.CandidateRunsMS, false)
	if !okB || !okK {
		return nil, false
	}
	low, high, ok := stats.CallsInterval(bx, kx, c.o.Alpha)
	if !ok {
		return nil, false
	}
	ev.Low, ev.High = low, finite(high)
	ev.FamilyLow, ev.FamilyHigh = ev.Low, ev.High
	if noise, pooled := c.roundNoise[MetricMean]; pooled {
		ev.RoundNoise, ev.RoundNoiseDF = noise.Factor(), noise.DF
		ev.FamilyLow, ev.FamilyHigh = 0, finite(math.Inf(1))
		if _, flo, fhi, ok := stats.FamilyInterval(stats.LogRunsOf(bf, bx, ev.Alpha), stats.LogRunsOf(kf, kx, ev.Alpha), noise, c.o.Alpha, c.tests); ok {
			ev.FamilyLow, ev.FamilyHigh = flo, finite(fhi)
		}
	}
	return ev, true
}
