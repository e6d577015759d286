package sweep

import (
	"time"

	"github.com/pgrehearse/pgrehearse/internal/judge"
)

// Result is a sweep's outcome, encoded as the JSON of docs/sweep-json.md.
type Result struct {
	Kind     string       `json:"kind"` // always "sweep"
	Version  int          `json:"version"`
	Started  time.Time    `json:"started"`
	Workload WorkloadInfo `json:"workload"`
	// Target is "throwaway" or the target's connection string without
	// its password.
	Target string `json:"target"`
	// ClientCPUs is the number of CPUs of the machine running the load
	// generator, which bounds its threads.
	ClientCPUs int `json:"client_cpus"`
	// DriverSharesServer: the load generator ran on the server's machine
	// (a throwaway cluster, or a target on this machine), so the CPU it
	// used was taken from the server, and the knee and the cliff may be
	// the driver's rather than the server's.
	DriverSharesServer bool         `json:"driver_shares_server,omitempty"`
	Plan               PlanInfo     `json:"plan"`
	Configs            []ConfigRun  `json:"configs"`
	Comparison         []Comparison `json:"comparison,omitempty"`
	// NoiseUnmeasured: configurations were compared with one step per
	// client count, so the noise between steps was not measured and
	// nothing that needs it is claimed (see Judge).
	NoiseUnmeasured bool `json:"noise_unmeasured,omitempty"`
	// Partial is set when the sweep stopped early (Ctrl-C or an error):
	// the steps present are complete, later ones are missing.
	Partial bool `json:"partial,omitempty"`
}

// WorkloadInfo describes the load generator.
type WorkloadInfo struct {
	Kind    string `json:"kind"`              // "pgbench" or "log"
	Builtin string `json:"builtin,omitempty"` // -b name
	Script  string `json:"script,omitempty"`  // -f file
	Mode    string `json:"mode"`              // -M simple, extended or prepared; "as logged" for a log
	Scale   int    `json:"scale,omitempty"`   // pgbench -i scale, when initialized

	// A log workload (kind "log"): the file, its format, the setup file,
	// and what a first read found: its sessions, the most of them open
	// at once (log_concurrency), its statements and transactions, and
	// the log time it spans.
	Log             string  `json:"log,omitempty"`
	Format          string  `json:"format,omitempty"`
	Setup           string  `json:"setup,omitempty"`
	LogSessions     int     `json:"log_sessions,omitempty"`
	LogConcurrency  int     `json:"log_concurrency,omitempty"`
	LogStatements   int64   `json:"log_statements,omitempty"`
	LogTransactions int64   `json:"log_transactions,omitempty"`
	LogSpanS        float64 `json:"log_span_s,omitempty"`
}

// SessionLoad is how a log workload's step reached its client count.
type SessionLoad struct {
	// LogConcurrency is the most sessions the log has open at once; the
	// step replays the sessions of LanesUsed of those "lanes", each
	// Multiply times, for Planned sessions at once at the log's peak.
	LogConcurrency int `json:"log_concurrency"`
	LanesUsed      int `json:"lanes_used"`
	Multiply       int `json:"multiply"`
	Planned        int `json:"planned"`
	// MeanOpen and MaxOpen are the connections the replay had open,
	// sampled every 10 ms over the window.
	MeanOpen float64 `json:"mean_open"`
	MaxOpen  int     `json:"max_open"`
	// Passes counts the replays of the log started in the step, warm-up
	// and tail included (each pass opens new connections).
	Passes int `json:"passes"`
	// Executions are the query strings and extended-protocol executions
	// run in the window (a string may hold several statements).
	Executions int64 `json:"executions"`
	// ErrorsBySQLState counts the window's failed executions by SQLSTATE.
	ErrorsBySQLState map[string]int64 `json:"errors_by_sqlstate,omitempty"`
}

// PlanInfo is what the sweep was asked to do.
type PlanInfo struct {
	Clients    []int   `json:"clients"`
	WarmupS    float64 `json:"warmup_s"`
	DurationS  float64 `json:"duration_s"`
	CliffRatio float64 `json:"cliff_ratio"`
	// Repeat is the steps run at each client count of each
	// configuration (1 when absent): their spread is the noise that the
	// peak, the knee, the cliff and the comparison are judged against.
	Repeat int    `json:"repeat,omitempty"`
	Order  string `json:"order"` // how configurations alternate
}

// ConfigRun is one configuration's curve.
type ConfigRun struct {
	Name     string            `json:"name"`
	Settings map[string]string `json:"settings"`
	// Effective holds each setting as the server reported it during the
	// sweep (current_setting), which shows a setting that did not take.
	Effective map[string]string `json:"effective_settings,omitempty"`
	Steps     []Step            `json:"steps"`
	// Knee is where more clients stop buying throughput (FindKnee);
	// Peak is the highest TPS measured, which on a flat curve is noise.
	Knee  *Knee  `json:"knee"`
	Peak  *Peak  `json:"peak"`
	Cliff *Cliff `json:"cliff"`
}

// Step is one client count on one configuration.
type Step struct {
	Clients int `json:"clients"`
	// Round is the step's repeat at its client count, from 1; absent
	// when every client count ran once.
	Round   int       `json:"round,omitempty"`
	Threads int       `json:"threads"`
	Started time.Time `json:"started"`
	// WindowS is the length of the measured window in seconds.
	WindowS      float64 `json:"window_s"`
	TPS          float64 `json:"tps"`
	Transactions int64   `json:"transactions"`
	Failed       int64   `json:"failed"`
	Latency      Latency `json:"latency_ms"`
	// LatencySamples is how many transactions the percentiles rest on,
	// out of the window's Transactions, at SamplingRate.
	LatencySamples int64   `json:"latency_samples"`
	SamplingRate   float64 `json:"sampling_rate"`
	// ServerCPUS is the CPU time of all server processes over the window
	// in seconds; nil when unknown (a remote server).
	ServerCPUS  *float64 `json:"server_cpu_s"`
	CPUPerTxMS  *float64 `json:"cpu_per_tx_ms"`
	WaitSamples int      `json:"wait_samples"` // sampler rounds in the window
	WaitEvents  []Wait   `json:"wait_events"`
	HotQueries  []Hot    `json:"hot_queries"`
	// PgbenchTPS is pgbench's own summary figure, over warm-up, window
	// and tail: a cross-check of TPS. For a log workload, the same
	// figure from the replay.
	PgbenchTPS float64 `json:"pgbench_tps"`
	// Log workloads only: statements (a transaction may hold several)
	// in the window and per second, and how the sessions were made.
	Statements     int64        `json:"statements,omitempty"`
	StatementsPerS float64      `json:"statements_per_s,omitempty"`
	Sessions       *SessionLoad `json:"sessions,omitempty"`
}

// Latency is in milliseconds.
type Latency struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
}

// Wait is how often backends were seen in one wait event.
type Wait struct {
	Type    string `json:"type"`
	Event   string `json:"event"`
	Samples int    `json:"samples"`
	// Share is Samples over all backend samples of the step.
	Share float64 `json:"share"`
}

// Hot is one of the most called query ids over a step's window.
type Hot struct {
	QueryID    int64   `json:"queryid"`
	Query      string  `json:"query"`
	CallsPerS  float64 `json:"calls_per_s"`
	PlansPerS  float64 `json:"plans_per_s"`
	ShareCalls float64 `json:"share_of_calls"`
}

// Knee is where more clients stop buying throughput (see FindKnee): the
// client count with the highest TPS over mean latency, medians over its
// repeats; from Clients to NextClients TPS grew by the factor TPSGrowth
// and mean latency by LatencyGrowth. Found is false when no later client
// count's TPS over latency is lower beyond noise; the other fields but
// Lo and Hi are then empty. Lo and Hi are the client counts whose TPS
// over latency cannot be told from the knee's (without Found: where the
// knee may still be, from the highest TPS over latency measured up to the
// last client count). UpTo is the highest client count measured.
type Knee struct {
	Found         bool    `json:"found"`
	Clients       int     `json:"clients,omitempty"`
	TPS           float64 `json:"tps,omitempty"`
	MeanMS        float64 `json:"mean_ms,omitempty"`
	NextClients   int     `json:"next_clients,omitempty"`
	TPSGrowth     float64 `json:"tps_growth,omitempty"`
	LatencyGrowth float64 `json:"latency_growth,omitempty"`
	Lo            int     `json:"lo_clients,omitempty"`
	Hi            int     `json:"hi_clients,omitempty"`
	UpTo          int     `json:"up_to_clients"`
	// Indistinct names another configuration whose curve shows no knee
	// and cannot be told from this one at any client count (TPS, or TPS
	// over latency, beyond the noise): this curve's knee at Clients is
	// then not claimed (Found false), on either side.
	Indistinct string `json:"indistinct_from,omitempty"`
}

// Peak is the client count with the highest median TPS; Lo and Hi the
// client counts whose TPS cannot be told from it (the whole sweep, on a
// flat curve); Steps the repeats it rests on.
type Peak struct {
	Clients int     `json:"clients"`
	TPS     float64 `json:"tps"`
	Lo      int     `json:"lo_clients,omitempty"`
	Hi      int     `json:"hi_clients,omitempty"`
	Steps   int     `json:"steps,omitempty"`
}

// Cliff is where TPS falls below Ratio times the peak's after the peak
// (see FindCliff): Clients is the first client count whose every step is
// below it beyond the noise, with its median TPS and RatioToPeak; Lo and
// Hi bound the break (client counts, interpolated) and Estimate is where
// the TPS crosses the ratio. Found is false when no client count after
// the peak is below it beyond the noise; UpTo is the highest client
// count measured.
type Cliff struct {
	Found       bool    `json:"found"`
	Clients     int     `json:"clients,omitempty"`
	TPS         float64 `json:"tps,omitempty"`
	RatioToPeak float64 `json:"ratio_to_peak,omitempty"`
	Lo          float64 `json:"lo_clients,omitempty"`
	Hi          float64 `json:"hi_clients,omitempty"`
	Estimate    float64 `json:"estimate_clients,omitempty"`
	Ratio       float64 `json:"threshold"`
	UpTo        int     `json:"up_to_clients"`
	// Indistinct names another configuration whose curve shows no cliff
	// and cannot be told from this one at any client count: this
	// curve's cliff at Clients is then not claimed (Found false).
	Indistinct string `json:"indistinct_from,omitempty"`
}

// Comparison is one client count across configurations: every
// configuration's median TPS and p95 over its repeats, its ratio to the
// first configuration's, and that ratio's interval (Change), Same when it
// cannot be told from noise ("~").
type Comparison struct {
	Clients  int                        `json:"clients"`
	Baseline string                     `json:"baseline"`
	TPS      map[string]float64         `json:"tps"`
	Ratio    map[string]float64         `json:"ratio"`
	Change   map[string]judge.CurveDiff `json:"change,omitempty"`
	P95      map[string]float64         `json:"p95_ms"`
}
