package sweep

import (
	"context"
	"fmt"
	"time"
)

// A Driver generates a workload's load for one step. It is the extension
// point for load generators: Pgbench, and sweep/logdriver's Log (a
// captured log replayed at speed 0 with its sessions multiplied), report
// the same Load, so that the sweep, its observers and its reports need no
// change.
//
// A driver is used by one step at a time.
type Driver interface {
	// Info describes the workload for the results.
	Info() WorkloadInfo
	// Init prepares a fresh database for the workload (pgbench -i for
	// pgbench). The sweep calls it on every throwaway cluster, and on a
	// target only when asked.
	Init(ctx context.Context, dsn string, scale int) error
	// Run generates load with spec.Clients sessions for spec.Warmup,
	// then for the measured spec.Duration, then for a short tail, without
	// reconnecting in between. It calls spec.OnWindow once, as soon as
	// warm-up is over, and measures only the window of spec.Duration that
	// starts then.
	Run(ctx context.Context, spec RunSpec) (Load, error)
}

// RunSpec is one step's load.
type RunSpec struct {
	DSN      string
	Clients  int
	Threads  int           // load generator threads
	Warmup   time.Duration // whole seconds
	Duration time.Duration // whole seconds
	// SamplingRate is the share of transactions whose latency is
	// recorded for the percentiles, in (0, 1].
	SamplingRate float64
	// OnWindow is called from the driver's goroutine when the measured
	// window starts; it must return quickly.
	OnWindow func(start time.Time)
}

// Load is what a driver measured over a step's window.
type Load struct {
	WindowStart    time.Time
	WindowS        float64
	TPS            float64
	Transactions   int64
	Failed         int64
	Latency        Latency
	LatencySamples int64
	// SummaryTPS is the generator's own figure over the whole run, if it
	// has one.
	SummaryTPS float64
	// SamplingRate is the share of transactions the percentiles rest on
	// when the driver decides it rather than RunSpec (0: RunSpec's).
	SamplingRate float64
	// Statements and StatementsPerS count statements when a driver
	// counts them apart from transactions (the log workload); zero
	// otherwise.
	Statements     int64
	StatementsPerS float64
	// Sessions describes the load's sessions when the driver chooses
	// them (the log workload); nil otherwise.
	Sessions *SessionLoad
}

// initDescriber is a Driver that says what its Init does, for the
// progress lines; others are said to run pgbench -i.
type initDescriber interface {
	InitText(scale int) string
}

func initText(d Driver, scale int) string {
	if i, ok := d.(initDescriber); ok {
		return i.InitText(scale)
	}
	return fmt.Sprintf("pgbench -i -s %d", scale)
}

// Tail is how long the load goes on after the window, so that every
// session is still connected, and its server process alive, when the
// window's closing measurements are taken. A driver's Run keeps its load
// going for it.
const Tail = time.Second
