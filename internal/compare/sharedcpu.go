package compare

import "github.com/pgrehearse/pgrehearse/internal/observe"

// WarningKind is what a reader must know before trusting a comparison.
type WarningKind string

// Kinds of warnings.
const (
	// WarnMixedLatency: Run measured latency at Source, Other at
	// OtherSource; ratios compare different measurements.
	WarnMixedLatency WarningKind = "mixed_latency"
	// WarnPartial: Run is a partial result.
	WarnPartial WarningKind = "partial"
	// WarnRun: Run's own warning, in Text as the result words it.
	WarnRun WarningKind = "run"
	// WarnSharedCPU: Run replayed at speed 0 on the target's machine;
	// its rate is a lower bound (see sharedCPUWarning).
	WarnSharedCPU WarningKind = "shared_cpu"
	// WarnNoHistograms: a result lacks latency histograms; one-run
	// intervals lack the sampling error of the calls.
	WarnNoHistograms WarningKind = "no_histograms"
	// WarnNoiseNotMeasured: Runs runs a side are too few for rank
	// intervals (MinRuns are needed): changes were judged against the
	// default noise floors.
	WarnNoiseNotMeasured WarningKind = "noise_not_measured"
	// WarnUncodedErrors: Count errors logged without a SQLSTATE (a log
	// prefix without %e) were matched by count to the other side's.
	WarnUncodedErrors WarningKind = "uncoded_errors"
	// WarnStartupSettings: Run's sessions may have run with other
	// startup settings (PGTZ, PGDATESTYLE, PGOPTIONS) than the
	// original's, which a log does not record and which change results
	// silently; Text is the result's note (results.StartupSettings).
	WarnStartupSettings WarningKind = "startup_settings"
)

// Warning is one caveat of a comparison or summary, as data;
// internal/report words it.
type Warning struct {
	Kind WarningKind `json:"kind"`
	// Run names the result the warning is about, when one.
	Run string `json:"run,omitempty"`
	// Text is a result's own warning (WarnRun).
	Text string `json:"text,omitempty"`
	// Other, Source and OtherSource: WarnMixedLatency.
	Other       string        `json:"other,omitempty"`
	Source      LatencySource `json:"source,omitempty"`
	OtherSource LatencySource `json:"other_source,omitempty"`
	// WarnSharedCPU: the replayer's CPU and wall time (0 when
	// unknown), the run's rate and its latency source.
	ClientCPUSeconds float64 `json:"client_cpu_seconds,omitempty"`
	WallSeconds      float64 `json:"wall_seconds,omitempty"`
	StatementsPerS   float64 `json:"statements_per_s,omitempty"`
	// Runs and MinRuns: WarnNoiseNotMeasured.
	Runs    int `json:"runs,omitempty"`
	MinRuns int `json:"min_runs,omitempty"`
	// Count: WarnUncodedErrors; WarnWorkNotCompared, the runs.
	Count int64 `json:"count,omitempty"`
	// PGSS: WarnWorkNotCompared, the state of pg_stat_statements on
	// Run's target (empty: the run had no server-side evidence).
	PGSS observe.ExtensionStatus `json:"pg_stat_statements,omitempty"`
}

// runWarnings are the caveats each run brings: partial, its own
// warnings, a speed-0 replay sharing the target's CPU.
func runWarnings(runs []*Run) []Warning {
	var out []Warning
	for _, r := range runs {
		if r.Partial {
			out = append(out, Warning{Kind: WarnPartial, Run: r.Name()})
		}
		for _, w := range r.Warnings {
			out = append(out, Warning{Kind: WarnRun, Run: r.Name(), Text: w})
		}
		if w, ok := sharedCPUWarning(r); ok {
			out = append(out, w)
		}
		if r.Replay != nil && r.StartupSettings != nil && r.StartupSettings.Suspect {
			st := r.StartupSettings
			out = append(out, Warning{Kind: WarnStartupSettings, Run: r.Name(), Text: st.Note})
		}
	}
	return out
}

// sharedCPUWarning says when a run's rate undersells the target: a replay
// as fast as possible (speed 0) on the target's own machine took CPU from
// the server it measured, so its statements/s is a lower bound of the
// target's, and its latencies carry that competition.
func sharedCPUWarning(r *Run) (Warning, bool) {
	if r.Replay == nil || !r.Unpaced() || !r.TargetLocal {
		return Warning{}, false
	}
	w := Warning{Kind: WarnSharedCPU, Run: r.Name(), Source: r.LatencySource}
	if r.ClientCPUSeconds > 0 && r.WallSeconds > 0 {
		w.ClientCPUSeconds, w.WallSeconds = r.ClientCPUSeconds, r.WallSeconds
	}
	if span := r.SpanSeconds(); span > 0 {
		w.StatementsPerS = float64(r.Statements.Total) / span
	}
	return w, true
}
