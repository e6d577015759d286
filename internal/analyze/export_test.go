package analyze

import (
	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// For the external tests (summary_test.go), which render an analysis with
// internal/report: that package imports this one, so they cannot be
// internal.

// Workload is the tests' generated workload.
var Workload = workload

// NewSliceSource is a Source over events in memory, with line counts.
func NewSliceSource(name string, events []*event.Event, lines results.LineCounts) event.Source {
	return &sliceSource{name: name, events: events, lines: lines}
}
