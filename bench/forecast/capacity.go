package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pgrehearse/pgrehearse/internal/headroom"
	"github.com/pgrehearse/pgrehearse/internal/judge"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
)

// The capacity (issue 76, item 5): the application run at growing
// arrival rates on the control and on the candidate, each step from the
// restored snapshot, beside headroom's forecast of the same two targets
// from production's log. The truth's capacity is under headroom's own
// SLO (judge.Step), each pgbench transaction type a query, searched by
// headroom's own search; the first k that falls behind is the
// throughput capacity.

// capacityKs are the load factors (times the application's rate) the
// throughput capacity climbs, headroom's own grid; -capacity-max-k ends
// it.
var capacityKs = []float64{1, 1.5, 2, 3, 4, 6, 8, 12, 16}

// Falling behind: the application processed less than behindShare of
// the transactions asked, or its mean schedule lag passed behindLagMS
// (headroom's --max-lag default).
const (
	behindShare = 0.9
	behindLagMS = 100
)

// behindMetric is the break a step that fell behind adds to its SLO
// verdict: it broke, whatever its latencies.
const behindMetric judge.SLOMetric = "behind"

// capacityStep is one run of the application at k times its rate.
type capacityStep struct {
	K     float64 `json:"k"`
	Asked float64 `json:"asked_tps"`
	TPS   float64 `json:"tps"`
	LagMS float64 `json:"mean_lag_ms"`
	// KeptUp: the step did not fall behind (held, the throughput test;
	// its JSON name from before the SLO).
	KeptUp bool `json:"held"`
	// Base marks a round at 1x the SLO's baseline is made of; Verdict
	// is the SLO's judgement of any other step (absent in results from
	// before the SLO, and for the throughput's steps above the search).
	Base    bool               `json:"base,omitempty"`
	Verdict *judge.StepVerdict `json:"verdict,omitempty"`
}

// capacitySide is one side's truth.
type capacitySide struct {
	Side  string         `json:"side"`
	Steps []capacityStep `json:"steps"`
	// HeldK and BrokeK are the throughput capacity: the smallest k
	// whose rounds all fell behind (BrokeK; 0: none up to the largest
	// tried) and the largest below it whose rounds all kept up.
	HeldK  float64 `json:"held_k"`
	BrokeK float64 `json:"broke_k,omitempty"`
	// Truth is the application's capacity under the SLO: headroom's
	// search over the steps (achieved k); TruthTPS the application's
	// transactions per second at its estimate. Absent before the SLO.
	Truth    *headroom.Answer `json:"truth,omitempty"`
	TruthTPS float64          `json:"truth_tps,omitempty"`
	// Headroom is headroom's answer for the side; nil without one.
	Headroom *headroom.Answer `json:"headroom,omitempty"`
}

// capacityResult is the capacity's part of result.json.
type capacityResult struct {
	// SLO is the truth's, headroom's (--slo in -headroom-args, or its
	// default).
	SLO string `json:"slo,omitempty"`
	// ClientsScaled: each step at k ran k times the clients
	// (-capacity-clients).
	ClientsScaled bool           `json:"clients_scaled,omitempty"`
	Sides         []capacitySide `json:"sides"`
	Headroom      []string       `json:"headroom_command"`
	ExitCode      int            `json:"headroom_exit_code"`
}

// withinRatio is the acceptance's 20%: headroom's estimate over the
// truth's between 1/withinRatio and withinRatio (0.80-1.25).
const withinRatio = 1.25

// held says whether a step kept up with what it was asked.
func held(asked, tps, lagMS float64) bool {
	return tps >= behindShare*asked && lagMS <= behindLagMS
}

// stepRunner runs the application once at k times its rate and returns
// the step and what it measured, as the judge reads it.
type stepRunner func(k float64) (capacityStep, judge.Measurement, error)

// capacityTruth is one side's truth: headroom's search (its defaults,
// up to maxK) over steps run, each base round at 1x kept for the
// baseline and every other step judged under slo (judgeStep); then the
// throughput capacity, the ladder climbed on from the search's largest
// k until every round of a k fell behind (throughputCapacity).
func capacityTruth(side string, maxK float64, slo judge.SLO, run stepRunner) (capacitySide, error) {
	cs := capacitySide{Side: side}
	s := headroom.NewSearch(headroom.Search{MaxK: maxK})
	var base []judge.Measurement
	var baseline judge.Baseline
	for {
		k, done := s.Next()
		if done {
			break
		}
		st, m, err := run(k)
		if err != nil {
			return cs, err
		}
		st.K = k
		if k == 1 && len(base) < s.BaseRounds {
			st.Base = true
			base = append(base, m)
			if len(base) == s.BaseRounds {
				baseline = judge.NewBaseline(base, slo)
			}
			s.Record(headroom.Trial{K: 1, Achieved: 1, Held: true, Margin: -1, Bound: judge.BoundTarget})
		} else {
			v := judgeStep(baseline, m, st, slo)
			st.Verdict = &v
			s.Record(headroom.Trial{K: k, Achieved: v.AchievedK, Held: v.Held, Margin: v.Margin, Bound: v.Bound})
		}
		cs.Steps = append(cs.Steps, st)
	}
	a := s.Answer()
	cs.Truth = &a
	cs.TruthTPS = a.Holds * baseline.StatementsPerS
	// The throughput capacity: on up the ladder until every round of a
	// k fell behind.
	for _, k := range capacityKs {
		if _, broke := throughputCapacity(cs.Steps); k > maxK+1e-9 || broke > 0 {
			break
		}
		if slices.ContainsFunc(cs.Steps, func(st capacityStep) bool { return st.K >= k-1e-9 }) {
			continue
		}
		st, _, err := run(k)
		if err != nil {
			return cs, err
		}
		st.K = k
		cs.Steps = append(cs.Steps, st)
	}
	cs.HeldK, cs.BrokeK = throughputCapacity(cs.Steps)
	return cs, nil
}

// throughputCapacity is the smallest k at which every round fell
// behind (0: none), and the largest below it at which every round kept
// up: a k whose rounds disagree, as the search's, is neither.
func throughputCapacity(steps []capacityStep) (heldK, brokeK float64) {
	all := func(k float64, keptUp bool) bool {
		for _, st := range steps {
			if math.Abs(st.K-k) < 1e-9 && st.KeptUp != keptUp {
				return false
			}
		}
		return true
	}
	for _, st := range steps {
		if !st.KeptUp && (brokeK == 0 || st.K < brokeK) && all(st.K, false) {
			brokeK = st.K
		}
	}
	for _, st := range steps {
		if st.KeptUp && (brokeK == 0 || st.K < brokeK) && all(st.K, true) {
			heldK = max(heldK, st.K)
		}
	}
	return heldK, brokeK
}

// judgeStep is headroom's judgement of a step (judge.Step) against the
// side's baseline, and a step that fell behind broke besides, its
// margin how far behind (rate or mean lag) it fell.
func judgeStep(b judge.Baseline, m judge.Measurement, st capacityStep, slo judge.SLO) judge.StepVerdict {
	v := judge.Step(b, m, st.K, slo, 0)
	if !st.KeptUp {
		br := judge.Break{Metric: behindMetric, Base: st.Asked, Value: st.TPS, Limit: behindShare * st.Asked, Margin: 0.01}
		if st.TPS > 0 {
			br.Margin = max(br.Margin, behindShare*st.Asked/st.TPS-1)
		}
		// Or behind by its mean schedule lag: by how much, as a lag.
		br.Margin = max(br.Margin, st.LagMS/behindLagMS-1)
		v.Held = false
		v.Margin = max(v.Margin, br.Margin)
		v.Broken = append(v.Broken, br)
		slices.SortStableFunc(v.Broken, func(a, b judge.Break) int { return cmp.Compare(b.Margin, a.Margin) })
	}
	return v
}

// txSample is one transaction of the application's: its latency less
// its schedule lag and its lag (ms), or failed.
type txSample struct {
	appMS, lagMS float64
	failed       bool
}

// stepMeasurement is a step as the judge reads it: each transaction
// type a query (its latency less lag, the application's level), the
// schedule lag's p99 the replay's lag, the failed transactions the
// errors, over seconds.
func stepMeasurement(txs map[string][]txSample, seconds float64) judge.Measurement {
	m := judge.Measurement{WallSeconds: seconds}
	var lags []float64
	var sum float64
	var timed int64
	for name, ss := range txs {
		var lat []float64
		for _, s := range ss {
			m.Statements++
			if s.failed {
				m.Failed++
				continue
			}
			lat = append(lat, s.appMS)
			lags = append(lags, s.lagMS)
		}
		q := judge.Query{Fingerprint: name, Query: name, Calls: int64(len(ss))}
		q.TimedCalls = int64(len(lat))
		if len(lat) > 0 {
			slices.Sort(lat)
			for _, v := range lat {
				q.TotalMS += v
			}
			q.MeanMS = q.TotalMS / float64(len(lat))
			q.P50MS, q.P95MS, q.P99MS = quantile(lat, 0.5), quantile(lat, 0.95), quantile(lat, 0.99)
		}
		sum += q.TotalMS
		timed += q.TimedCalls
		m.Queries = append(m.Queries, q)
	}
	slices.SortFunc(m.Queries, func(a, b judge.Query) int {
		return cmp.Or(cmp.Compare(b.TotalMS, a.TotalMS), cmp.Compare(a.Fingerprint, b.Fingerprint))
	})
	if seconds > 0 {
		m.StatementsPerS = float64(m.Statements-m.Failed) / seconds
	}
	if m.Statements > 0 {
		m.ErrorRate = 100 * float64(m.Failed) / float64(m.Statements)
	}
	if timed > 0 {
		m.MeanMS = sum / float64(timed)
	}
	if len(lags) > 0 {
		slices.Sort(lags)
		m.LagP99MS = quantile(lags, 0.99)
		// The application's sessions lag when they wait on the target.
		m.LagTargetMS = m.LagP99MS
	}
	return m
}

// quantile is the nearest-rank p quantile of sorted v.
func quantile(sorted []float64, p float64) float64 {
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// stepClients is the application's clients in the capacity's step at k:
// -clients, or with -capacity-clients k times them (rounded up), as a
// fold of k slices replays k times the sessions.
func (o options) stepClients(k float64) int {
	if !o.capacityClients {
		return o.clients
	}
	return int(math.Ceil(k * float64(o.clients)))
}

// capacitySLO is headroom's SLO as -headroom-args gives it (--slo), or
// its default.
func capacitySLO(headroomArgs []string) (judge.SLO, error) {
	text := judge.DefaultSLO
	for i, a := range headroomArgs {
		if v, ok := strings.CutPrefix(a, "--slo="); ok {
			text = v
		} else if (a == "--slo" || a == "-slo") && i+1 < len(headroomArgs) {
			text = headroomArgs[i+1]
		}
	}
	return judge.ParseSLO(text)
}

// capacitySearch runs the truth's search on both sides, then headroom.
func capacitySearch(ctx context.Context, o options, a *application, c change, dir string, clusters []*pgcluster.Cluster, snaps []*pgcluster.Snapshot, scripts []string, prodLog string) (*capacityResult, error) {
	slo, err := capacitySLO(o.headroomArgs)
	if err != nil {
		return nil, err
	}
	res := &capacityResult{SLO: slo.String(), ClientsScaled: o.capacityClients}
	if err := os.MkdirAll(filepath.Join(dir, "capacity"), 0o755); err != nil {
		return nil, err
	}
	txTypes := a.scripts()
	for i, side := range []string{sideControl, sideCand} {
		n := 0
		run := func(k float64) (capacityStep, judge.Measurement, error) {
			n++
			asked := k * o.rate
			say("%s %s: capacity, %s at %.2fx (%.0f transactions/s)", a.name, c.name, side, k, asked)
			if err := clusters[i].Restore(ctx, snaps[i]); err != nil {
				return capacityStep{}, judge.Measurement{}, err
			}
			prefix := filepath.Join(dir, "capacity", fmt.Sprintf("%s-%02d-k%g", side, n, k))
			tps, _, err := runApp(ctx, clusters[i], a, scripts, appRun{clients: o.stepClients(k), threads: o.threads, rate: asked, duration: o.duration, logPrefix: prefix})
			if err != nil {
				return capacityStep{}, judge.Measurement{}, err
			}
			files, err := filepath.Glob(prefix + ".*")
			if err != nil || len(files) == 0 {
				return capacityStep{}, judge.Measurement{}, fmt.Errorf("pgbench wrote no per-transaction log at %s.*", prefix)
			}
			txs := map[string][]txSample{}
			for _, f := range files {
				if err := scanTxLog(f, txTypes, func(name string, appUS, lagUS float64, failed bool) {
					txs[name] = append(txs[name], txSample{appMS: appUS / 1000, lagMS: lagUS / 1000, failed: failed})
				}); err != nil {
					return capacityStep{}, judge.Measurement{}, err
				}
			}
			m := stepMeasurement(txs, o.duration.Seconds())
			st := capacityStep{K: k, Asked: asked, TPS: tps, LagMS: meanLagOf(txs)}
			st.KeptUp = held(asked, tps, st.LagMS)
			return st, m, nil
		}
		cs, err := capacityTruth(side, o.capacityMaxK, slo, run)
		if err != nil {
			return nil, err
		}
		res.Sides = append(res.Sides, cs)
	}
	for i := range clusters {
		if err := clusters[i].Restore(ctx, snaps[i]); err != nil {
			return nil, err
		}
	}
	say("%s %s: capacity, headroom's forecast", a.name, c.name)
	out := filepath.Join(dir, "headroom.json")
	res.Headroom, res.ExitCode, err = runHeadroom(ctx, o, a, dir, clusters, prodLog, out)
	if err != nil {
		return res, err
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return res, err
	}
	var hr headroom.Outcome
	if err := json.Unmarshal(b, &hr); err != nil {
		return res, fmt.Errorf("%s: %w", out, err)
	}
	for _, so := range hr.Sides {
		for i := range res.Sides {
			if string(so.Side) == res.Sides[i].Side {
				res.Sides[i].Headroom = so.Answer
			}
		}
	}
	return res, nil
}

// meanLagOf is the mean schedule lag (ms) of the transactions that
// completed.
func meanLagOf(txs map[string][]txSample) float64 {
	var sum float64
	var n int
	for _, ss := range txs {
		for _, s := range ss {
			if !s.failed {
				sum += s.lagMS
				n++
			}
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

func runHeadroom(ctx context.Context, o options, a *application, dir string, clusters []*pgcluster.Cluster, prodLog, out string) ([]string, int, error) {
	args := []string{"headroom", "--reset", "datadir", "--control-cluster", clusters[0].Dir(), "--candidate-cluster", clusters[1].Dir(),
		"--format", "stderr", "--prefix", logPrefix, "--max-k", fmt.Sprint(o.capacityMaxK), "--json", out}
	args = append(append(append(args, o.poolArgs(a)...), o.headroomArgs...), prodLog)
	// 3: a target below --require; 5: partial. Both answered.
	return runPgrehearse(ctx, o.pgrehearse, dir, "headroom", args, func(code int) bool { return code == 3 || code == 5 })
}

// lines say, per side, the truth's capacity under the SLO beside
// headroom's, their ratio, and the throughput capacity (where the
// application fell behind). A result from before the SLO has only the
// throughput capacity.
func (r *capacityResult) lines() []string {
	var lines []string
	for _, s := range r.Sides {
		tp := fmt.Sprintf("held %gx", s.HeldK)
		if s.HeldK == 0 && s.BrokeK > 1 {
			// Some rounds of 1x (and what lies between) kept up, not
			// all: no k held in every round.
			tp = fmt.Sprintf("held no k in every round, fell behind at %gx", s.BrokeK)
		} else if s.HeldK == 0 {
			tp = "fell behind at 1x"
		} else if s.BrokeK > 0 {
			tp += fmt.Sprintf(", fell behind at %gx", s.BrokeK)
		} else {
			tp += " (the largest tried)"
		}
		fc := answerText(s.Headroom)
		head := fmt.Sprintf("capacity, %s (times the application's rate): ", s.Side)
		if r.ClientsScaled {
			head = fmt.Sprintf("capacity, %s (times the application's rate and clients): ", s.Side)
		}
		if s.Truth == nil {
			lines = append(lines, head+fmt.Sprintf("true %s; headroom %s", tp, fc))
			continue
		}
		line := head + fmt.Sprintf("under %s true %s at %.0f transactions/s, headroom %s", r.SLO, answerText(s.Truth), s.TruthTPS, fc)
		if ratio, ok := capacityRatio(s.Headroom, s.Truth); ok {
			verdict := "outside"
			if ratio >= 1/withinRatio && ratio <= withinRatio {
				verdict = "within"
			}
			line += fmt.Sprintf(": headroom/true %.2f, %s %.2f-%.2f", ratio, verdict, 1/withinRatio, withinRatio)
		} else {
			line += ": no ratio (an answer missing, or only a lower bound)"
		}
		lines = append(lines, line+"; throughput (until it fell behind) "+tp)
	}
	return lines
}

// answerText is an answer's estimate and interval, "at least" when
// nothing broke, "none" without one.
func answerText(h *headroom.Answer) string {
	switch {
	case h == nil:
		return "none"
	case h.AtLeast:
		return fmt.Sprintf("at least %.2fx", h.Lo)
	case h.Mixed:
		return fmt.Sprintf("%.2fx (%.2fx-%.2fx, rounds disagreeing)", h.Holds, h.Lo, h.Hi)
	}
	return fmt.Sprintf("%.2fx (%.2fx-%.2fx)", h.Holds, h.Lo, h.Hi)
}

// capacityRatio is headroom's estimate over the truth's, when both are
// estimates (neither missing nor only a lower bound).
func capacityRatio(hr, truth *headroom.Answer) (float64, bool) {
	if hr == nil || truth == nil || hr.AtLeast || truth.AtLeast || truth.Holds <= 0 {
		return 0, false
	}
	return hr.Holds / truth.Holds, true
}
