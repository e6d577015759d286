package headroom

import (
	"context"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/judge"
	"github.com/pgrehearse/pgrehearse/internal/querystats"
	"github.com/pgrehearse/pgrehearse/internal/reset"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/rounds"
)

// fakeTarget answers a step as a target whose lookup's p95 grows past
// +50% at kStar (noiseless), and whose load is capped at maxX
// statements per second.
type fakeTarget struct {
	kStar float64
	maxX  float64
}

const fakeRate = 1000 // statements per second at k = 1

func (f fakeTarget) result(k float64) *results.Result {
	x := min(fakeRate*k, f.maxX)
	wall := 10.0
	n := int64(x * wall)
	p95 := 1.0 * math.Exp(math.Log(1.5)*(k-1)/(f.kStar-1))
	return &results.Result{
		Kind:       results.KindReplay,
		Statements: results.StatementCounts{Total: n, Executed: n},
		Queries: []querystats.Row{
			{Fingerprint: "lookup", Query: "SELECT id FROM customers WHERE email = $1", Calls: n / 2,
				Latency: querystats.Latency{TimedCalls: n / 2, TotalMS: float64(n) / 2 * p95 / 2, MeanMS: p95 / 2, P50MS: p95 / 2, P95MS: p95, P99MS: p95 * 1.2}},
			{Fingerprint: "orders", Query: "SELECT sum(total) FROM orders WHERE customer_id = $1", Calls: n / 2,
				Latency: querystats.Latency{TimedCalls: n / 2, TotalMS: float64(n) / 2 * 0.5, MeanMS: 0.5, P50MS: 0.5, P95MS: 0.9, P99MS: 1}},
		},
		Replay: &results.Replay{Speed: k, WallSeconds: wall, ClientCPUSeconds: 0.5},
	}
}

// TestRun: two targets alternate (A B, then B A), each is measured at
// k = 1 first, the weaker breaks lower, its first break is the query
// that slows, and every step is reset. Every candidate step's replay
// synchronizes its sessions by the control's catalog, in the user's
// names of the databases; the control's read their own target's.
func TestRun(t *testing.T) {
	slo, err := judge.ParseSLO(judge.DefaultSLO)
	if err != nil {
		t.Fatal(err)
	}
	targets := map[Side]fakeTarget{Control: {kStar: 6, maxX: 1e9}, Candidate: {kStar: 2.5, maxX: 1e9}}
	var order []Side
	catalogs := map[Side]map[string]int{}
	cfg := Config{
		Targets:     []Target{{Side: Control, DSN: "c", Reset: reset.None{}}, {Side: Candidate, DSN: "d", Reset: reset.None{}}},
		SLO:         slo,
		Search:      Search{MaxK: 16},
		Span:        10 * time.Second,
		Cores:       2,
		DatabaseMap: map[string]string{"shop": "shop_live"},
		Replay: func(ctx context.Context, st StepRun, tg Target) (*results.Result, error) {
			order = append(order, st.Side)
			if catalogs[st.Side] == nil {
				catalogs[st.Side] = map[string]int{}
			}
			catalogs[st.Side][st.CatalogFrom+" "+st.CatalogDatabaseMap["shop"]]++
			return targets[st.Side].result(st.K), nil
		},
	}
	out, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if out.Partial || out.Interrupted {
		t.Errorf("outcome partial %v interrupted %v: %s", out.Partial, out.Interrupted, out.Stopped)
	}
	if len(order) < 4 || order[0] != Control || order[1] != Candidate || order[2] != Candidate || order[3] != Control {
		t.Errorf("order %v, want control, candidate, candidate, control ...", order)
	}
	ctl, cand := out.Side(Control), out.Side(Candidate)
	for _, so := range []*SideOutcome{ctl, cand} {
		a := so.Answer
		kStar := targets[so.Side].kStar
		if a == nil || a.AtLeast || a.Lo > kStar || a.Hi < kStar {
			t.Errorf("%s: answer %+v, want an interval around %g", so.Side, a, kStar)
		}
		if so.FirstBreak == nil || so.FirstBreak.Fingerprint != "lookup" || so.FirstBreak.Metric != judge.SLOMetricP95 {
			t.Errorf("%s: first break %+v, want the lookup's p95", so.Side, so.FirstBreak)
		}
		if !so.Steps[0].Baseline || !so.Steps[1].Baseline || !so.Steps[2].Baseline || so.Steps[3].Verdict == nil {
			t.Errorf("%s: steps %+v: want three baseline rounds first", so.Side, so.Steps[:4])
		}
		if so.USL == nil {
			t.Errorf("%s: no model", so.Side)
		}
		if want := 10 / a.AskedHi; a.AskedHi == 0 || math.Abs(so.StepSeconds-want) > 1e-9 {
			t.Errorf("%s: a step at its answer's upper end (%gx) lasted %g s, want the log's 10 s over it (%g s)", so.Side, a.AskedHi, so.StepSeconds, want)
		}
	}
	if cand.Answer.Hi >= ctl.Answer.Lo {
		t.Errorf("candidate %+v and control %+v overlap", cand.Answer, ctl.Answer)
	}
	if len(catalogs[Control]) != 1 || catalogs[Control][" "] != len(ctl.Steps) || len(catalogs[Candidate]) != 1 || catalogs[Candidate]["c shop_live"] != len(cand.Steps) {
		t.Errorf("catalogs read from (server, its shop): control's steps %v, candidate's %v; want the candidate's all the control's", catalogs[Control], catalogs[Candidate])
	}
}

// TestRunRoundTrips: a target whose load cannot grow past 2.2x, while
// its latency holds and its own time is a fifth of the sessions' round
// trips, is bound by the sessions' round trips: at least about 2.2x,
// never a break. The same with the target's time most of the round
// trips is the target's limit, a break.
func TestRunRoundTrips(t *testing.T) {
	slo, _ := judge.ParseSLO(judge.DefaultSLO)
	tg := fakeTarget{kStar: 1e6, maxX: 2.2 * fakeRate}
	run := func(share float64) *SideOutcome {
		out, err := Run(context.Background(), Config{
			Targets: []Target{{Side: Control, DSN: "c", Reset: reset.None{}}},
			SLO:     slo, Span: 10 * time.Second, Cores: 2,
			Replay: func(ctx context.Context, st StepRun, _ Target) (*results.Result, error) {
				res := tg.result(st.K)
				res.LatencySource = results.LatencyServerLog
				res.ClientQueries = []querystats.Row{{Fingerprint: "all", Latency: querystats.Latency{TotalMS: 0}}}
				for _, q := range res.Queries {
					res.ClientQueries[0].TotalMS += q.TotalMS / share
				}
				if st.K*fakeRate > tg.maxX {
					res.Replay.Lag = &results.Distribution{Count: 100, P99: 500}
					res.Replay.LagSources = &results.LagSources{TargetMS: 5000}
				}
				return res, nil
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		return out.Side(Control)
	}
	so := run(0.2)
	if a := so.Answer; a == nil || !a.AtLeast || a.Bound != judge.BoundRoundTrips || math.Abs(a.Lo-2.2) > 0.05 || so.FirstBreak != nil {
		t.Errorf("answer %+v, first break %+v: want at least 2.2x bound by round trips", a, so.FirstBreak)
	}
	so = run(0.9)
	if a := so.Answer; a == nil || a.AtLeast || a.Bound != "" || so.FirstBreak == nil || so.FirstBreak.Metric != judge.SLOMetricLag ||
		so.FirstBreak.Cause == nil || so.FirstBreak.Cause.Fingerprint != "lookup" {
		t.Errorf("answer %+v, first break %+v: want a break by lag, caused by the lookup", a, so.FirstBreak)
	}
}

// TestRunReplayer: a replayer whose CPU is saturated is named as the
// limit, not the target.
func TestRunReplayer(t *testing.T) {
	slo, _ := judge.ParseSLO(judge.DefaultSLO)
	tg := fakeTarget{kStar: 1e6, maxX: 3.1 * fakeRate}
	out, err := Run(context.Background(), Config{
		Targets: []Target{{Side: Control, DSN: "c", Reset: reset.None{}}},
		SLO:     slo, Span: 10 * time.Second, Cores: 2,
		Replay: func(ctx context.Context, st StepRun, _ Target) (*results.Result, error) {
			res := tg.result(st.K)
			if st.K*fakeRate > tg.maxX {
				res.Replay.ClientCPUSeconds = 1.9 * res.Replay.WallSeconds
			}
			return res, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	so := out.Side(Control)
	if so.Answer == nil || so.Answer.Bound != judge.BoundReplayer || !so.Answer.AtLeast || so.BoundWhy == "" {
		t.Errorf("answer %+v (%s): want the replayer named", so.Answer, so.BoundWhy)
	}
}

// TestRunInterrupted: Ctrl-C during a step keeps the steps finished,
// marks the outcome partial and interrupted, and answers from what ran.
func TestRunInterrupted(t *testing.T) {
	slo, ctx, cancel, tg := interruptible(t)
	steps := 0
	out, err := Run(ctx, Config{
		Targets: []Target{{Side: Control, DSN: "c", Reset: reset.None{}}},
		SLO:     slo, Span: 10 * time.Second, Cores: 2, Search: Search{BaseRounds: 2},
		Replay: func(ctx context.Context, st StepRun, _ Target) (*results.Result, error) {
			steps++
			if steps == 5 {
				cancel()
				res := tg.result(st.K)
				res.Partial = true
				return res, nil
			}
			return tg.result(st.K), nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	so := out.Side(Control)
	if !out.Interrupted || !out.Partial || len(so.Steps) != 5 || so.Steps[4].Status != StatusInterrupted || so.Answer == nil || !so.Answer.AtLeast || so.Answer.Lo != 2 {
		t.Errorf("interrupted %v partial %v, %d steps, answer %+v: want 4 steps kept, at least 2x", out.Interrupted, out.Partial, len(so.Steps), so.Answer)
	}
}

// TestRunInterruptedBetweenSteps: Ctrl-C between two steps starts no
// further step, keeps every step finished as done, and says before which
// step the run stopped.
func TestRunInterruptedBetweenSteps(t *testing.T) {
	slo, ctx, cancel, tg := interruptible(t)
	steps := 0
	out, err := Run(ctx, Config{
		Targets: []Target{{Side: Control, DSN: "c", Reset: reset.None{}}, {Side: Candidate, DSN: "d", Reset: reset.None{}}},
		SLO:     slo, Span: 10 * time.Second, Cores: 2, Search: Search{BaseRounds: 2},
		Replay: func(ctx context.Context, st StepRun, _ Target) (*results.Result, error) {
			steps++
			return tg.result(st.K), nil
		},
		Progress: func(p Progress) {
			if p.Phase == rounds.PhaseDone && p.Step.Seq == 3 {
				cancel()
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	var done []Side
	for _, so := range out.Sides {
		for _, st := range so.Steps {
			if st.Status != StatusDone {
				t.Errorf("step %d: %s, want done", st.Seq, st.Status)
			}
			done = append(done, st.Side)
		}
	}
	if !out.Interrupted || !out.Partial || steps != 3 || len(done) != 3 || out.Stopped != "interrupted before step 4" {
		t.Errorf("interrupted %v partial %v, %d replays, %d steps kept, stopped %q: want 3 kept, interrupted before step 4", out.Interrupted, out.Partial, steps, len(done), out.Stopped)
	}
	// A B, then B A: the third step is the candidate's.
	if c, d := len(out.Side(Control).Steps), len(out.Side(Candidate).Steps); c != 1 || d != 2 {
		t.Errorf("control %d steps, candidate %d: want 1 and 2 (A B B)", c, d)
	}
}

// TestRunBudget: no step starts that would end past the budget. Each
// step takes the log's span at its k, on synctest's clock.
func TestRunBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slo, _ := judge.ParseSLO(judge.DefaultSLO)
		tg := fakeTarget{kStar: 6, maxX: 1e9}
		out, err := Run(context.Background(), Config{
			Targets: []Target{{Side: Control, DSN: "c", Reset: reset.None{}}},
			SLO:     slo, Span: time.Hour, Cores: 2, Budget: 150 * time.Minute, Search: Search{BaseRounds: 2},
			Replay: func(ctx context.Context, st StepRun, _ Target) (*results.Result, error) {
				time.Sleep(time.Duration(float64(time.Hour) / st.K))
				return tg.result(st.K), nil
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		// 1h + 1h, then 40 min for 1.5x would pass 150 min.
		if so := out.Side(Control); !out.Partial || len(so.Steps) != 2 || out.Stopped == "" {
			t.Errorf("partial %v, %d steps, stopped %q: want the two baseline rounds only", out.Partial, len(so.Steps), out.Stopped)
		}
	})
}

// releaseChecker is a reset whose Release fails when its context is done.
type releaseChecker struct{ reset.None }

func (releaseChecker) Release(ctx context.Context, _ reset.State) error { return ctx.Err() }

// TestRunReleaseAfterLongStep: a step longer than the cleanup timeout
// still releases what its reset made, with the whole timeout from when
// the release starts (a 60 s step once found its release's time gone).
func TestRunReleaseAfterLongStep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slo, _ := judge.ParseSLO(judge.DefaultSLO)
		tg := fakeTarget{kStar: 6, maxX: 1e9}
		out, err := Run(context.Background(), Config{
			Targets: []Target{{Side: Control, DSN: "c", Reset: releaseChecker{}}},
			SLO:     slo, Span: 2 * time.Minute, Cores: 2, CleanupTimeout: time.Minute, Search: Search{MaxK: 2},
			Replay: func(ctx context.Context, st StepRun, _ Target) (*results.Result, error) {
				time.Sleep(time.Duration(float64(2*time.Minute) / st.K))
				return tg.result(st.K), nil
			},
		})
		if err != nil || out.Stopped != "" {
			t.Fatalf("stopped %q: %v", out.Stopped, err)
		}
	})
}

// TestRunCulprit: the case. From 2x, an INSERT that took a
// twentieth of the time at 1x stalls on 3% of its calls (its mean 17x,
// seconds added a run), while a range read of the same table, where the
// sessions spend the most time, grows 25% at its p95 and no rule breaks
// but the lag's. The first to break names the INSERT, the query that
// added the most time over its own 1x (as rehearse ranks it), and the
// range read beside it as where the sessions waited.
func TestRunCulprit(t *testing.T) {
	slo, _ := judge.ParseSLO(judge.DefaultSLO)
	result := func(k float64) *results.Result {
		const wall = 10.0
		n := int64(160 * k * wall)
		ins, rng := n*3/4, n/4
		insMean, rngMean, rngP95 := 0.2, 12.5, 20.0
		res := &results.Result{Kind: results.KindReplay, Replay: &results.Replay{Speed: k, WallSeconds: wall, ClientCPUSeconds: 0.5}}
		if k >= 2 {
			insMean, rngMean, rngP95 = 3.4, 13, 25
			res.Replay.Lag = &results.Distribution{Count: 100, P99: 500}
			res.Replay.LagSources = &results.LagSources{TargetMS: 5000}
		}
		res.Statements = results.StatementCounts{Total: n, Executed: n}
		res.Queries = []querystats.Row{
			{Fingerprint: "range", Query: "SELECT id, kind FROM events WHERE account_id = $1 AND created_at > $2", Calls: rng,
				Latency: querystats.Latency{TimedCalls: rng, TotalMS: float64(rng) * rngMean, MeanMS: rngMean, P50MS: 12, P95MS: rngP95, P99MS: rngP95 * 1.1}},
			{Fingerprint: "insert", Query: "INSERT INTO events (account_id, kind, payload) VALUES ($1, $2, $3)", Calls: ins,
				Latency: querystats.Latency{TimedCalls: ins, TotalMS: float64(ins) * insMean, MeanMS: insMean, P50MS: 0.2, P95MS: 0.4, P99MS: 100}},
		}
		return res
	}
	out, err := Run(context.Background(), Config{
		Targets: []Target{{Side: Candidate, DSN: "d", Reset: reset.None{}}},
		SLO:     slo, Search: Search{MaxK: 4}, Span: 10 * time.Second, Cores: 2,
		Replay: func(ctx context.Context, st StepRun, _ Target) (*results.Result, error) { return result(st.K), nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	fb := out.Side(Candidate).FirstBreak
	if fb == nil || fb.Metric != judge.SLOMetricLag || fb.Cause == nil {
		t.Fatalf("first break %+v: want a lag break with its cause", fb)
	}
	if c := fb.Cause; c.Fingerprint != "insert" || c.Metric != judge.SLOMetricMean || c.AddedMS <= 0 {
		t.Errorf("cause %+v: want the INSERT's mean, with the time it added", c)
	}
	if w := fb.WaitedMost; w == nil || w.Fingerprint != "range" {
		t.Errorf("waited most %+v: want the range read", w)
	}
}

// interruptible is what the tests of an interrupted run share: the
// default SLO, a context the test cancels (and that is cancelled when it
// ends), and a target that holds up to 6x.
func interruptible(t *testing.T) (judge.SLO, context.Context, context.CancelFunc, fakeTarget) {
	slo, _ := judge.ParseSLO(judge.DefaultSLO)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return slo, ctx, cancel, fakeTarget{kStar: 6, maxX: 1e9}
}
