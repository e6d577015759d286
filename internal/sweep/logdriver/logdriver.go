package logdriver

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/connstr"
	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/logread"
	"github.com/pgrehearse/pgrehearse/internal/replay"
	"github.com/pgrehearse/pgrehearse/internal/replayrun"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/source"
	"github.com/pgrehearse/pgrehearse/internal/sweep"
	"github.com/pgrehearse/pgrehearse/internal/syncdep"
)

// Log drives a sweep's step by replaying a captured server log with
// internal/replay at speed 0 (as fast as possible), its sessions
// multiplied to reach the step's client count. See the package comment
// for how clients, transactions and latencies are counted.
type Log struct {
	// Path is the log file; Format, Prefix and TimeZone are as
	// logread.Options takes them (empty: detected; nil: the log's zones).
	Path     string
	Format   logread.Format
	Prefix   string
	TimeZone *time.Location
	// Setup is an SQL file run by Init (once per throwaway cluster, or on
	// a target when the sweep initializes it): the schema the log's statements
	// need. Plain SQL sent in one simple-protocol query, no psql
	// meta-commands.
	Setup string
	// PgbenchInit makes Init run pgbench -i at the sweep's scale first,
	// for a log captured from pgbench; PgbenchPath is the pgbench binary
	// (empty: sweep.FindPgbench's choice) and Scale the scale, for Info.
	PgbenchInit bool
	PgbenchPath string
	Scale       int
	// Grace is how long statements still running when a step ends may
	// finish before they are cancelled; zero means 5 s.
	Grace time.Duration

	plan *logPlan
	// lines (messages, for a capture) and statements are what Prepare
	// read of the log.
	lines      *logread.Counters
	messages   *results.MessageCounts
	statements int64
	// capture: Path is a capture of the proxy, not a log.
	capture bool
}

// logPlan is what a first read of the log found.
type logPlan struct {
	sessions     int            // sessions in the log
	lanes        int            // working lanes: see busiestFirst
	allLanes     int            // most sessions open at once
	lane         map[string]int // session -> lane, 0 .. allLanes-1
	statements   int64
	transactions int64
	spanS        float64
	// per is, by the fingerprint of an execution's first statement,
	// how many statements and transaction ends an execution holds on
	// average.
	per      map[string]perExec
	users    map[string]string // every logged user and database, mapped
	dbs      map[string]string // to "": the DSN's
	warnings []string
}

type perExec struct{ stmts, txEnds float64 }

// Prepare reads the log once: its sessions, the most open at once, and
// how its statements group into transactions. Run calls it when it was
// not called.
func (l *Log) Prepare() error {
	if l.plan != nil {
		return nil
	}
	if l.Setup != "" {
		if _, err := os.Stat(l.Setup); err != nil {
			return fmt.Errorf("setup: %w", err)
		}
	}
	// pgrehearse's own sessions left out, as replayrun's selection
	// leaves them out of each pass.
	so := l.sourceOptions()
	so.Select = &source.Selection{}
	set, err := source.Open([]string{l.Path}, so)
	if err != nil {
		return err
	}
	defer set.Close()
	p, err := scanLog(set.Sources()[0])
	l.lines = set.Lines()
	l.messages = set.Counts().Messages
	_, isLog := source.LogReader(set.Readers()[0])
	l.capture = !isLog
	if err != nil {
		return fmt.Errorf("read log %s: %w", l.Path, err)
	}
	l.statements = p.statements
	if p.statements == 0 {
		return fmt.Errorf("log %s: %w (it needs log_min_duration_statement = 0 or log_statement = 'all', and sessions: %%c or %%p in a stderr log's prefix)", l.Path, ErrNoStatements)
	}
	l.plan = p
	return nil
}

// ErrNoStatements is wrapped by Prepare's error for a log that holds no
// statement to replay.
var ErrNoStatements = errors.New("no statement to replay")

// Lines is the line accounting of the log's reading by Prepare; nil
// before it read.
func (l *Log) Lines() *logread.Counters { return l.lines }

// Messages is the message accounting of Prepare's reading when Path is a
// capture; nil otherwise.
func (l *Log) Messages() *results.MessageCounts { return l.messages }

// Statements is the number of statements Prepare found in the log.
func (l *Log) Statements() int64 { return l.statements }

type span struct {
	id          string
	first, last int64
	stmts       int64
	closed      bool // its disconnection is in the log
}

// sourceOptions are how the log is read, by Prepare and by each pass.
func (l *Log) sourceOptions() source.Options {
	return source.Options{Log: logread.Options{Format: l.Format, Prefix: l.Prefix, TimeZone: l.TimeZone}}
}

func scanLog(src event.Source) (*logPlan, error) {
	p := &logPlan{lane: map[string]int{}, per: map[string]perExec{}, users: map[string]string{}, dbs: map[string]string{}}
	spans := map[string]*span{}
	inTx := map[string]bool{}
	cache := fingerprint.NewCache(0)
	type count struct {
		execs         int64
		stmts, txEnds int64
	}
	counts := map[string]*count{}
	var first, last, seq int64
	for {
		ev, err := src.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		switch ev.Kind {
		case event.Connect, event.Disconnect, event.Statement, event.Execute:
		default:
			continue
		}
		if ev.Session == "" {
			continue
		}
		if first == 0 || ev.Time < first {
			first = ev.Time
		}
		last = max(last, ev.Time)
		// Spans are in read order, not log time: at speed 0 a session
		// starts once every event read before its first has completed
		// (the replay's start barrier), so a session whose last event
		// is read before another's first is closed before that one
		// connects, and the two can share a lane without overlapping.
		// In log time they could overlap: a backend logs its
		// disconnection after the client moved on.
		seq++
		sp := spans[ev.Session]
		if sp == nil {
			sp = &span{id: ev.Session, first: seq}
			spans[ev.Session] = sp
			p.users[ev.User] = ""
			p.dbs[ev.Database] = ""
		}
		sp.last = seq
		if ev.Kind == event.Disconnect {
			sp.closed = true
			delete(inTx, ev.Session)
			continue
		}
		if !ev.IsExecution() {
			continue
		}
		items := cache.Get(ev.Query)
		if len(items) == 0 {
			continue
		}
		ends, now := txEnds(items, ev.Query, inTx[ev.Session])
		inTx[ev.Session] = now
		c := counts[items[0].Fingerprint]
		if c == nil {
			c = &count{}
			counts[items[0].Fingerprint] = c
		}
		sp.stmts += int64(len(items))
		c.execs++
		c.stmts += int64(len(items))
		c.txEnds += int64(ends)
		p.statements += int64(len(items))
		p.transactions += int64(ends)
	}
	for fp, c := range counts {
		p.per[fp] = perExec{stmts: float64(c.stmts) / float64(c.execs), txEnds: float64(c.txEnds) / float64(c.execs)}
	}
	for _, sp := range spans {
		if !sp.closed {
			// The replay keeps it open to the end of the log.
			sp.last = seq + 1
		}
	}
	p.sessions = len(spans)
	p.allLanes = assignLanes(spans, p.lane)
	p.lanes = busiestFirst(spans, p.lane, p.allLanes)
	p.spanS = float64(last-first) / 1e6
	return p, nil
}

// assignLanes gives every session the lowest lane free when it starts (a
// lane is free once its previous session has ended, in read order), so that
// a lane holds sessions one after the other and the number of lanes is
// the most sessions open at once.
func assignLanes(spans map[string]*span, lane map[string]int) int {
	list := make([]*span, 0, len(spans))
	for _, s := range spans {
		list = append(list, s)
	}
	slices.SortFunc(list, func(a, b *span) int {
		if a.first != b.first {
			if a.first < b.first {
				return -1
			}
			return 1
		}
		return strings.Compare(a.id, b.id)
	})
	busy := &minHeap[laneEnd]{less: func(a, b laneEnd) bool { return a.end < b.end }}
	free := &minHeap[int]{less: func(a, b int) bool { return a < b }}
	n := 0
	for _, s := range list {
		for busy.Len() > 0 && busy.items[0].end < s.first {
			heap.Push(free, heap.Pop(busy).(laneEnd).lane)
		}
		l := n
		if free.Len() > 0 {
			l = heap.Pop(free).(int)
		} else {
			n++
		}
		lane[s.id] = l
		heap.Push(busy, laneEnd{end: s.last, lane: l})
	}
	return n
}

// busiestFirst numbers the lanes by the statements of their sessions,
// most first, so that a step using fewer lanes than the log has replays
// its busiest, and returns how many lanes work: those with at least
// idleShare of the busiest lane's statements. The others (pgbench's first
// look at the tables, a connection that did nothing) would count as
// concurrency without loading the server; they are not replayed.
func busiestFirst(spans map[string]*span, lane map[string]int, n int) int {
	work := make([]int64, n)
	for _, s := range spans {
		work[lane[s.id]] += s.stmts
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if work[a] != work[b] {
			if work[a] > work[b] {
				return -1
			}
			return 1
		}
		return a - b
	})
	rank := make([]int, n)
	for r, l := range order {
		rank[l] = r
	}
	for id, l := range lane {
		lane[id] = rank[l]
	}
	working := 0
	for _, l := range order {
		if n > 0 && float64(work[l]) >= max(1, idleShare*float64(work[order[0]])) {
			working++
		}
	}
	return max(working, 1)
}

// idleShare: see busiestFirst.
const idleShare = 0.05

type laneEnd struct {
	end  int64
	lane int
}

// minHeap is a heap (container/heap) of items, the least by less first.
type minHeap[T any] struct {
	items []T
	less  func(a, b T) bool
}

func (h *minHeap[T]) Len() int           { return len(h.items) }
func (h *minHeap[T]) Less(i, j int) bool { return h.less(h.items[i], h.items[j]) }
func (h *minHeap[T]) Swap(i, j int)      { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *minHeap[T]) Push(x any)         { h.items = append(h.items, x.(T)) }
func (h *minHeap[T]) Pop() any {
	x := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return x
}

// txEnds counts the transactions that the statements of one execution
// (items of the logged text) end, given whether its session was inside
// a transaction block, and says whether it is inside one afterwards. A
// transaction ends with COMMIT, END, ROLLBACK, ABORT or PREPARE
// TRANSACTION, and every statement outside a block is a transaction of
// its own; a query string of several statements without transaction
// control is one (implicit) transaction, as the server runs it. The
// statements' kinds are the one classifier's (fingerprint.Class).
func txEnds(items []fingerprint.Item, text string, inTx bool) (int, bool) {
	ends := 0
	control := false
	for _, it := range items {
		c := it.Class(text)
		switch c.Tx {
		case fingerprint.TxBegin:
			control = true
			inTx = true
		case fingerprint.TxCommitPrepared, fingerprint.TxRollbackPrepared:
			// Runs outside a block, a transaction of its own.
			if !inTx {
				ends++
			}
		case fingerprint.TxSavepoint:
			// The block goes on.
		case fingerprint.TxCommit, fingerprint.TxRollback, fingerprint.TxPrepare:
			control = true
			if inTx {
				ends++
			}
			inTx = c.Chain
		default:
			if !inTx && (len(items) == 1 || control) {
				ends++
			}
		}
	}
	if !control && len(items) > 1 && !inTx {
		ends = 1
	}
	return ends, inTx
}

// Fit returns how a step of clients sessions replays a log whose sessions
// fill lanes lanes: every session of the first lanesUsed lanes, each
// multiply times, for lanesUsed*multiply sessions at once (at the log's
// peak), which is clients when clients divides evenly, and otherwise
// above it by less than multiply.
func Fit(lanes, clients int) (lanesUsed, multiply int) {
	lanes, clients = max(lanes, 1), max(clients, 1)
	multiply = (clients + lanes - 1) / lanes
	lanesUsed = (clients + multiply - 1) / multiply
	return lanesUsed, multiply
}

// Info implements sweep.Driver.
func (l *Log) Info() sweep.WorkloadInfo {
	w := sweep.WorkloadInfo{Kind: "log", Log: l.Path, Setup: l.Setup, Mode: "as logged", Format: string(l.Format)}
	switch {
	case l.capture:
		w.Format = "capture"
	case w.Format == "":
		w.Format = string(logread.FormatAuto)
	}
	if l.PgbenchInit {
		w.Scale = l.Scale
	}
	if p := l.plan; p != nil {
		w.LogSessions, w.LogConcurrency = p.sessions, p.lanes
		w.LogStatements, w.LogTransactions, w.LogSpanS = p.statements, p.transactions, math.Round(p.spanS*1000)/1000
	}
	return w
}

// InitText says what Init does, for the sweep's progress lines.
func (l *Log) InitText(scale int) string {
	var what []string
	if l.PgbenchInit {
		what = append(what, fmt.Sprintf("pgbench -i -s %d", scale))
	}
	if l.Setup != "" {
		what = append(what, "setup "+l.Setup)
	}
	if len(what) == 0 {
		return "no schema: the log's statements will fail without one"
	}
	return strings.Join(what, ", ")
}

// Init implements sweep.Driver: pgbench -i when asked, then the setup file.
func (l *Log) Init(ctx context.Context, dsn string, scale int) error {
	if l.PgbenchInit {
		if err := (&sweep.Pgbench{Path: l.PgbenchPath}).Init(ctx, dsn, scale); err != nil {
			return err
		}
	}
	if l.Setup == "" {
		return nil
	}
	sql, err := os.ReadFile(l.Setup)
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	cfg, err := connstr.Parse(dsn)
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	conn, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("setup: connect: %w", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, string(sql)).ReadAll(); err != nil {
		return fmt.Errorf("setup %s: %w", l.Setup, err)
	}
	return nil
}

// Run implements sweep.Driver: it replays the log at speed 0, again and again
// (every pass reads the file anew) from the start of the warm-up to the
// end of the tail, and measures the statements completed inside the
// window.
func (l *Log) Run(ctx context.Context, spec sweep.RunSpec) (sweep.Load, error) {
	if err := l.Prepare(); err != nil {
		return sweep.Load{}, err
	}
	p := l.plan
	used, mult := Fit(p.lanes, spec.Clients)
	start := time.Now()
	winStart := start.Add(spec.Warmup)
	winEnd := winStart.Add(spec.Duration)
	obs := &windowCounts{per: p.per, from: winStart, to: winEnd, errors: map[string]int64{},
		h: hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 3)}

	stop, cancelStop := context.WithDeadline(ctx, winEnd.Add(sweep.Tail))
	defer cancelStop()
	open := watchWindow(stop, winStart, winEnd, spec.OnWindow, &obs.open)

	passes, runErr := l.replayUntil(ctx, stop, spec.DSN, used, mult, obs)
	cancelStop()
	<-open.done
	if ctx.Err() != nil {
		return sweep.Load{}, ctx.Err()
	}
	if runErr != nil {
		return sweep.Load{}, fmt.Errorf("replay of %s: %w", l.Path, runErr)
	}
	if time.Now().Before(winEnd) {
		return sweep.Load{}, errors.New("the replay ended before the measured window closed")
	}
	load := obs.load(winStart, spec.Duration, time.Since(start))
	sl := load.Sessions
	sl.LogConcurrency, sl.LanesUsed, sl.Multiply, sl.Planned = p.lanes, used, mult, used*mult
	sl.MaxOpen, sl.MeanOpen, sl.Passes = int(open.max), open.mean(), passes
	return load, nil
}

// openSessions is how many replay sessions were open during the window,
// sampled every 10 ms; read after done is closed.
type openSessions struct {
	sum, n, max int64
	done        chan struct{}
}

func (o *openSessions) mean() float64 {
	if o.n == 0 {
		return 0
	}
	return math.Round(float64(o.sum)/float64(o.n)*10) / 10
}

// watchWindow tells onWindow (if set) when the window opens and samples
// open until it closes, or until stop.
func watchWindow(stop context.Context, winStart, winEnd time.Time, onWindow func(time.Time), open *atomic.Int64) *openSessions {
	o := &openSessions{done: make(chan struct{})}
	go func() {
		defer close(o.done)
		t := time.NewTimer(time.Until(winStart))
		defer t.Stop()
		select {
		case <-t.C:
		case <-stop.Done():
			return
		}
		if onWindow != nil {
			onWindow(winStart)
		}
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case now := <-tick.C:
				if !now.Before(winEnd) {
					return
				}
				n := open.Load()
				o.sum += n
				o.n++
				o.max = max(o.max, n)
			case <-stop.Done():
				return
			}
		}
	}()
	return o
}

// replayUntil replays the log pass after pass until stop, and returns
// how many passes ran and why it stopped early, if it did. Once stop is
// done, statements in flight may finish for Log.Grace; ctx done (Ctrl-C)
// cancels them at once.
func (l *Log) replayUntil(ctx, stop context.Context, dsn string, used, mult int, obs *windowCounts) (passes int, err error) {
	for stop.Err() == nil {
		res, err := l.pass(ctx, stop, dsn, used, mult, obs)
		passes++
		if err != nil {
			return passes, err
		}
		if err := passFailed(res); err != nil {
			return passes, err
		}
	}
	return passes, nil
}

// passFailed says why a pass's result must stop the step: sessions that
// could not connect, or a pass that ran nothing.
func passFailed(res *results.Result) error {
	if res.Sessions.ConnectFailed > 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "%d of %d sessions of the log could not connect", res.Sessions.ConnectFailed, res.Sessions.Total)
		for _, cf := range res.Sessions.ConnectFailures {
			fmt.Fprintf(&b, "; %s (%d sessions)", cf.Message, cf.Sessions)
		}
		return errors.New(b.String())
	}
	if res.Statements.Executed+res.Statements.Failed == 0 && !res.Partial {
		return fmt.Errorf("a pass over the log ran no statement (%d read, skipped: %v)", res.Statements.Total, res.Statements.Skipped)
	}
	return nil
}

// pass replays the log once through replayrun, as every replay of
// pgrehearse runs, the sessions of the lanes below used, each mult times.
func (l *Log) pass(ctx, stop context.Context, dsn string, used, mult int, obs *windowCounts) (*results.Result, error) {
	var keep func(string) bool
	if used < l.plan.allLanes {
		// The sessions of the lanes below used.
		keep = func(session string) bool {
			lane, ok := l.plan.lane[session]
			return !ok || lane < used
		}
	}
	grace := l.Grace
	if grace <= 0 {
		grace = 5 * time.Second
	}
	o, err := replayrun.Run(stop, replayrun.Config{
		Input:     source.Paths{l.Path},
		Source:    l.sourceOptions(),
		Selection: source.Selection{Sessions: keep},
		Replay: replay.Options{
			Target: dsn, Speed: 0, Multiply: mult, Sink: obs,
			// Not synchronized: multiplied copies never are, so steps
			// of one and of several copies run alike; and a
			// synchronized pass reads the target's catalog on a
			// connection of its own, which the step's wait-event
			// sampling would count as a client.
			Sync: syncdep.Off,
			// The sweep observes one database: every session runs as
			// the DSN's user in the DSN's database.
			UserMap: l.plan.users, DatabaseMap: l.plan.dbs,
		},
		Grace: grace, Hard: ctx.Done(),
		// The step's connection string was checked by the sweep, and a
		// pass has no logins of its own to check.
		SkipPreflight: true,
		// What a pass could not read was counted by Prepare.
		MaxSkipped: 1,
	})
	if err != nil {
		return nil, err
	}
	return o.Result, o.Err
}

// windowCounts is the replay's SampleSink during a step: it counts
// what the replay ran inside the window.
type windowCounts struct {
	per      map[string]perExec // read only
	from, to time.Time
	open     atomic.Int64

	mu               sync.Mutex
	h                *hdrhistogram.Histogram // µs, executions that succeeded
	execs, failed    int64
	stmts, tx, allTx float64
	errors           map[string]int64
}

func (o *windowCounts) SessionOpened()       { o.open.Add(1) }
func (o *windowCounts) SessionClosed()       { o.open.Add(-1) }
func (o *windowCounts) ReaderPosition(int64) {}

func (o *windowCounts) Statement(s replay.Sample) {
	if s.Skipped != "" {
		return
	}
	now := time.Now()
	pe, ok := o.per[s.Fingerprint]
	if !ok {
		pe = perExec{stmts: 1, txEnds: 1}
	}
	in := !now.Before(o.from) && now.Before(o.to)
	o.mu.Lock()
	o.allTx += pe.txEnds
	if in {
		o.execs++
		o.stmts += pe.stmts
		o.tx += pe.txEnds
		if s.SQLState != "" {
			o.failed++
			o.errors[s.SQLState]++
		} else {
			_ = o.h.RecordValue(max(s.Latency.Microseconds(), 1))
		}
	}
	o.mu.Unlock()
}

// load is the step's Load from what was counted in the window, of
// duration, the whole run having taken all. Its Sessions has the
// executions and errors; the caller adds how the sessions were made.
func (o *windowCounts) load(winStart time.Time, duration, all time.Duration) sweep.Load {
	o.mu.Lock()
	defer o.mu.Unlock()
	load := sweep.Load{WindowStart: winStart, WindowS: duration.Seconds(), SamplingRate: 1, Failed: o.failed,
		Sessions: &sweep.SessionLoad{Executions: o.execs}}
	if len(o.errors) > 0 {
		load.Sessions.ErrorsBySQLState = o.errors
	}
	load.Transactions = int64(math.Round(o.tx))
	load.TPS = o.tx / load.WindowS
	load.Statements = int64(math.Round(o.stmts))
	load.StatementsPerS = o.stmts / load.WindowS
	if all > 0 {
		load.SummaryTPS = o.allTx / all.Seconds()
	}
	h := o.h
	load.LatencySamples = h.TotalCount()
	if load.LatencySamples > 0 {
		ms := func(q float64) float64 { return float64(h.ValueAtQuantile(q)) / 1000 }
		load.Latency = sweep.Latency{Mean: h.Mean() / 1000, P50: ms(50), P95: ms(95), P99: ms(99), Max: float64(h.Max()) / 1000}
	}
	return load
}
