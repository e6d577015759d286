package replay

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/connstr"
	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/syncdep"
)

// Replayer replays logs against a target. Make one with New, call Run
// once; Progress may be called from any goroutine meanwhile.
type Replayer struct {
	opts Options
	// left is what the replay leaves on the target (leftover.go).
	left leftovers
	// startup: what the replay learns of its sessions' startup settings.
	startup startupWatch
	sched   Schedule // opts.Schedule()
	c       counters
	// taint holds what the replay's own divergences wrote, in the
	// Answers mode where the target's data may be blamed (nil
	// otherwise; syncdep.Taint).
	taint *syncdep.Taint
	// answers keeps the differing answers (Options.KeepAnswers).
	answers answerNotes
	shards  []*shard
	fails   connFailures
	cache   *fingerprint.Cache
	budget  *budget
	waker   *preciseWaker // nil at speed 0, in a dry run, or where unsupported
	// On the engine (engine_linux.go), its loops: the
	// sessions are spread over them; the first runs the dispatcher.
	engines []*engine
	started int     // sessions started on the engines (the dispatcher's)
	conns   connLog // every connection opened, for Connections
	// destructive counts the statements read that destroy or reshape
	// (DROP, TRUNCATE, DELETE without WHERE...), by kind.
	destructive tally
	clk         atomic.Pointer[clock]
	win         *window // nil without a schedule window (window.go)
	began       time.Time

	stopCh <-chan struct{}
	// abort stops the replay from within (the target gone); gone says
	// why, once.
	abort    context.CancelFunc
	gone     atomic.Pointer[string]
	goneOnce sync.Once
	// window watches the first statements for a target that fails them
	// all (Options.ErrorWindow); failing says why it stopped the replay.
	window  errorWindow
	failing atomic.Pointer[string]
	hard    context.Context
	// Faults (stop.go, watch.go): cancelHard ends hard from within (the
	// target silent); hardDone is set once hard ended; silent: the
	// target stopped answering; live: the sessions with a connection.
	cancelHard context.CancelFunc
	hardDone   atomic.Bool
	silent     atomic.Bool
	live       liveSet

	cfgMu sync.Mutex
	cfgs  map[[2]string]cfgResult
	// seqs: the columns a sequence fills, by database, read when a
	// statement first returns one that differs (sequence.go).
	seqs seqCatalogs

	sync    *syncRun // nil when sessions are not synchronized
	syncOff string   // why not, when asked

	nsessions int // sessions created, by the dispatcher
	wg        sync.WaitGroup
}

// New returns a Replayer for opts.
func New(opts Options) (*Replayer, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	if opts.Cache == nil {
		opts.Cache = fingerprint.NewCache(0)
	}
	n := min(max(2*runtime.GOMAXPROCS(0), 4), 32)
	sched := opts.Schedule()
	window := opts.Budget
	if !sched.Paced() {
		window = Speed0Window
	}
	r := &Replayer{
		opts:   opts,
		sched:  sched,
		shards: make([]*shard, n),
		cache:  opts.Cache,
		budget: newBudget(opts.Budget, window),
	}
	for i := range r.shards {
		r.shards[i] = newShard()
	}
	r.sync, r.syncOff = newSyncRun(opts)
	r.win = newWindow(opts)
	if r.blamesData() {
		r.taint = syncdep.NewTaint()
	}
	return r, nil
}

// Run replays the events of src, read in order (one file after the other),
// and returns what happened. The events are the workload: what a time
// window, filters or a shard leave out is the sources' to select (package
// source), and their counts (results.SourceCounter: lines, filtered, other
// shards) go into the result.
//
// Two contexts stop it, as Ctrl-C twice would: when stop is done, no new
// statement is issued and nothing more is read, but statements in flight
// finish; when hard is done, statements in flight are cancelled too. Either
// way Run returns the result of what ran, with Partial set and a nil
// error. A read error also ends the replay (after what was read has run);
// SetStartProven names the tables ("schema.name") the target holds as
// they were at the recording's start, proven by their digests before the
// first statement: answers on them read differently, however often, are
// suspect, never the target's data.
func (r *Replayer) SetStartProven(tables []string) { r.c.dataReads.setProven(tables) }

// Run then returns the partial result and the error.
func (r *Replayer) Run(stop, hard context.Context, src []event.Source) (*results.Result, error) {
	stop, r.abort = context.WithCancel(stop)
	defer r.abort()
	r.stopCh = stop.Done()
	defer r.watchFaults(hard)()
	r.startBarrier()
	r.began = time.Now()
	cpu0, cpuOK := processCPU()
	sched0 := schedLatency()
	defer r.pace()()
	res := results.New(results.KindReplay, results.LatencyClient)
	res.DryRun, res.Speed, res.Pooled = r.opts.DryRun, r.opts.Speed, r.opts.Pool
	res.StartedAt = results.Time(r.began.UnixMicro())
	if r.opts.Sessions.engine(r.sched.Paced(), r.opts.DryRun, runtime.GOMAXPROCS(0)) {
		for range r.opts.engines() {
			if e := newEngine(); e != nil {
				r.engines = append(r.engines, e)
				go func() {
					// Parked sessions look at the stop when woken.
					select {
					case <-r.stopCh:
						e.wakeAll()
					case <-e.done:
					}
				}()
			}
		}
	}
	var readErr error
	if len(r.engines) > 0 && r.peers() == nil {
		// The dispatcher runs on the first engine too: with one, the
		// whole replay on one thread, as pgbench's clients. With other
		// shards it stays on this goroutine: it waits for them on the
		// network.
		done := make(chan struct{})
		r.engines[0].start(func(t *task) {
			defer close(done)
			r.budget.task.Store(t)
			readErr = r.dispatchOn(t, src, res)
		})
		<-done
	} else {
		readErr = r.dispatch(src, res)
	}
	r.wg.Wait()
	for _, e := range r.engines {
		e.close()
	}
	// The tracker read all it will: every race is settled.
	for _, sh := range r.shards {
		sh.mu.Lock()
		sh.settleRaces(r, true)
		sh.mu.Unlock()
	}
	if readErr != nil || r.stopped() {
		res.Partial = true
	}
	ended := time.Now()
	res.EndedAt = results.Time(ended.UnixMicro())
	res.WallSeconds = ended.Sub(r.began).Seconds()
	res.Finish = r.finish(res, ended)
	if cpu, ok := processCPU(); ok && cpuOK {
		res.ClientCPUSeconds = (cpu - cpu0).Seconds()
	}
	res.TargetLocal = !r.opts.DryRun && connstr.IsLocal(r.opts.Target)
	r.c.fill(res)
	res.Outcomes.AnswerTaintByRelation = r.taint.FellBack()
	res.DifferingAnswers, res.DifferingAnswersDropped = r.answers.take()
	r.c.dataReads.mark(res.DifferingAnswers)
	res.Reader.BudgetBytes = r.budget.limit
	var sc results.SourceCounts
	for _, s := range src {
		if c, ok := s.(results.SourceCounter); ok {
			sc.Add(c.SourceCounts())
		}
	}
	sc.Fill(res)
	if !r.opts.DryRun {
		r.startup.result(res, res.Messages != nil)
	}
	// Events read: those routed, and those the sources left out.
	res.Reader.Events += sc.Filtered.Events
	if o := sc.OtherShards; o != nil {
		res.Reader.Events += o.Events
	}
	account(res, r.opts.MaxLost)
	if why := r.gone.Load(); why != nil {
		res.MarkIncomplete(results.IncompleteTargetGone, *why)
	}
	if why := r.failing.Load(); why != nil {
		res.MarkIncomplete(results.IncompleteErrorStart, *why)
	}
	res.Destructive = r.destructive.counts()
	res.Sessions.ConnectFailures = r.fails.list()
	if err := r.syncResult(res); err != nil {
		return nil, err
	}
	if !r.opts.DryRun {
		r.leftoversResult(res)
	}
	r.faultsResult(res)
	var dialFailed *int64
	if !r.opts.DryRun {
		n := r.c.dialFailed.Load()
		dialFailed = &n
	}
	if err := mergeShards(res, r.shards, r.sched.Paced(), dialFailed); err != nil {
		return nil, err
	}
	if err := r.windowResult(res, ended); err != nil {
		return nil, err
	}
	if r.opts.Samples != nil {
		res.KeptSamples, res.Samples = true, r.opts.Samples.Result()
	}
	warnLag(res, r.opts.MaxLag, schedP99(sched0, schedLatency()))
	return res, readErr
}

// pace readies a paced replay's timing, and returns what undoes it: the
// precise waker (a dry run issues nothing whose lateness matters, and its
// tests run in synctest bubbles, whose fake time a timerfd does not
// follow).
//
// The replayer's threads keep the policy they have (SCHED_NORMAL), as the
// application's client threads do. Under SCHED_BATCH on the target's
// machine (8dc57ab, to keep its wake-ups from preempting backends
// mid-statement) a thread woken by its answer waited for the CPU a
// backend or any other task held instead of taking it as the
// application's client does: on bench/ctlinflate.sh's server the
// replay's round trip outside the server's work was 1.8-1.9x the
// application's, 0.89-0.97x without it, with the server's time per call
// no different beyond the noise; in a quiet pair of bench/forecast runs
// the forecast was within its noise of the application's in 18 of 24
// rows without it, 13 with it (bench/results/2026-11-27-forecast-runs.md).
func (r *Replayer) pace() func() {
	if !r.sched.Paced() || r.opts.DryRun {
		return func() {}
	}
	r.waker = newPreciseWaker()
	return func() {
		if r.waker != nil {
			r.waker.close()
		}
	}
}

// finish is when a paced replay that ran to its end finished against its
// schedule: the schedule's length, from the clock's start to the last
// event's due time, and how much later the last session was done.
func (r *Replayer) finish(res *results.Result, ended time.Time) *results.Finish {
	c := r.clk.Load()
	if c == nil || !c.paced() || !c.started() || r.opts.DryRun || res.Partial || res.LastTime == 0 {
		return nil
	}
	last := int64(res.LastTime)
	return &results.Finish{ScheduleSeconds: c.offset(last).Seconds(), BehindSeconds: max(0, ended.Sub(c.due(last)).Seconds())}
}

// targetGone stops the replay early: a session could not reconnect
// within ConnectTimeout of its connection breaking. The result says so.
func (r *Replayer) targetGone(since time.Time, why string) {
	r.goneOnce.Do(func() {
		msg := fmt.Sprintf("the target was unreachable for more than %v from %s (%s), so the replay stopped early",
			r.opts.ConnectTimeout, since.UTC().Format(time.TimeOnly), why)
		r.gone.Store(&msg)
		r.abort()
	})
}

// stopReason is why statements are not run once the replay stops: the
// target gone, or told to stop.
func (r *Replayer) stopReason() results.SkipReason {
	if r.gone.Load() != nil {
		return SkipTargetGone
	}
	return SkipInterrupted
}

func (r *Replayer) stopped() bool {
	return isDone(r.stopCh)
}

// Progress is a snapshot of a running replay, for a live display.
type Progress struct {
	Elapsed time.Duration
	// LogStart is the log time of the first event; LogReplayed the latest
	// log time issued. Both µs since the epoch, zero before the first.
	LogStart, LogReplayed int64
	// Done counts statements executed, failed or skipped so far.
	Done, Errors    int64
	Sessions, Open  int64
	LagP99MS        float64
	BufferedBytes   int64
	ConnectFailures int64
}

// Progress returns the figures so far.
func (r *Replayer) Progress() Progress {
	p := Progress{
		Elapsed:         time.Since(r.began),
		Errors:          r.c.errors.Load(),
		Sessions:        r.c.sessions.Load(),
		Open:            r.c.open.Load(),
		BufferedBytes:   r.budget.used.Load(),
		ConnectFailures: r.c.connectFailed.Load(),
		LogReplayed:     r.c.lastIssued.Load(),
	}
	p.Done = r.c.executed.Load() + r.c.failed.Load()
	for i := range r.c.skipped {
		p.Done += r.c.skipped[i].Load()
	}
	if c := r.clk.Load(); c != nil {
		p.LogStart = c.t0
		if c.paced() {
			lag := results.NewRecorder()
			for _, s := range r.shards {
				s.mu.Lock()
				lag.Merge(s.lag)
				s.mu.Unlock()
			}
			p.LagP99MS = float64(lag.Percentile(99)) / 1000
		}
	}
	return p
}
