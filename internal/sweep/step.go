package sweep

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrehearse/pgrehearse/internal/catalog"
	"github.com/pgrehearse/pgrehearse/internal/observe"
)

// sampleEvery is the wait event sampling period.
const sampleEvery = 100 * time.Millisecond

// runStep runs one step and measures the server over its window.
func runStep(ctx context.Context, opts *Options, s *server, clients int, rate float64) (Step, error) {
	st := Step{Clients: clients, Threads: min(clients, runtime.NumCPU()), Started: time.Now().UTC().Truncate(time.Millisecond),
		SamplingRate: rate, WaitEvents: []Wait{}, HotQueries: []Hot{}}
	p, err := newWindowProbe(ctx, opts, s)
	if err != nil {
		return st, err
	}
	defer p.conn.Close(context.Background())
	load, err := driveStep(ctx, opts, p, RunSpec{
		DSN: s.dsn, Clients: clients, Threads: st.Threads,
		Warmup: opts.Warmup, Duration: opts.Duration, SamplingRate: rate,
	})
	if err != nil {
		return st, err
	}
	st.setLoad(load)
	p.report(ctx, &st)
	return st, nil
}

// driveStep runs the driver and closes the measured window on time, the
// load going on for its tail: it returns once both are over. The window
// opens from the driver's goroutine (RunSpec.OnWindow), which starts the
// probe's readings; they end here when the window closes.
func driveStep(ctx context.Context, opts *Options, p *windowProbe, spec RunSpec) (Load, error) {
	opened := make(chan struct{}, 1)
	spec.OnWindow = func(at time.Time) {
		p.start(ctx, at)
		opened <- struct{}{}
	}
	type ran struct {
		load Load
		err  error
	}
	ranCh := make(chan ran, 1)
	go func() {
		l, err := opts.Driver.Run(ctx, spec)
		ranCh <- ran{l, err}
	}()
	select {
	case <-opened:
		var r ran
		finished := false
		select {
		case <-time.After(time.Until(p.at.Add(opts.Duration))):
		case r = <-ranCh:
			// Failed, interrupted, or (on a starved machine whose
			// progress report came late) done a little early: the
			// window closes now, and its figures are pgbench's.
			finished = true
		}
		p.stop(ctx)
		if !finished {
			r = <-ranCh
		}
		return r.load, r.err
	case r := <-ranCh:
		if r.err == nil {
			r.err = errors.New("the load ended without opening the measured window")
		}
		return r.load, r.err
	}
}

// setLoad copies the driver's figures of the window into st.
func (st *Step) setLoad(load Load) {
	st.WindowS = load.WindowS
	st.TPS = load.TPS
	st.Transactions = load.Transactions
	st.Failed = load.Failed
	st.Latency = load.Latency
	st.LatencySamples = load.LatencySamples
	st.PgbenchTPS = load.SummaryTPS
	if load.SamplingRate > 0 {
		st.SamplingRate = load.SamplingRate
	}
	st.Statements, st.StatementsPerS, st.Sessions = load.Statements, load.StatementsPerS, load.Sessions
}

// windowProbe measures the server over a step's window on a connection
// of its own: the server's CPU time (when it runs here), its wait states
// and its pg_stat_statements counts, read when the window opens (start)
// and closes (stop).
type windowProbe struct {
	opts  *Options
	s     *server
	conn  *pgx.Conn
	stmts *observe.StatementsReader // nil without pg_stat_statements
	// tracked is why pg_stat_statements counts the sampler's own
	// statements, nil when it does not (catalog.Untracked).
	tracked error
	// own are the query ids of the sampler's statements, left out of
	// the hot queries; ownErr is why they are unknown.
	own    map[int64]bool
	ownErr error

	// Written by start, on the driver's goroutine, before the window is
	// signalled open; read after.
	at        time.Time
	cpuStart  float64
	pgssStart map[int64]observe.QueryCounts
	pgssAt    time.Time
	sampler   *observe.WaitSampler

	// Written by stop.
	cpuEnd   float64
	cpuErr   error
	pgssEnd  map[int64]observe.QueryCounts
	pgssSecs float64
	pgssErr  error // either read of pg_stat_statements
	waits    []observe.WaitCount
	rounds   int64
	waitErr  error
}

func newWindowProbe(ctx context.Context, opts *Options, s *server) (*windowProbe, error) {
	conn, err := connectPgx(ctx, s.dsn)
	if err != nil {
		return nil, fmt.Errorf("sampler connection: %w", err)
	}
	// Keep the sampler's own statements out of pg_stat_statements where
	// the role may (a superuser); otherwise they are counted, at about
	// 10 calls/s, and left out of the hot queries by their query ids.
	tracked := catalog.Untracked(ctx, conn)
	// Not installed or not preloaded: no hot queries, and the step says
	// why.
	stmts, err := observe.NewStatementsReader(ctx, conn)
	p := &windowProbe{opts: opts, s: s, conn: conn, stmts: stmts, pgssErr: err, tracked: tracked}
	if stmts != nil && tracked != nil {
		// Only a tracked session's statements are counted: untracked,
		// there is nothing to leave out and no EXPLAIN to run.
		p.own, p.ownErr = stmts.OwnQueryIDs(ctx)
	}
	return p, nil
}

// start takes the readings at the window's opening and starts sampling.
func (p *windowProbe) start(ctx context.Context, at time.Time) {
	p.at = at
	if p.s.pid != 0 {
		p.cpuStart, p.cpuErr = serverCPU(p.opts.ProcDir, p.s.pid)
	}
	if p.stmts != nil {
		p.pgssStart, p.pgssErr = p.stmts.Counts(ctx)
		p.pgssAt = time.Now()
	}
	p.sampler, p.waitErr = observe.StartWaitSampler(ctx, p.conn, sampleEvery)
}

// stop ends sampling and takes the readings at the window's close.
func (p *windowProbe) stop(ctx context.Context) {
	if p.sampler != nil {
		p.waits, p.rounds, p.waitErr = p.sampler.Stop()
	}
	if p.s.pid != 0 {
		var err error
		p.cpuEnd, err = serverCPU(p.opts.ProcDir, p.s.pid)
		p.cpuErr = errors.Join(p.cpuErr, err)
	}
	if p.stmts != nil && p.pgssStart != nil {
		p.pgssEnd, p.pgssErr = p.stmts.Counts(ctx)
		p.pgssSecs = time.Since(p.pgssAt).Seconds()
	}
}

// report puts the window's server figures into st, whose load figures
// are in, saying on Progress what could not be measured.
func (p *windowProbe) report(ctx context.Context, st *Step) {
	name := p.s.cfg.Name
	if p.waitErr != nil {
		p.opts.Progress("%s: wait event sampling failed: %v", name, p.waitErr)
	}
	st.WaitSamples = int(p.rounds)
	st.WaitEvents = waitEvents(p.waits, p.opts.TopWaits)
	if p.s.pid != 0 {
		if p.cpuErr != nil {
			p.opts.Progress("%s: server CPU: %v", name, p.cpuErr)
		} else {
			cpu := p.cpuEnd - p.cpuStart
			st.ServerCPUS = &cpu
			if st.Transactions > 0 {
				perTx := cpu * 1000 / float64(st.Transactions)
				st.CPUPerTxMS = &perTx
			}
		}
	}
	if p.pgssErr != nil {
		p.opts.Progress("%s: no hot queries: %v", name, p.pgssErr)
	}
	if p.pgssEnd != nil {
		if p.tracked != nil && !p.s.trackedSaid {
			p.s.trackedSaid = true
			p.opts.Progress("%s: %s", name, p.trackedNote())
		}
		st.HotQueries = hotQueries(ctx, p.stmts, p.pgssStart, p.pgssEnd, p.own, p.pgssSecs, p.opts.TopQueries)
	}
}

// trackedNote says why pg_stat_statements counts the sampler's own
// statements, and what becomes of them in the hot queries.
func (p *windowProbe) trackedNote() string {
	why := fmt.Sprintf("its session could not set pg_stat_statements.track = none: %v", p.tracked)
	if errors.Is(p.tracked, catalog.ErrNotSuperuser) {
		why = fmt.Sprintf("role %s is not a superuser, and only a superuser may set pg_stat_statements.track = none for its session", p.conn.Config().User)
	}
	if p.ownErr != nil {
		return fmt.Sprintf("pg_stat_statements counts the sampler's own statements (%s), and they cannot be told apart (%v): the hot queries may include them", why, p.ownErr)
	}
	return fmt.Sprintf("pg_stat_statements counts the sampler's own statements (%s); they are left out of the hot queries instead", why)
}
