package observe

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Defaults of Options.
const (
	DefaultInterval       = 10 * time.Second
	DefaultSampleInterval = 100 * time.Millisecond
	// statsInterval is how often pg_stat_database is read: the TPS
	// series' resolution.
	statsInterval = time.Second
	// roundTimeout bounds one round of the observer's queries.
	roundTimeout = 20 * time.Second
	// stopWait bounds how long Stop waits for a round in flight.
	stopWait = 3 * time.Second
)

// Options configure a Collector.
type Options struct {
	// Interval is the time between pg_stat_statements snapshots (besides
	// those at Start and Stop); 0 means DefaultInterval.
	Interval time.Duration
	// SampleInterval is the time between pg_stat_activity samples; 0
	// means DefaultSampleInterval.
	SampleInterval time.Duration
	// Top is how many queries keep a wait series over time; 0 means 10.
	Top int
	// Live says the observed server's clients go on after Stop (an
	// observation of production, not of a replay whose sessions have
	// just ended): Stop then reads the tables' update counters at once,
	// without waiting up to TableFlushWait for the other backends to end,
	// which they would not.
	Live bool

	// afterRound, set by tests only, is called on the sampling goroutine
	// after every round, so that a test waits for what it needs (a
	// snapshot after some moment, enough rounds) instead of sleeping. It
	// may read the Collector and must return quickly.
	afterRound func(*Collector)
}

func (o Options) withDefaults() Options {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.SampleInterval <= 0 {
		o.SampleInterval = DefaultSampleInterval
	}
	if o.Top <= 0 {
		o.Top = 10
	}
	return o
}

// Collector gathers a server's evidence - pg_stat_activity samples,
// pg_stat_statements and pg_wait_sampling snapshots, transaction counts -
// on its own goroutine from Start until Stop, which returns it.
type Collector struct {
	opts Options
	dsn  string
	conn *pgx.Conn
	caps *Capabilities

	pgss     *pgssTracker // nil without a readable pg_stat_statements
	pws      *pwsTracker  // nil unless waits come from pg_wait_sampling
	tables   *tableTracker
	activity *activity
	series   *series

	start time.Time
	stop  chan struct{}
	// mark asks the loop for the window's snapshot (Mark).
	mark chan struct{}
	done chan struct{}
	// stopCtx ends when Stop is called: a reconnection in progress
	// gives up then.
	stopCtx    context.Context
	cancelStop context.CancelFunc

	// Written by the loop only, read after done.
	end         time.Time
	flushLooks  int       // how many times Stop looked for other backends (waitBackends)
	pwsNext     time.Time // the next pg_wait_sampling snapshot is due
	errs        []error
	stats       samplingStats
	lastXacts   int64
	lastRoll    int64
	lastXactAt  time.Time
	ownAtRead   int64
	dbNames     map[uint32]string
	stopOnce    sync.Once
	evidence    *Evidence
	evidenceErr error
	tableStats  []TableUpdates
	tablesErr   error
}

type samplingStats struct {
	rounds       int64
	busy         time.Duration // time in the observer's queries and work
	activityBusy time.Duration
	pgssBusy     time.Duration
	pwsBusy      time.Duration
	maxGap       time.Duration
	lastRound    time.Time
	ownXacts     int64 // transactions the observer itself ran
	pgssFailures int
	pwsFailures  int
	reconnects   int           // connections made again after a loss
	disconnected time.Duration // time without a connection
}

// Start connects to dsn, finds what the server allows, takes the first
// snapshots and starts sampling. ctx bounds Start only; the observer runs
// until Stop. Start fails only when the server cannot be reached or
// queried at all; what it cannot see (pg_stat_statements missing, other
// users' activity hidden) becomes a warning in the evidence.
func Start(ctx context.Context, dsn string, opts Options) (*Collector, error) {
	opts = opts.withDefaults()
	conn, err := connect(ctx, dsn, "")
	if err != nil {
		return nil, err
	}
	conn, caps, err := probe(ctx, conn, dsn)
	if err != nil {
		conn.Close(context.Background())
		return nil, err
	}
	probeWaitSampling(ctx, conn, caps)
	o := &Collector{opts: opts, dsn: dsn, conn: conn, caps: caps, activity: newActivity(caps), series: newSeries(),
		stop: make(chan struct{}), done: make(chan struct{}), mark: make(chan struct{}, 1)}
	o.stopCtx, o.cancelStop = context.WithCancel(context.Background())
	o.start = time.Now()
	if caps.WaitSource == WaitsFromPGWaitSampling {
		o.pws = newPWSTracker(caps)
		if err := o.snapshotPWS(ctx, o.start); err != nil {
			o.pws = nil
			caps.WaitSource = WaitsFromActivity
			caps.WaitSourceReason = "reading pg_wait_sampling_profile failed (" + err.Error() + ")"
		}
		o.pwsNext = o.start.Add(opts.Interval)
	}
	// pg_stat_activity's samples give the wait profile only without
	// pg_wait_sampling; connections always. With pg_wait_sampling nothing
	// needs the fast polls, which cost the server under test a query
	// every 100 ms: poll as often as the snapshots and the TPS series
	// need.
	o.activity.waits = o.pws == nil
	if o.pws != nil {
		o.opts.SampleInterval = max(o.opts.SampleInterval, min(o.opts.Interval, statsInterval))
	}
	if caps.PGSS.Is(ExtInstalled) {
		o.pgss = newPGSSTracker(caps)
		if err := o.snapshotPGSS(ctx, o.start); err != nil {
			// Readable at probe time but not now: carry on without.
			o.errs = append(o.errs, err)
			o.pgss = nil
		}
	}
	// Before the first transaction count: the reads are transactions
	// in each database.
	o.startTables(ctx)
	if err := o.readXacts(ctx, time.Now()); err != nil {
		conn.Close(context.Background())
		return nil, fmt.Errorf("observe: pg_stat_database: %w", err)
	}
	go o.loop()
	return o, nil
}

// Capabilities returns what the server allows; it is not to be modified.
func (o *Collector) Capabilities() *Capabilities { return o.caps }

func (o *Collector) loop() {
	defer close(o.done)
	// The loop outlives the caller's context by design, and Stop does
	// not cancel a query in flight either: pgx closes a connection whose
	// query is cancelled, which would lose the last snapshot. Stop waits
	// for the round to end instead; each query is bounded by the
	// connection's statement_timeout, and a round by roundTimeout (a
	// stalled network).
	tick := time.NewTicker(o.opts.SampleInterval)
	defer tick.Stop()
	lastPGSS, lastXact := o.start, time.Now()
	failures := 0
	for {
		if o.conn.IsClosed() && !o.reconnect() {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), roundTimeout)
		now := time.Now()
		err := o.sampleActivity(ctx, now)
		if err == nil && now.Sub(lastXact) >= statsInterval {
			lastXact = now
			err = o.readXacts(ctx, now)
		}
		if err == nil && o.pgss != nil && now.Sub(lastPGSS) >= o.opts.Interval {
			lastPGSS = now
			if perr := o.snapshotPGSS(ctx, now); perr != nil {
				o.stats.pgssFailures++
				o.errs = append(o.errs, perr)
			}
		}
		if err == nil && o.pws != nil && !now.Before(o.pwsNext) {
			// On a grid from the start, so that the intervals are the
			// buckets of the wait profile over time.
			o.pwsNext = o.start.Add((now.Sub(o.start)/o.opts.Interval + 1) * o.opts.Interval)
			if perr := o.snapshotPWS(ctx, now); perr != nil {
				o.stats.pwsFailures++
				o.errs = append(o.errs, perr)
			}
		}
		cancel()
		if o.opts.afterRound != nil {
			o.opts.afterRound(o)
		}
		if err != nil {
			// A lost connection is made again (reconnect); a failed
			// query is retried a few times first.
			o.errs = append(o.errs, err)
			failures++
			if !o.conn.IsClosed() && failures >= 5 {
				return
			}
			if o.conn.IsClosed() {
				failures = 0
			}
		} else {
			failures = 0
		}
		select {
		case <-o.stop:
			return
		case <-tick.C:
		case <-o.mark:
			o.markWindow()
		}
	}
}

// Mark takes a pg_stat_statements snapshot now, on the sampling
// goroutine (within one round of the observer's queries), and keeps the
// deltas from the start to it as the evidence's window
// (Statements.Window): a replay's schedule window, whose end the replay
// knows (results.Window). Only the first call counts; without
// pg_stat_statements it does nothing. It does not wait.
func (o *Collector) Mark() {
	select {
	case o.mark <- struct{}{}:
	default:
	}
}

// markWindow takes the window's snapshot, once; on the loop.
func (o *Collector) markWindow() {
	if o.pgss == nil || o.pgss.window != nil || o.conn.IsClosed() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), roundTimeout)
	defer cancel()
	if err := o.snapshotPGSS(ctx, time.Now()); err != nil {
		o.stats.pgssFailures++
		o.errs = append(o.errs, fmt.Errorf("the window's snapshot: %w", err))
		return
	}
	o.pgss.markWindow()
}

// Backoff of the observer's reconnection attempts.
const (
	reconnectMin = 100 * time.Millisecond
	reconnectMax = 2 * time.Second
)

// reconnect makes the observer's connection again after it was lost (the
// server restarted, the backend was terminated), trying with backoff
// until it succeeds or Stop is called; false then. Counters the server
// kept in memory may have restarted from zero with the server: the
// trackers take a counter that went down as a reset. The gap is noted in
// the evidence.
func (o *Collector) reconnect() bool {
	lost := time.Now()
	backoff := reconnectMin
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-o.stop:
			return false
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(o.stopCtx, roundTimeout)
		conn, err := connect(ctx, o.dsn, o.caps.Database)
		cancel()
		if err == nil {
			o.conn = conn
			o.stats.reconnects++
			o.stats.disconnected += time.Since(lost)
			// Its own transactions start again from the new backend.
			o.lastXactAt = time.Time{}
			return true
		}
		t.Reset(backoff)
		backoff = min(2*backoff, reconnectMax)
	}
}

// timed runs f as the observer's own work, counting its time and its
// transactions.
func (o *Collector) timed(xacts int64, busy *time.Duration, f func() error) error {
	t0 := time.Now()
	err := f()
	d := time.Since(t0)
	o.stats.busy += d
	if busy != nil {
		*busy += d
	}
	o.stats.ownXacts += xacts
	return err
}

func (o *Collector) sampleActivity(ctx context.Context, now time.Time) error {
	err := o.timed(1, &o.stats.activityBusy, func() error { return o.activity.sample(ctx, o.conn, o.series, now) })
	if err != nil {
		return fmt.Errorf("pg_stat_activity: %w", err)
	}
	if !o.stats.lastRound.IsZero() {
		o.stats.maxGap = max(o.stats.maxGap, now.Sub(o.stats.lastRound))
	}
	o.stats.lastRound = now
	o.stats.rounds++
	return nil
}

// readXacts adds the transactions since the last read to the bucket of
// now, less the observer's own.
func (o *Collector) readXacts(ctx context.Context, now time.Time) error {
	var commits, rollbacks int64
	if o.caps.ServerVersionNum >= 150000 {
		// Flush the observer's own statistics first, so that the
		// read holds every transaction of the observer before it. A
		// backend flushes its transaction counts only along with some
		// relation's statistics, hence pg_database.
		err := o.timed(1, nil, func() error {
			_, err := o.conn.Exec(ctx, tag+"SELECT pg_stat_force_next_flush() FROM pg_database LIMIT 1")
			return err
		})
		if err != nil {
			return fmt.Errorf("pg_stat_force_next_flush: %w", err)
		}
	}
	err := o.timed(1, nil, func() error {
		return o.conn.QueryRow(ctx, tag+"SELECT sum(xact_commit)::bigint, sum(xact_rollback)::bigint FROM pg_stat_database").
			Scan(&commits, &rollbacks)
	})
	if err != nil {
		return fmt.Errorf("pg_stat_database: %w", err)
	}
	own := o.stats.ownXacts
	if !o.lastXactAt.IsZero() {
		dc, dr := commits-o.lastXacts, rollbacks-o.lastRoll
		if dc < 0 || dr < 0 {
			// pg_stat_reset(): this interval is unknown.
			dc, dr = 0, 0
		}
		// The observer's own queries are transactions too; the
		// current one is not flushed yet, so it counts next time.
		// Before PostgreSQL 15 some of the others may not be flushed
		// either: the subtraction is then right over the whole
		// observation, not per bucket.
		dc = max(dc-(own-1-o.ownAtRead), 0)
		b := o.series.at(now)
		b.xacts += dc + dr
		b.rollbacks += dr
		b.xactMS += now.Sub(o.lastXactAt).Milliseconds()
	}
	o.lastXacts, o.lastRoll, o.lastXactAt, o.ownAtRead = commits, rollbacks, now, own-1
	return nil
}

func (o *Collector) snapshotPGSS(ctx context.Context, now time.Time) error {
	n := o.pgss.queries
	err := o.timed(0, &o.stats.pgssBusy, func() error { return o.pgss.snapshot(ctx, o.conn, now) })
	o.stats.ownXacts += o.pgss.queries - n
	return err
}

func (o *Collector) snapshotPWS(ctx context.Context, now time.Time) error {
	return o.timed(1, &o.stats.pwsBusy, func() error { return o.pws.snapshot(ctx, o.conn, now) })
}

// Stop ends sampling, takes the last snapshots and returns the evidence.
// It may be called more than once and returns the same result. An error
// during the observation (a lost connection) is returned with the evidence
// gathered until then, which the error also lists in its warnings.
func (o *Collector) Stop() (*Evidence, error) {
	o.stopOnce.Do(func() {
		close(o.stop)
		o.cancelStop()
		forced := false
		select {
		case <-o.done:
		case <-time.After(stopWait):
			// A round stuck on a server that does not answer (a frozen
			// target): cut its connection rather than wait out the
			// round's timeout.
			forced = true
			o.conn.PgConn().Conn().SetDeadline(time.Unix(1, 0))
			<-o.done
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		o.end = time.Now()
		if forced {
			o.errs = append(o.errs, fmt.Errorf("the server did not answer within %v of the stop: no snapshot at the end", stopWait))
		} else if !o.conn.IsClosed() {
			if err := o.readXacts(ctx, o.end); err != nil {
				o.errs = append(o.errs, err)
			}
			if o.pgss != nil {
				if err := o.snapshotPGSS(ctx, o.end); err != nil {
					o.errs = append(o.errs, err)
				}
			}
			if o.pws != nil {
				if err := o.snapshotPWS(ctx, o.end); err != nil {
					o.errs = append(o.errs, err)
				}
			}
			o.readDBNames(ctx)
			o.tableStats, o.tablesErr = o.stopTables(ctx)
		} else {
			o.errs = append(o.errs, errors.New("the connection was lost: no snapshot at the end"))
		}
		o.conn.Close(ctx)
		o.evidence = o.build()
		o.evidenceErr = errors.Join(o.errs...)
		if o.evidenceErr != nil {
			o.evidenceErr = fmt.Errorf("observe: %w", o.evidenceErr)
		}
	})
	return o.evidence, o.evidenceErr
}

func (o *Collector) readDBNames(ctx context.Context) {
	o.dbNames = map[uint32]string{}
	rows, err := o.conn.Query(ctx, tag+"SELECT oid, datname FROM pg_database")
	if err != nil {
		return
	}
	var oid uint32
	var name string
	_, _ = pgx.ForEachRow(rows, []any{&oid, &name}, func() error {
		o.dbNames[oid] = name
		return nil
	})
}
