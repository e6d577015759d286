package compare

import (
	"github.com/pgrehearse/pgrehearse/internal/querystats"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/timeline"
)

// A comparison reads results (package results): the analysis or replay
// of each run. The names below keep this package's vocabulary.
type (
	// Run is one result to compare.
	Run = results.Result
	// Query is one fingerprint's row in a result.
	Query = querystats.Row
	// LatencySource says where a result's durations were measured.
	LatencySource = results.LatencySource
	// Timeline is a run's activity over time.
	Timeline = timeline.JSON
)

// Latency sources, as package results defines them.
const (
	LatencyServerLog        = results.LatencyServerLog
	LatencyClient           = results.LatencyClient
	LatencyPgStatStatements = results.LatencyPgStatStatements
)
