package capturerun

import (
	"context"
	"fmt"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/capture"
	"github.com/pgrehearse/pgrehearse/internal/catalog"
)

// StartStateTimeout bounds each query that reads the start state, each
// table's count included.
const StartStateTimeout = 30 * time.Second

// StartCountBudget bounds all the counts of the start state together:
// the tables left when it is spent are estimated, and say so.
const StartCountBudget = 5 * time.Minute

// StartState reads, through the monitoring connection monitorDSN (a role
// with pg_monitor), the upstream's state at a recording's start: its WAL
// position and clock, version, system identifier, and per table its rows
// and size (catalog.ReadStartState): counted for the tables of at most
// countBelow bytes (catalog.DefaultCountBelow when 0, none when
// negative), each count under StartStateTimeout and all within
// StartCountBudget, estimated beyond. A recording calls it
// just before it starts and gives the result to its writer
// (capture.WriterOptions.StartState), which writes it into the manifest.
// An empty monitorDSN records none.
func StartState(ctx context.Context, monitorDSN string, countBelow int64) (*capture.StartState, error) {
	if monitorDSN == "" {
		return nil, nil
	}
	if countBelow == 0 {
		countBelow = catalog.DefaultCountBelow
	}
	st, err := catalog.ReadStartState(ctx, monitorDSN, catalog.Options{StatementTimeout: StartStateTimeout},
		catalog.StartCount{Below: max(countBelow, 0), Budget: StartCountBudget})
	if err != nil {
		return nil, fmt.Errorf("capture: the starting point cannot be read through the monitoring connection: %w", err)
	}
	return st, nil
}
