package compare

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/observe"
	"github.com/pgrehearse/pgrehearse/internal/querystats"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// levelQuery is a query of a synthetic round: each call's server time
// (pg_stat_statements') drawn around serverUS, the log's duration that
// time plus overheadUS, the application's round trip the log's plus
// clientUS.
type levelQuery struct {
	serverUS, overheadUS, clientUS float64
	calls                          int // 0: 2000
}

// levelRound is one round's result: the log's durations as its queries
// (with histograms), the round trips as its client queries, and
// pg_stat_statements' execution time per fingerprint as its evidence.
func levelRound(t testing.TB, name string, seed uint64, qs map[string]levelQuery) *Run {
	t.Helper()
	return levelRoundOf(t, name, seed, qs, true)
}

// levelRoundOf is levelRound, the log's durations with histograms or
// without (hist), as a results file of version 1 keeps them.
func levelRoundOf(t testing.TB, name string, seed uint64, qs map[string]levelQuery, hist bool) *Run {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 5))
	logged, client := querystats.NewSet(), querystats.NewSet()
	var ev []observe.Query
	var total int64
	for _, fp := range sortedKeys(qs) {
		q := qs[fp]
		calls := cmp.Or(q.calls, 2000)
		total += int64(calls)
		var execMS float64
		for i := range calls {
			server := int64(q.serverUS * (0.5 + 0.5*r.ExpFloat64()))
			execMS += float64(server) / 1000
			at := 1_700_000_000_000_000 + int64(i)*1000
			logged.AddAt(fp, "SELECT "+fp, at, server+int64(q.overheadUS), false)
			client.AddAt(fp, "SELECT "+fp, at, server+int64(q.overheadUS+q.clientUS), false)
		}
		ev = append(ev, observe.Query{Fingerprint: fp, QueryStats: observe.QueryStats{Calls: int64(calls), TotalExecMS: execMS}})
	}
	res := results.New(results.KindReplay, LatencyServerLog)
	var err error
	if res.Queries, err = logged.Rows(querystats.RowOptions{Hist: hist}); err != nil {
		t.Fatal(err)
	}
	if res.ClientQueries, err = client.Rows(querystats.RowOptions{}); err != nil {
		t.Fatal(err)
	}
	res.Source = name
	res.Statements = results.StatementCounts{Total: total, Executed: total}
	return withEvidence(t, res, ev...)
}

// levelSides are n rounds a side of a lookup whose server time grows
// 60x (0.1 ms to 6 ms) behind a logged overhead of 0.2 ms a call, and of
// an insert whose server time stays 0.05 ms while the candidate's log
// carries 0.5 ms more of waiting per call.
func levelSides(t *testing.T, n int) (base, cand []*Run) {
	for i := range n {
		base = append(base, levelRound(t, fmt.Sprintf("control-%d", i), uint64(10+i), map[string]levelQuery{
			"lookup": {serverUS: 100, overheadUS: 200, clientUS: 300}, "insert": {serverUS: 50, overheadUS: 200, clientUS: 300}}))
		cand = append(cand, levelRound(t, fmt.Sprintf("candidate-%d", i), uint64(20+i), map[string]levelQuery{
			"lookup": {serverUS: 6000, overheadUS: 200, clientUS: 300}, "insert": {serverUS: 50, overheadUS: 700, clientUS: 300}}))
	}
	return base, cand
}

// within says whether got is within a factor of want.
func within(got, want, factor float64) bool { return got >= want/factor && got <= want*factor }

// TestLevelsRecoverServerRatio: the log's durations, each with 0.2 ms of
// overhead, compress the lookup's 60x to about 20x; pg_stat_statements'
// time per call recovers it, with its interval over three rounds a side,
// and so does the log's p95 less the overhead measured on the control.
// The mean is judged on the server's time: the lookup breaks mean>30x
// (which the log's 20x would not), and the insert's mean, slower only in
// the log, is no regression.
func TestLevelsRecoverServerRatio(t *testing.T) {
	base, cand := levelSides(t, 3)
	rep, err := Runs(base, cand, Options{Rules: mustRules(t, "mean>30x")})
	if err != nil {
		t.Fatal(err)
	}
	q := rep.Query("lookup")
	lv := q.Levels
	if lv == nil || lv.Server == nil || lv.Log == nil || lv.Application == nil {
		t.Fatalf("lookup's levels: %+v", lv)
	}
	if lv.Judged != LevelServer || lv.Percentiles != LevelLog || !q.JudgedOnServer() || q.LevelOf(MetricP95) != LevelLog {
		t.Errorf("judged on %q, percentiles on %q", lv.Judged, lv.Percentiles)
	}
	s := lv.Server.Mean
	if !within(s.Ratio, 60, 1.1) || s.Interval != IntervalRuns || s.Low > s.Ratio || s.High < s.Ratio || s.Change != ChangeSlower || !s.Beyond {
		t.Errorf("server level: %+v, want about 60x with its interval over the runs", s)
	}
	// (6 + 0.2) / (0.1 + 0.2): the overhead compresses the ratio.
	if l := lv.Log.Mean.Ratio; !within(l, 6.2/0.3, 1.15) {
		t.Errorf("log level %.1fx, want about %.1fx", l, 6.2/0.3)
	}
	if a := lv.Application.Mean.Ratio; !within(a, 6.5/0.6, 1.15) {
		t.Errorf("application level %.1fx, want about %.1fx", a, 6.5/0.6)
	}
	if math.Abs(lv.OverheadMS-0.2) > 0.02 {
		t.Errorf("overhead measured on the control %.3f ms, want 0.2", lv.OverheadMS)
	}
	// The round trip's 0.2 + 0.3 ms beyond the server's work, shown and
	// not taken out: the application's ratio stays compressed, its
	// added time per call (6.5 - 0.6 ms) is the server's.
	if math.Abs(lv.AppOverheadMS-0.5) > 0.02 || !within(lv.Application.Mean.DeltaMS, 5.9, 1.05) {
		t.Errorf("application overhead on the control %.3f ms, added %.3f ms a call; want 0.5 and 5.9", lv.AppOverheadMS, lv.Application.Mean.DeltaMS)
	}
	if lv.LogP95 == nil || !within(lv.LogP95.Ratio, 60, 1.25) || q.Effects.P95.Ratio >= lv.LogP95.Ratio {
		t.Errorf("log's p95 without the overhead: %+v, want about 60x (with it %.1fx)", lv.LogP95, q.Effects.P95.Ratio)
	}
	// The mean's figures are the level judged: status, factor, medians.
	if q.Status != StatusRegressed || q.Regressed != MetricMean || q.Factor != s.Ratio || q.Effects.Mean != s ||
		q.Baseline.MeanMS != lv.Server.BaselineMS || q.Candidate.MeanMS != lv.Server.CandidateMS || q.ImpactMS <= 0 {
		t.Errorf("lookup: %s on %s, factor %.1f, mean %.3f -> %.3f ms, impact %.0f", q.Status, q.Regressed, q.Factor, q.Baseline.MeanMS, q.Candidate.MeanMS, q.ImpactMS)
	}
	checkLabel(t, "lookup", q)
	if rep.Verdict.Status != VerdictFail || len(rep.Verdict.Broken) != 1 || rep.Verdict.Broken[0].Fingerprint != "lookup" || rep.Verdict.Broken[0].Level != LevelServer {
		t.Errorf("verdict %+v, want mean>30x broken by the lookup, on the server's time", rep.Verdict)
	}
	ins := rep.Query("insert")
	if ins.Levels == nil || ins.Levels.Log == nil || ins.Levels.Log.Mean.Change != ChangeSlower || !within(ins.Levels.Server.Mean.Ratio, 1, 1.1) {
		t.Fatalf("insert's levels: %+v", ins.Levels)
	}
	// Its mean is no regression: its server time did not change. (Its
	// log's p95, which carries the waiting, is judged as the log's.)
	if ins.Status == StatusRegressed || ins.Regressed == MetricMean || ins.Effects.Mean.Change != ChangeNone {
		t.Errorf("insert: %s on %q (log %.2fx, server %.2fx), want its mean unchanged", ins.Status, ins.Regressed, ins.Levels.Log.Mean.Ratio, ins.Levels.Server.Mean.Ratio)
	}
	checkLabel(t, "insert", ins)
}

// TestLevelsTwoRoundsJudgedOnLog: two rounds a side measure no noise,
// and pg_stat_statements gives no calls' sampling error to judge them
// by: the mean is judged on the log's durations, the server's level
// shown beside it; without pg_stat_statements there is no server level.
func TestLevelsTwoRoundsJudgedOnLog(t *testing.T) {
	base, cand := levelSides(t, 2)
	rep, err := Runs(base, cand, Options{})
	if err != nil {
		t.Fatal(err)
	}
	q := rep.Query("lookup")
	if q.Levels == nil || q.Levels.Judged != LevelLog || q.JudgedOnServer() || q.Levels.Server == nil || q.Effects.Mean != q.Levels.Log.Mean {
		t.Errorf("two rounds a side: %+v", q.Levels)
	}
	if q.Levels.Server.Mean.Ratio <= 2*q.Levels.Log.Mean.Ratio {
		t.Errorf("server level %.1fx, log %.1fx: the server's should be the larger", q.Levels.Server.Mean.Ratio, q.Levels.Log.Mean.Ratio)
	}
	for _, r := range append(base, cand...) {
		r.Evidence = nil
	}
	rep, err = Runs(base, cand, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if q := rep.Query("lookup"); q.Levels == nil || q.Levels.Server != nil || q.Levels.Judged != LevelLog || q.Levels.OverheadMS != 0 || q.Levels.LogP95 != nil {
		t.Errorf("without pg_stat_statements: %+v", q.Levels)
	}
}

// TestLevelsJudgeApplication: asked to judge the application's round
// trips (Options.JudgeLevel), the insert, whose server time did not
// change while each call waited 0.5 ms longer (0.55 to 1.05 ms a round
// trip, 1.9x), is a regression on that level, named in the broken rule;
// the lookup's 60x on the server is 10.8x there, its round trip carrying
// 0.5 ms of overhead on both sides. Rounds of the control against others
// of the control are no regression on either level; two rounds a side
// (no noise measured) stay on the log's; a level that is none is refused.
func TestLevelsJudgeApplication(t *testing.T) {
	base, cand := levelSides(t, 3)
	rep, err := Runs(base, cand, Options{Rules: mustRules(t, "mean>+50%"), JudgeLevel: LevelApplication})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Settings.JudgeLevel != LevelApplication {
		t.Errorf("settings' judge level %q", rep.Settings.JudgeLevel)
	}
	ins := rep.Query("insert")
	if lv := ins.Levels; lv == nil || lv.Judged != LevelApplication || lv.Server == nil || !ins.JudgedApart() || ins.JudgedOnServer() {
		t.Fatalf("insert's levels: %+v", ins.Levels)
	}
	a := ins.Levels.Application
	if ins.Status != StatusRegressed || ins.Regressed != MetricMean || ins.Effects.Mean != a.Mean || !within(ins.Factor, 1.05/0.55, 1.1) ||
		ins.Baseline.MeanMS != a.BaselineMS || a.Mean.Low > a.Mean.Ratio || a.Mean.High < a.Mean.Ratio {
		t.Errorf("insert on the application's level: %s on %q, factor %.2f, mean %+v", ins.Status, ins.Regressed, ins.Factor, a.Mean)
	}
	checkLabel(t, "insert", ins)
	if l := rep.Query("lookup"); l.Levels.Judged != LevelApplication || !within(l.Factor, 6.5/0.6, 1.15) || l.Status != StatusRegressed {
		t.Errorf("lookup on the application's level: %s, factor %.1f", l.Status, l.Factor)
	}
	broken := map[string]Level{}
	for _, b := range rep.Verdict.Broken {
		broken[b.Fingerprint] = b.Level
	}
	if rep.Verdict.Status != VerdictFail || broken["insert"] != LevelApplication || broken["lookup"] != LevelApplication {
		t.Errorf("verdict %s, broken %v: want both queries, on the application's level", rep.Verdict.Status, broken)
	}

	var ctl []*Run
	for i := range 3 {
		ctl = append(ctl, levelRound(t, fmt.Sprintf("control-%d", 3+i), uint64(40+i), map[string]levelQuery{
			"lookup": {serverUS: 100, overheadUS: 200, clientUS: 300}, "insert": {serverUS: 50, overheadUS: 200, clientUS: 300}}))
	}
	aa, err := Runs(base, ctl, Options{Rules: mustRules(t, "mean>+50%"), JudgeLevel: LevelApplication})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range aa.Queries {
		if q.Levels == nil || q.Levels.Judged != LevelApplication || q.Status.Regression() {
			t.Errorf("A/A %s: %s judged on %+v", q.Fingerprint, q.Status, q.Levels)
		}
	}
	if aa.Verdict.Status == VerdictFail {
		t.Errorf("A/A verdict %s", aa.Verdict.Status)
	}

	two, err := Runs(base[:2], cand[:2], Options{JudgeLevel: LevelApplication})
	if err != nil {
		t.Fatal(err)
	}
	if q := two.Query("insert"); q.Levels.Judged != LevelLog {
		t.Errorf("two rounds a side judged on %q, want the log's", q.Levels.Judged)
	}
	if _, err := Runs(base, cand, Options{JudgeLevel: LevelLog}); err == nil {
		t.Errorf("judging on %q was not refused", LevelLog)
	}
}

// TestLevelsServerChangeCarriedByCalls: a mean judged on the server's
// time is a regression only when the calls inside the runs carry it, as
// the log's: ten calls a round spread as the log shows them cannot carry
// pg_stat_statements' 1.4x over three rounds a side, however neatly its
// rounds line up.
func TestLevelsServerChangeCarriedByCalls(t *testing.T) {
	var base, cand []*Run
	for i := range 3 {
		b := levelRound(t, fmt.Sprintf("control-%d", i), uint64(30+i), map[string]levelQuery{"few": {serverUS: 5000, overheadUS: 200, calls: 10}})
		k := levelRound(t, fmt.Sprintf("candidate-%d", i), uint64(40+i), map[string]levelQuery{"few": {serverUS: 7000, overheadUS: 200, calls: 10}})
		// The server's means of the rounds, 5.0-5.2 ms then 7.0-7.2 ms.
		for _, x := range []struct {
			r  *Run
			ms float64
		}{{b, 5 + 0.1*float64(i)}, {k, 7 + 0.1*float64(i)}} {
			ev := observe.Evidence{Version: observe.Version, Statements: &observe.Statements{Queries: []observe.Query{
				{Fingerprint: "few", QueryStats: observe.QueryStats{Calls: 10, TotalExecMS: 10 * x.ms}}}}}
			raw, err := json.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			x.r.Evidence = raw
		}
		base, cand = append(base, b), append(cand, k)
	}
	rep, err := Runs(base, cand, Options{})
	if err != nil {
		t.Fatal(err)
	}
	q := rep.Query("few")
	if q.Levels == nil || !q.JudgedOnServer() {
		t.Fatalf("few: levels %+v", q.Levels)
	}
	s := q.Levels.Server.Mean
	if s.Change != ChangeSlower || !s.Beyond || s.Calls == nil || s.Calls.Low > 1 && s.Calls.FamilyLow > 1 && !s.Calls.TooFewCalls {
		t.Errorf("server level %+v (calls %+v): want slower beyond the floors over the runs, not carried by the calls", s, s.Calls)
	}
	if q.Status.Regression() || q.Effects.Mean.Calls == nil {
		t.Errorf("few: %s %v, want no regression", q.Status, q.Reasons)
	}
	checkLabel(t, "few", q)
}

// TestLevelsServerFasterEvidence: a server's mean faster beyond every
// floor carries the calls' evidence the other way (Effect.Faster), as
// the log's mean does, so that a fix's verdict judged on the server's
// time can claim the gain; slower, it carries none.
func TestLevelsServerFasterEvidence(t *testing.T) {
	base, cand := levelSides(t, 3)
	rep, err := Runs(cand, base, Options{})
	if err != nil {
		t.Fatal(err)
	}
	q := rep.Query("lookup")
	if !q.JudgedOnServer() {
		t.Fatalf("lookup judged on %q, want the server", q.Levels.Judged)
	}
	if e := q.Levels.Server.Mean; e.Change != ChangeFaster || !e.Beyond || !e.FasterCarried() {
		t.Errorf("server level 60x faster: change %s, beyond %v, evidence %+v; want the gain carried", e.Change, e.Beyond, e.Faster)
	}
	rep, err = Runs(base, cand, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if e := rep.Query("lookup").Levels.Server.Mean; e.Faster != nil {
		t.Errorf("server level slower carries faster evidence %+v", e.Faster)
	}
}

// appSides are three rounds a side of levelSides' lookup and insert,
// every round's times scaled by its own factor (a machine's noise from
// round to round, σ 0.15 in logarithm), the candidate's insert waiting
// waitUS more a call outside the server's work (its server time the
// same): at 550 µs, twice its 0.55 ms round trip.
func appSides(t *testing.T, seed uint64, waitUS float64) (base, cand []*Run) {
	r := rand.New(rand.NewPCG(seed, 9))
	round := func(name string, s uint64, wait float64) *Run {
		f := math.Exp(0.15 * r.NormFloat64())
		return levelRound(t, name, s, map[string]levelQuery{
			"lookup": {serverUS: 100 * f, overheadUS: 200 * f, clientUS: 300 * f, calls: 500},
			"insert": {serverUS: 50 * f, overheadUS: (200 + wait) * f, clientUS: 300 * f, calls: 500}})
	}
	for i := range uint64(3) {
		base = append(base, round(fmt.Sprintf("control-%d", i), seed*10+i, 0))
		cand = append(cand, round(fmt.Sprintf("candidate-%d", i), seed*10+5+i, waitUS))
	}
	return base, cand
}

// TestJudgeApplicationRates: judged on the application's round trips,
// identical sides under round-to-round noise break mean>+50% rarely, and
// an insert whose round trip doubles while its server time does not is
// found. make test runs a few seeds (0.4 s); PGREHEARSE_LONG=1 enough to
// measure the rates: 100 seeds (9 s) gave A/A 0 failed, 3 of 200 queries
// regressed under the rule's threshold; the 2x broken in 96 of 100.
func TestJudgeApplicationRates(t *testing.T) {
	seeds := 4
	if os.Getenv("PGREHEARSE_LONG") != "" {
		seeds = 100
	}
	opts := Options{Rules: mustRules(t, "mean>+50%"), JudgeLevel: LevelApplication}
	var aaFailed, aaRegressed, found int
	for seed := range uint64(seeds) {
		base, cand := appSides(t, seed+1, 0)
		rep, err := Runs(base, cand, opts)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Verdict.Status == VerdictFail {
			aaFailed++
		}
		for _, q := range rep.Queries {
			if q.Levels == nil || q.Levels.Judged != LevelApplication {
				t.Fatalf("seed %d: %s judged on %+v", seed+1, q.Fingerprint, q.Levels)
			}
			if q.Status.Regression() {
				aaRegressed++
			}
		}
		base, cand = appSides(t, seed+1, 550)
		if rep, err = Runs(base, cand, opts); err != nil {
			t.Fatal(err)
		}
		for _, b := range rep.Verdict.Broken {
			if b.Fingerprint == "insert" && b.Level == LevelApplication {
				found++
			}
		}
		// Its server time moves only by the rounds' noise.
		if q := rep.Query("insert"); !within(q.Levels.Server.Mean.Ratio, 1, 2) {
			t.Errorf("seed %d: the insert's server time %.2fx, want unchanged", seed+1, q.Levels.Server.Mean.Ratio)
		}
	}
	t.Logf("A/A: %d failed, %d queries regressed of %d; 2x: %d broken", aaFailed, aaRegressed, seeds, found)
	if aaFailed > 1+seeds*6/100 || aaRegressed > 1+seeds*6/100 {
		t.Errorf("A/A: %d of %d failed, %d queries regressed", aaFailed, seeds, aaRegressed)
	}
	if found < seeds*9/10 {
		t.Errorf("2x on the application's level broken in %d of %d", found, seeds)
	}
}

// withWindow gives run r a schedule window (results.Window) of seconds
// in which stmts statements were issued, with each query's round trips
// (client) and pg_stat_statements' figures (server) within it, as a
// replay that ran past its window has them.
func withWindow(t *testing.T, r *Run, seconds float64, stmts int64, server []observe.WindowQuery, client []results.WindowQuery) *Run {
	t.Helper()
	ev, err := observe.Decode(r.Evidence)
	if err != nil || ev == nil || ev.Statements == nil {
		t.Fatalf("evidence of %s: %v", r.Name(), err)
	}
	ev.Statements.Window = &observe.StatementsWindow{End: "2026-11-28T10:00:10Z", Queries: server}
	if r.Evidence, err = json.Marshal(ev); err != nil {
		t.Fatal(err)
	}
	r.Window = &results.Window{Seconds: seconds, AfterSeconds: 5, Statements: stmts, AfterStatements: r.Statements.Total - stmts, Queries: client}
	return r
}

// A candidate that fell behind: over its whole rounds the lookup's time
// per call is 2x the control's, diluted by the calls its sessions ran
// after the schedule's window, one by one, with fewer neighbours; within
// the window, where every session still had statements to run, it is
// 3x at the server and the round trip 0.8 ms against 0.6. The levels are
// judged on the window's figures, and say so; the rate is the window's.
// pg_stat_statements' window alone, without the replay's window to
// match it, is not used.
func TestLevelsWithinTheWindow(t *testing.T) {
	var base, cand, unmatched []*Run
	for i := range 3 {
		base = append(base, levelRound(t, fmt.Sprintf("control-%d", i), uint64(10+i), map[string]levelQuery{
			"lookup": {serverUS: 100, overheadUS: 200, clientUS: 300}, "insert": {serverUS: 50, overheadUS: 200, clientUS: 300}}))
		qs := map[string]levelQuery{"lookup": {serverUS: 200, overheadUS: 200, clientUS: 300}, "insert": {serverUS: 50, overheadUS: 200, clientUS: 300}}
		server := []observe.WindowQuery{{Fingerprint: "lookup", Calls: 1000, TotalExecMS: 300}, {Fingerprint: "insert", Calls: 1000, TotalExecMS: 50}}
		client := []results.WindowQuery{{Fingerprint: "lookup", Calls: 1000, TimedCalls: 1000, TotalMS: 800, MeanMS: 0.8},
			{Fingerprint: "insert", Calls: 1000, TimedCalls: 1000, TotalMS: 550, MeanMS: 0.55}}
		cand = append(cand, withWindow(t, levelRound(t, fmt.Sprintf("candidate-%d", i), uint64(20+i), qs), 10, 2000, server, client))
		u := levelRound(t, fmt.Sprintf("unmatched-%d", i), uint64(20+i), qs)
		ev, _ := observe.Decode(u.Evidence)
		ev.Statements.Window = &observe.StatementsWindow{Queries: server}
		u.Evidence, _ = json.Marshal(ev)
		unmatched = append(unmatched, u)
	}
	rep, err := Runs(base, cand, Options{})
	if err != nil {
		t.Fatal(err)
	}
	lv := rep.Query("lookup").Levels
	if lv == nil || lv.Server == nil || lv.Application == nil {
		t.Fatalf("lookup's levels: %+v", lv)
	}
	if !within(lv.Server.Mean.Ratio, 3, 1.1) || !lv.Server.Window || lv.Judged != LevelServer {
		t.Errorf("server level %.2fx (window %v, judged on %s), want 3x within the window", lv.Server.Mean.Ratio, lv.Server.Window, lv.Judged)
	}
	if !within(lv.Application.Mean.Ratio, 0.8/0.6, 1.05) || !lv.Application.Window {
		t.Errorf("application level %.2fx (window %v), want %.2fx within the window", lv.Application.Mean.Ratio, lv.Application.Window, 0.8/0.6)
	}
	if c := rep.Candidate; c.WindowS != 10 || c.StatementsPerS != 200 || rep.Baseline.WindowS != 0 {
		t.Errorf("candidate's rate %.1f/s over a window of %.1f s (the control's %.1f s), want 200/s over 10 s", c.StatementsPerS, c.WindowS, rep.Baseline.WindowS)
	}
	rep, err = Runs(base, unmatched, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if lv := rep.Query("lookup").Levels; lv == nil || lv.Server == nil || lv.Server.Window || !within(lv.Server.Mean.Ratio, 2, 1.1) {
		t.Errorf("without the replay's window: %+v, want the whole rounds' 2x", lv)
	}
	// A rehearsal without the targets' logs: the results' durations are
	// the round trips themselves, whose level is then the window's too.
	client := func(rs []*Run) []*Run {
		var out []*Run
		for _, r := range rs {
			c := *r
			c.LatencySource, c.Queries, c.ClientQueries = results.LatencyClient, c.ClientQueries, nil
			out = append(out, &c)
		}
		return out
	}
	rep, err = Runs(client(base), client(cand), Options{})
	if err != nil {
		t.Fatal(err)
	}
	lv = rep.Query("lookup").Levels
	if lv == nil || lv.Application == nil || !lv.Application.Window || !within(lv.Application.Mean.Ratio, 0.8/0.6, 1.05) || lv.Judged != LevelServer {
		t.Fatalf("round trips as the results' durations: %+v, want the window's %.2fx beside the server's", lv, 0.8/0.6)
	}
	if ins := rep.Query("insert"); ins.Levels.Application == nil || !within(ins.Levels.Application.Mean.Ratio, 0.55/0.55, 1.05) {
		t.Errorf("insert's application level %+v, want the window's 1x", ins.Levels.Application)
	}
}
