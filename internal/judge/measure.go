package judge

import (
	"cmp"
	"encoding/json"
	"slices"

	"github.com/pgrehearse/pgrehearse/internal/observe"
	"github.com/pgrehearse/pgrehearse/internal/querystats"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// Query is one query's figures in a step.
type Query struct {
	Fingerprint string `json:"fingerprint"`
	Query       string `json:"query"`
	Calls       int64  `json:"calls"`
	querystats.Latency
	// Spread is, in a baseline, each latency's largest over its smallest
	// across the 1x rounds: the noise a step must exceed to break a rule.
	Spread map[SLOMetric]float64 `json:"spread,omitempty"`
	// Waits are the wait events its sessions were seen in, most first
	// (with the replay's evidence).
	Waits []Wait `json:"waits,omitempty"`
}

// Wait is a share of the active sessions' samples in one wait event.
type Wait struct {
	Event string  `json:"event"`
	Share float64 `json:"share"`
}

// Measurement is what one step's replay measured, as judging a step
// (Step, Levels) needs it.
type Measurement struct {
	// Statements are those executed or failed; WallSeconds the replay's
	// wall time, its catalog reading left out.
	Statements  int64   `json:"statements"`
	Failed      int64   `json:"failed"`
	WallSeconds float64 `json:"wall_seconds"`
	// StatementsPerS is Statements over WallSeconds: the load the
	// target took.
	StatementsPerS float64 `json:"statements_per_s"`
	// ErrorRate is Failed over Statements, in percent.
	ErrorRate float64 `json:"error_rate_pct"`
	// MeanMS is the mean latency over every timed call.
	MeanMS float64 `json:"mean_ms"`
	// ServerShare is, when the latencies are the target's own (its
	// log), their total over the replayer's round trips' total: how
	// much of a session's waiting was the target's; 0 when unknown.
	ServerShare float64 `json:"server_share,omitempty"`
	// Lag is the schedule lag p99 in ms, and the lateness split by who
	// caused it (results.LagSources): the target (a session still
	// waiting on its previous statement) or the replayer.
	LagP99MS      float64 `json:"lag_p99_ms"`
	LagTargetMS   float64 `json:"lag_target_ms"`
	LagReplayerMS float64 `json:"lag_replayer_ms"`
	// ReplayerCPU is the replayer's CPU time over the wall time, in
	// cores (1: one core busy all along); TargetLocal says the target
	// shared the replayer's machine.
	ReplayerCPU float64 `json:"replayer_cpu_cores"`
	TargetLocal bool    `json:"target_local,omitempty"`
	// ShardCores is, for a step split in shards, the cores its shards'
	// replayers had, added up (each shard's machine's); 0 for one
	// replayer. ShardsSaturated lists the shards whose own CPU reached
	// ReplayerSaturated of their cores: each of them a bound by itself,
	// whatever the others did.
	ShardCores      int   `json:"shard_cores,omitempty"`
	ShardsSaturated []int `json:"shards_saturated,omitempty"`
	// Queries are the queries by total time, most first (MaxQueries).
	Queries []Query `json:"queries"`
	// Waits are the target's active sessions' wait events, most first,
	// and ActiveSessions their mean number, when observed.
	Waits          []Wait  `json:"waits,omitempty"`
	ActiveSessions float64 `json:"active_sessions,omitempty"`
	// ServerCPUSeconds is the CPU time of the target's server (its
	// postmaster and every child) over the replay, when it runs on this
	// machine; ServerCPU the same over the replay's wall time, in cores.
	ServerCPUSeconds *float64 `json:"server_cpu_s,omitempty"`
	ServerCPU        float64  `json:"server_cpu_cores,omitempty"`
	// ServerTPS is the target's own transactions per second, when
	// observed.
	ServerTPS float64 `json:"server_tps,omitempty"`
	// Partial and Incomplete say the replay did not run whole.
	Partial    bool     `json:"partial,omitempty"`
	Incomplete []string `json:"incomplete,omitempty"`
}

// MaxQueries bounds Measurement.Queries; MaxWaits each list of waits.
const (
	MaxQueries = 20
	MaxWaits   = 5
)

// Measure takes what judging a step needs from a replay's result.
func Measure(res *results.Result) Measurement {
	m := Measurement{
		Statements: res.Statements.Executed + res.Statements.Failed,
		Failed:     res.Statements.Failed,
		Partial:    res.Partial,
		Incomplete: res.Incomplete,
	}
	if rp := res.Replay; rp != nil {
		m.WallSeconds = rp.WallSeconds
		if rp.Sync != nil && rp.Sync.CatalogMS/1000 < m.WallSeconds/2 {
			m.WallSeconds -= rp.Sync.CatalogMS / 1000
		}
		if rp.Lag != nil {
			m.LagP99MS = rp.Lag.P99
		}
		if ls := rp.LagSources; ls != nil {
			m.LagTargetMS, m.LagReplayerMS = ls.TargetMS, ls.ReplayerMS
		}
		if rp.WallSeconds > 0 {
			m.ReplayerCPU = rp.ClientCPUSeconds / rp.WallSeconds
		}
		for _, sh := range rp.Shards {
			m.ShardCores += sh.Cores
			if sh.Cores > 0 && sh.WallSeconds > 0 && sh.CPUSeconds/sh.WallSeconds >= ReplayerSaturated*float64(sh.Cores) {
				m.ShardsSaturated = append(m.ShardsSaturated, sh.Shard)
			}
		}
		m.TargetLocal = rp.TargetLocal
	}
	if m.WallSeconds > 0 {
		m.StatementsPerS = float64(m.Statements) / m.WallSeconds
	}
	if m.Statements > 0 {
		m.ErrorRate = 100 * float64(m.Failed) / float64(m.Statements)
	}
	var total float64
	var timed int64
	for _, q := range res.Queries {
		total += q.TotalMS
		timed += q.TimedCalls
	}
	if timed > 0 {
		m.MeanMS = total / float64(timed)
	}
	if res.LatencySource.ServerSide() && res.Replay != nil && len(res.ClientQueries) > 0 {
		var client float64
		for _, q := range res.ClientQueries {
			client += q.TotalMS
		}
		if client > 0 {
			m.ServerShare = total / client
		}
	}
	qs := slices.Clone(res.Queries)
	slices.SortStableFunc(qs, func(a, b querystats.Row) int { return cmp.Compare(b.TotalMS, a.TotalMS) })
	for i, q := range qs {
		if i == MaxQueries {
			break
		}
		m.Queries = append(m.Queries, Query{Fingerprint: q.Fingerprint, Query: q.Query, Calls: q.Calls, Latency: q.Latency})
	}
	m.addEvidence(res.Evidence)
	return m
}

// addEvidence adds the observer's wait events and throughput.
func (m *Measurement) addEvidence(raw json.RawMessage) {
	if len(raw) == 0 {
		return
	}
	var ev observe.Evidence
	if err := json.Unmarshal(raw, &ev); err != nil {
		return
	}
	if ev.Waits.Rounds > 0 {
		m.ActiveSessions = float64(ev.Waits.Samples) / float64(ev.Waits.Rounds)
	}
	m.Waits = waits(ev.Waits.Events)
	if ev.Throughput != nil {
		m.ServerTPS = ev.Throughput.MeanTPS
	}
	for _, qw := range ev.Waits.ByQuery {
		for i := range m.Queries {
			if m.Queries[i].Fingerprint == qw.Fingerprint {
				m.Queries[i].Waits = waits(qw.Events)
			}
		}
	}
}

func waits(events []observe.WaitCount) []Wait {
	var out []Wait
	for _, w := range events {
		if len(out) == MaxWaits {
			break
		}
		name := w.Type + ":" + w.Event
		if w.Type == w.Event {
			name = w.Type
		}
		out = append(out, Wait{Event: name, Share: w.Share})
	}
	return out
}
