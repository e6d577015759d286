package judge

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/querystats"
)

func measurement(stmtsPerS, lookupP95, beginP95 float64) Measurement {
	return Measurement{StatementsPerS: stmtsPerS, Queries: []Query{
		{Fingerprint: "lookup", Query: "SELECT id FROM customers WHERE email = $1",
			Latency: querystats.Latency{TimedCalls: 500, TotalMS: 900, P95MS: lookupP95, MeanMS: lookupP95 / 2}},
		{Fingerprint: "begin", Query: "BEGIN", Latency: querystats.Latency{TimedCalls: 500, TotalMS: 100, P95MS: beginP95, MeanMS: beginP95 / 2}},
	}}
}

// TestStep: a latency rule's limit grows by the spread of the 1x
// rounds; BEGIN is not judged; a lag of the replayer's own names the
// replayer; a lag waiting on a slower target breaks, naming the query.
func TestStep(t *testing.T) {
	slo, err := ParseSLO(DefaultSLO)
	if err != nil {
		t.Fatal(err)
	}
	slo.MaxLag = 100 * time.Millisecond
	// The two 1x rounds differ by 1.2x, as three would by 1.2^1.5: the
	// limit is 1.5 x 1.31.
	b := NewBaseline([]Measurement{measurement(100, 2, 0.5), measurement(100, 2.4, 0.5)}, slo)
	if len(b.Queries) != 1 || b.Queries[0].Fingerprint != "lookup" || math.Abs(b.Queries[0].Spread[SLOMetricP95]-1.315) > 0.001 {
		t.Fatalf("baseline %+v: want the lookup alone judged, its spread 1.315", b.Queries)
	}
	base := b.Queries[0].P95MS // 2.2
	for _, tc := range []struct {
		name  string
		m     Measurement
		k     float64
		held  bool
		bound Bound
		rule  SLOMetric
	}{
		{"within the limit and its noise", measurement(200, base*1.9, 5), 2, true, BoundTarget, ""},
		{"beyond", measurement(200, base*2.1, 0.5), 2, false, BoundTarget, SLOMetricP95},
		{"the replayer late", func() Measurement {
			m := measurement(150, base, 0.5)
			m.LagP99MS, m.LagReplayerMS, m.LagTargetMS = 400, 900, 100
			return m
		}(), 2, true, BoundReplayer, ""},
		{"the target late, slower", func() Measurement {
			m := measurement(190, base*1.3, 0.5)
			m.LagP99MS, m.LagReplayerMS, m.LagTargetMS = 400, 10, 900
			return m
		}(), 2, false, BoundTarget, SLOMetricLag},
		{"the round trips, not the target's time", func() Measurement {
			m := measurement(150, base, 0.5)
			m.LagP99MS, m.LagTargetMS, m.ServerShare = 400, 900, 0.2
			return m
		}(), 2, true, BoundRoundTrips, ""},
		{"shard processes' CPU, added up, at this machine's cores", func() Measurement {
			m := measurement(200, base, 0.5)
			m.ReplayerCPU, m.ShardCores = 1.8, 4
			return m
		}(), 2, true, BoundReplayer, ""},
		{"shard processes' CPU, added up, below this machine's cores", func() Measurement {
			m := measurement(200, base, 0.5)
			m.ReplayerCPU, m.ShardCores = 0.9, 4
			return m
		}(), 2, true, BoundTarget, ""},
		{"one shard's replayer saturated", func() Measurement {
			m := measurement(200, base, 0.5)
			m.ReplayerCPU, m.ShardCores, m.ShardsSaturated = 0.9, 4, []int{1}
			return m
		}(), 2, true, BoundReplayer, ""},
	} {
		v := Step(b, tc.m, tc.k, slo, 2)
		if v.Held != tc.held || v.Bound != tc.bound || (tc.rule != "" && (len(v.Broken) == 0 || v.Broken[0].Metric != tc.rule)) {
			t.Errorf("%s: %+v", tc.name, v)
		}
		if tc.rule == SLOMetricLag && (v.Broken[0].Cause == nil || v.Broken[0].Cause.Fingerprint != "lookup") {
			t.Errorf("%s: the lag's cause %+v, want the lookup", tc.name, v.Broken[0].Cause)
		}
	}
	// Shards of one core each (their cores added up, 2, below this
	// machine's 8): 1.8 cores of theirs is saturated.
	m := measurement(200, base, 0.5)
	m.ReplayerCPU, m.ShardCores = 1.8, 2
	if v := Step(b, m, 2, slo, 8); v.Bound != BoundReplayer || !strings.Contains(v.Why, "1.80 of 2 cores") {
		t.Errorf("two one-core shards at 1.8 cores: %+v", v)
	}
}

// TestTransactionControl: what opens a transaction or marks a savepoint is
// not judged, as the one classifier says; COMMIT and statements are.
func TestTransactionControl(t *testing.T) {
	for q, want := range map[string]bool{
		"BEGIN": true, "begin isolation level serializable": true, "START TRANSACTION READ ONLY": true,
		"SAVEPOINT sp1": true, "RELEASE SAVEPOINT sp1": true, "ROLLBACK TO SAVEPOINT sp1": true,
		"COMMIT": false, "ROLLBACK": false, "SELECT 1": false, "UPDATE t SET v = $1 WHERE id = $2": false,
		"BEGIN; SELECT 1": false, "not sql": false,
		// A text that begins like one: a prefix test once said yes.
		"BEGINNING_TABLE_SCAN()": false,
	} {
		if got := transactionControl(q); got != want {
			t.Errorf("%q: %v, want %v", q, got, want)
		}
	}
}
