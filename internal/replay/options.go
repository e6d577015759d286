package replay

import (
	"fmt"
	"strings"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/syncdep"
)

// Defaults of Options.
const (
	DefaultLookahead = 10 * time.Second
	// DefaultBudget caps the statements read ahead of their sessions,
	// in all (see Options.Budget): 32 MiB holds 32,000 statements of 1
	// KiB, two seconds of 15,000 statements a second, more than a
	// paced replay that keeps up needs; a replay whose target cannot
	// keep up stops reading there (docs/performance.md, "The replay's
	// memory when its target falls behind").
	DefaultBudget    = 32 << 20
	DefaultGrace     = 10 * time.Second
	DefaultIOTimeout = 60 * time.Second
	Speed0Window     = 8 << 20
)

// Fixed timings of the engine. They were options once, which nobody set:
// neither trades anything a user could weigh, and a wrong value only
// makes a replay worse.
const (
	// stallTimeout is how long the dispatcher waits on a full budget
	// without any statement completing before it reads on (see the
	// package comment). It only decides how long a replay whose
	// sessions all wait on locks pauses before it reads the event that
	// unblocks them; progress is made either way.
	stallTimeout = 5 * time.Second

	// connectAheadBy is how long before a session's first event (at
	// speed > 0) its connection is opened, so that connection set-up is
	// not counted as the lateness of its first statement; at most
	// Lookahead. The replay clock starts once the sessions of the log's
	// first connectAheadBy have connected, so a log that opens many
	// sessions at once does not start late. A target that takes longer
	// to connect shows it as lag of first statements.
	connectAheadBy = 500 * time.Millisecond
)

// Options configure a replay.
type Options struct {
	// Target is the libpq connection string or URI of the target server.
	// Its user and database are replaced, per session, by the logged ones;
	// everything else (host, port, sslmode, password, passfile, the libpq
	// environment) applies to every session.
	Target string
	// CatalogFrom, when set, is the server whose catalog the sessions'
	// synchronization reads (syncdep.LoadCatalog: keys, foreign keys,
	// triggers, rules, views) in place of the target's, each logged
	// database by its name in CatalogDatabaseMap (absent: the logged
	// name): a rehearsal's candidate reads the control's, so that what
	// its sessions wait for is the original workload's dependencies, not
	// the candidate's change (a trigger the candidate added made every
	// write of its table wait for every earlier one: hotrow's hot update
	// waited 8.6 s a round where the control's waited 0.6 s). A catalog
	// it cannot read there is read on the target, said in a note.
	CatalogFrom        string
	CatalogDatabaseMap map[string]string

	// Speed multiplies the original pace: 1 is real time, 2 twice as
	// fast. 0 is the other schedule, Unpaced: as fast as possible (see
	// the package comment for what keeps order then); Options.Schedule
	// says which, and nothing else reads Speed as a mode.
	Speed float64

	// Pool replays, at a speed above 0, each user's, database's and
	// application's sessions as the connection pool of an application
	// that hands each request to its first free connection (HikariCP,
	// PgBouncer in transaction mode, pgbench's clients of a thread): a
	// transaction (a block, or a statement outside one) runs on the
	// first of their connections that is free, in the order the log
	// began them, on as many connections as the log had sessions of
	// theirs open (pool.go). Without it each statement runs on its own
	// session's connection: on a target slower than the original, a
	// session whose statements take longer falls behind while the others
	// wait idle, which a pooled application does not do. Session state
	// (SET, a temporary table, a session's advisory lock) is not carried
	// from one of the session's transactions to the next.
	Pool bool

	// DryRun reads and schedules without connecting: statements that would
	// run are counted as executed, with no latency.
	DryRun bool
	// Sessions says how the sessions run at speed 0 (see Sessions).
	Sessions Sessions
	// Engines is how many engines (threads) the sessions are dealt to
	// in turn when they run on the engine, as pgbench -j deals its
	// clients to threads; 0 is one. Two engines sharing a 2-core machine
	// with the server measured slower than one (docs/performance.md).
	Engines int

	// Cleanup rolls back, at the end, the prepared transactions the
	// replay prepared on the target and left prepared (see
	// results.Leftovers, which names them either way).
	Cleanup bool

	// ReadOnly replays only statements that cannot write, decided by
	// parsing; sessions also run with default_transaction_read_only=on.
	ReadOnly bool

	// Samples, when set, is offered every execution that succeeded, with
	// its parameter values and its time on the target: the result then
	// keeps each query's slowest and median executions (Result.Samples).
	// Values are personal data: only when the user asked.
	Samples *results.Sampler

	// KeepAnswers keeps every execution whose answer differed, with what
	// explains it, in the result (results.DifferingAnswer): which one of
	// the capture it was, so that its explanation can be checked there.
	// No parameter value is kept.
	KeepAnswers bool

	// LockTimeout and StatementTimeout, when not zero, are set on every
	// session at connection (startup parameters lock_timeout and
	// statement_timeout).
	LockTimeout      time.Duration
	StatementTimeout time.Duration

	// UserMap and DatabaseMap rename the logged user and database on the
	// target; names not in them are kept.
	UserMap     map[string]string
	DatabaseMap map[string]string

	// WindowLast is the log time (µs since the epoch) of the input's
	// last event, when known before the replay (a rehearsal scans its
	// log first); 0 when not. A paced replay then knows its schedule's
	// window from the clock's start (the due time of WindowLast) and,
	// when it runs past it, measures the round trips issued within it
	// apart (results.Window), and Replayer.WindowEnd says when it ends.
	WindowLast int64

	// Lookahead is how far ahead of the replay clock, in log time, events
	// are read at speed > 0; zero means DefaultLookahead.
	Lookahead time.Duration
	// Budget bounds the bytes of queued events (estimated: the events
	// and their places in the queues), the statements read ahead of
	// their sessions in all; zero means DefaultBudget. At speed > 0 it
	// is what holds the replayer's memory when the target cannot keep up
	// with the schedule: the reader waits there for the sessions
	// (Result.Reader.BudgetWaitMS) instead of reading on by the clock.
	// At speed 0 the reader stops at Speed0Window while every session has
	// events queued, and reads on up to Budget only for a session that has
	// none: the sessions need only enough queued to never wait for the
	// reader, and reading the log far ahead in one burst takes the CPU
	// that the server under test needs (measured: the first seconds of a
	// speed-0 replay of a pgbench log ran at a third of its later rate
	// while the reader filled a 256 MB budget).
	Budget int64

	// ConnectTimeout bounds each session's connecting, when the target
	// DSN does not set connect_timeout: the attempts, the retries of a
	// full listen queue and the wait behind other sessions' attempts
	// (see dial); zero means 30 s.
	ConnectTimeout time.Duration

	// IOTimeout is how long a connection of the replay may go without an
	// answer to a statement, beyond twice the statement's logged
	// duration, before the replay checks on the target with a new
	// connection: when that fails too, the target is taken for frozen
	// (a stopped process, a hung host, a network cut without a reset)
	// and the replay stops early, its result marked incomplete and
	// naming the silent connection; when the target answers and the
	// statement is still active there, it is waited for again. Zero
	// means DefaultIOTimeout.
	IOTimeout time.Duration

	// MaxLost is the share of statements (0.001 is 0.1%) that may be
	// lost to faults (sessions that could not connect or lost their
	// connection, an interruption) with the result still complete;
	// above it the result lists why in Incomplete. Zero allows none.
	MaxLost float64

	// ErrorWindow stops the replay early when its first ErrorWindow
	// statements run all failed on the target and none of them in the
	// original: a target without the schema (42P01 everywhere), the
	// wrong database. What it would measure is failures, and the whole
	// replay would take as long as the log. Zero never stops.
	ErrorWindow int

	// MaxLag is the schedule lag (p99) beyond which, at speed > 0, the
	// result warns that its timings are doubtful: statements issued late
	// put another load on the target than the original's. Zero means
	// no warning.
	MaxLag time.Duration

	// Multiply replays every original session this many times at once,
	// as independent copies: each copy is a session of its own (its own
	// goroutine, queue and connection, counted in Sessions.Total) that
	// runs all the events of the original, so that a log of 4 sessions
	// loads the target like 4*Multiply clients (the sweep's log workload
	// uses it to reach a step's client count). Zero means 1, which
	// replays the log exactly as without the option.
	//
	// The copies are not coordinated with each other: they start
	// together, under the same start barrier at speed 0 (the copies of
	// one session do not wait for each other), and then run freely. So a
	// copy repeats the original's writes: inserting the same keys fails
	// with unique violations (23505) in all but one copy, the same rows
	// are updated by every copy and they wait for each other's locks, and
	// DDL fails in all but one. Those failures are the target's errors
	// like any other (errors_by_sqlstate, failed_only_on_target), and the
	// original's error rate is not multiplied to match: compare error
	// rates of multiplied replays with care. Per query figures count
	// every copy's executions. Memory: each event is queued once per
	// copy and counted so against Budget.
	Multiply int

	// Sync synchronizes the sessions (see sync.go and package syncdep):
	// a statement waits until the commits it depended on in the log have
	// run on the target, those that wrote what it touches (Object, the
	// zero value) or all (Commit); with Load only what would otherwise
	// fail or be lost (writes and locks, as Object), reads waiting only
	// for changes of the schema. Off replays sessions freely, with only
	// the start barrier at speed 0. Multiplied sessions and dry runs are
	// not synchronized (Result.Sync says so).
	Sync syncdep.Mode
	// SyncTimeout is how long a wait goes on while the session or shard
	// it waits for makes no progress (a wait that progresses ends anyway
	// after SyncWaitLimit of them); the statement then runs anyway and
	// the give-up is counted. Zero means DefaultSyncTimeout.
	SyncTimeout time.Duration

	// StartAt, when not zero, is the start barrier the shards of a split
	// replay share: nothing runs before it, and a paced schedule maps
	// Origin (the log time every shard starts from) to it, so that the
	// shards' statements are due at the same instants as in one process.
	// Origin is called once, at the first event; nil or zero: the first
	// event's time.
	StartAt time.Time
	Origin  func() int64
	// Peers, when not nil, are the other shards whose commits this
	// shard's synchronized sessions also wait for (see Peers); nil: only
	// its own sessions' commits are waited for.
	Peers Peers
	// OthersUnseen: the log has sessions this replay does not run and
	// whose writes it does not follow (a shard with no coordination
	// database). A differing answer may then come from such a session's
	// write, run out of the original's order, so none is blamed on the
	// target's data (querystats.CauseTargetData): it stays unexplained.
	OthersUnseen bool

	// CreatedElsewhere, when not nil, tells the pre-flight which roles
	// and databases ("role:x", "db:x", as CreatedBy names them) the log
	// creates in sessions this replay does not run (other shards'), so
	// that their logins are not checked before they exist.
	CreatedElsewhere func(name string) bool

	// Sink, if not nil, receives measurements as they happen.
	Sink SampleSink

	// Cache is the fingerprint cache of the statements' texts; nil means
	// a new one. A caller that fingerprints the same texts again (the
	// target's log of the replay) shares it.
	Cache *fingerprint.Cache

	// connectLead is connectAheadBy, at most Lookahead: set by
	// withDefaults.
	connectLead time.Duration
}

func (o Options) withDefaults() Options {
	if o.Lookahead <= 0 {
		o.Lookahead = DefaultLookahead
	}
	if o.Budget <= 0 {
		o.Budget = DefaultBudget
	}
	o.connectLead = min(connectAheadBy, o.Lookahead)
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = 30 * time.Second
	}
	if o.IOTimeout <= 0 {
		o.IOTimeout = DefaultIOTimeout
	}
	if o.Sink == nil {
		o.Sink = nopSink{}
	}
	if o.Multiply <= 0 {
		o.Multiply = 1
	}
	if o.SyncTimeout <= 0 {
		o.SyncTimeout = DefaultSyncTimeout
	}
	return o
}

// Validate reports the first option that cannot run. New calls it; a
// caller that tells bad input from a failed run (the CLI's usage errors)
// calls it first.
func (o Options) Validate() error {
	if o.Target == "" && !o.DryRun {
		return fmt.Errorf("no target: give a connection string, or make it a dry run")
	}
	if o.Speed < 0 || o.Speed != o.Speed {
		return fmt.Errorf("speed must be 0 (as fast as possible) or positive, got %v", o.Speed)
	}
	if o.Pool && o.Speed == 0 {
		return fmt.Errorf("a pooled replay hands each transaction to the first free connection at its time in the log: it needs a speed above 0")
	}
	if o.Multiply < 0 {
		return fmt.Errorf("multiply must be 1 or more (0 means 1), got %d", o.Multiply)
	}
	if o.MaxLost < 0 || o.MaxLost > 1 || o.MaxLost != o.MaxLost {
		return fmt.Errorf("the share of statements that may be lost must be between 0 and 1, got %v", o.MaxLost)
	}
	if o.ErrorWindow < 0 {
		return fmt.Errorf("the error window must not be negative, got %d", o.ErrorWindow)
	}
	if o.MaxLag < 0 {
		return fmt.Errorf("the lag to warn beyond must not be negative, got %v", o.MaxLag)
	}
	if o.LockTimeout < 0 || o.StatementTimeout < 0 {
		return fmt.Errorf("the lock and statement timeouts must not be negative (0: the server's), got %v and %v", o.LockTimeout, o.StatementTimeout)
	}
	if o.Sync > syncdep.Answers {
		return fmt.Errorf("unknown synchronization mode %d", o.Sync)
	}
	if o.IOTimeout < 0 {
		return fmt.Errorf("the I/O timeout must not be negative, got %v", o.IOTimeout)
	}
	if o.SyncTimeout < 0 {
		return fmt.Errorf("the sync timeout must not be negative, got %v", o.SyncTimeout)
	}
	return nil
}

// ParseMap reads "a=b,c=d" pairs, as --user-map and --database-map take
// them.
func ParseMap(pairs []string) (map[string]string, error) {
	m := map[string]string{}
	for _, p := range pairs {
		for _, kv := range strings.Split(p, ",") {
			kv = strings.TrimSpace(kv)
			if kv == "" {
				continue
			}
			from, to, ok := strings.Cut(kv, "=")
			if !ok || from == "" || to == "" {
				return nil, fmt.Errorf("map entry %q is not from=to", kv)
			}
			m[from] = to
		}
	}
	return m, nil
}

func mapped(m map[string]string, v string) string {
	if to, ok := m[v]; ok {
		return to
	}
	return v
}

// syncMode is how a result names m.
func syncMode(m syncdep.Mode) results.SyncMode {
	switch m {
	case syncdep.Object:
		return results.SyncObject
	case syncdep.Commit:
		return results.SyncCommit
	case syncdep.Load:
		return results.SyncLoad
	case syncdep.Answers:
		return results.SyncAnswers
	}
	return results.SyncOff
}

// Sessions is how the sessions of a replay run. Dry runs always give each
// session a goroutine.
type Sessions int

const (
	// SessionsAuto runs them on one engine when the process has at most
	// two CPUs to run Go code on (GOMAXPROCS), else on goroutines. One
	// engine drives every session from one thread, as pgbench -j 1:
	// with one or two CPUs it measured better than the goroutines on
	// both rate and CPU (docs/performance.md); with more, goroutines use
	// them all, where one engine stops at one CPU's worth of statements.
	SessionsAuto Sessions = iota
	// SessionsGoroutines gives each session a goroutine of its own.
	SessionsGoroutines
	// SessionsEngine runs them as coroutines of one engine, which
	// waits for all their connections with one epoll (Linux; elsewhere
	// goroutines).
	SessionsEngine
)

// autoEngineCPUs is the most CPUs (GOMAXPROCS) with which SessionsAuto
// chooses the engine: up to where it was measured (a 2-core machine).
const autoEngineCPUs = 2

// engine reports whether the sessions of a replay with this schedule
// run on the engine, with gomaxprocs CPUs for Go code.
func (m Sessions) engine(paced, dryRun bool, gomaxprocs int) bool {
	if dryRun {
		return false
	}
	switch m {
	case SessionsEngine:
		return true
	case SessionsAuto:
		return gomaxprocs <= autoEngineCPUs
	}
	return false
}

// engines is how many engines a replay on the engine runs.
func (o Options) engines() int {
	return max(o.Engines, 1)
}

func (m Sessions) String() string {
	switch m {
	case SessionsAuto:
		return "auto"
	case SessionsGoroutines:
		return "goroutines"
	case SessionsEngine:
		return "engine"
	}
	return fmt.Sprintf("Sessions(%d)", int(m))
}

// DefaultErrorWindow is the replay command's Options.ErrorWindow: enough
// statements that a target which fails them all, none of them failed in
// the original, is not the target the log needs, and few enough that a
// replay onto it stops within seconds.
const DefaultErrorWindow = 50
