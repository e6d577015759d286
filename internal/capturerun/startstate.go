package capturerun

import (
	"context"
	"fmt"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/capture"
	"github.com/pgrehearse/pgrehearse/internal/catalog"
)

// StartStateTimeout bounds each query that reads the start state.
const StartStateTimeout = 30 * time.Second

// StartState reads, through the monitoring connection monitorDSN (a role
// with pg_monitor), the upstream's state at a recording's start: its WAL
// position and clock, version, system identifier, and per table its
// estimated rows and size (catalog.ReadStartState). A recording calls it
// just before it starts and gives the result to its writer
// (capture.WriterOptions.StartState), which writes it into the manifest.
// An empty monitorDSN records none.
func StartState(ctx context.Context, monitorDSN string) (*capture.StartState, error) {
	if monitorDSN == "" {
		return nil, nil
	}
	st, err := catalog.ReadStartState(ctx, monitorDSN, catalog.Options{StatementTimeout: StartStateTimeout})
	if err != nil {
		return nil, fmt.Errorf("capture: the starting point cannot be read through the monitoring connection: %w", err)
	}
	return st, nil
}
