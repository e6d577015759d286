package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/pgrehearse/pgrehearse/internal/replayrun"
	"github.com/pgrehearse/pgrehearse/internal/report"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// addReplayOptionFlags registers the options of a replay that replay and
// rehearse share: pace, selection, maps, timeouts, synchronization,
// pre-flight, evidence. What names a target (its DSN, its log, its
// findings server) and what a command writes are each command's own, and
// so is the default of --sync (syncDefault).
func addReplayOptionFlags(fl *pflag.FlagSet, f *replayFlags, syncDefault replayrun.SyncMode) {
	fl.Float64Var(&f.speed, "speed", 1, "pace factor: 1 as logged, 2 twice as fast, 0 as fast as possible")
	addLogFlags(fl, &f.logFlags)
	fl.StringVar(&f.start, "start", "", `replay events from this log time on (RFC 3339 or "2006-01-02 15:04:05", local time without a zone)`)
	fl.StringVar(&f.end, "end", "", "replay events before this log time")
	fl.StringSliceVar(&f.databases, "database", nil, "replay only sessions of these databases (repeatable, or a comma list)")
	fl.StringSliceVar(&f.users, "user", nil, "replay only sessions of these users")
	fl.StringSliceVar(&f.applications, "application", nil, "replay only sessions of these application names")
	fl.BoolVar(&f.readOnly, "read-only", false, "replay only statements that cannot write")
	fl.BoolVar(&f.pool, "pool", false, "replay each user's, database's and application's sessions as the application's connection pool (speed > 0): each transaction runs on the first of their connections free, in the log's order, on as many connections as the log had sessions of theirs open; without it each statement waits for its own session's connection, which a pooled application does not do on a slower target (docs/by-hand.md)")
	fl.DurationVar(&f.lockTimeout, "lock-timeout", 0, "lock_timeout of every replayed session (0: the server's)")
	fl.DurationVar(&f.statementTimeout, "statement-timeout", 0, "statement_timeout of every replayed session (0: the server's)")
	fl.StringSliceVar(&f.userMap, "user-map", nil, "rename logged users on the target: from=to,... (repeatable)")
	fl.StringSliceVar(&f.dbMap, "database-map", nil, "rename logged databases on the target: from=to,... (repeatable)")
	fl.StringVar(&f.targetLogPrefix, "target-log-prefix", "", "log_line_prefix of the target's own server log files, when stderr (default: detected)")
	fl.DurationVar(&f.grace, "grace", replayrun.DefaultGrace, "after Ctrl-C, how long statements in flight may finish before they are cancelled")
	fl.DurationVar(&f.connectTimeout, "connect-timeout", 30*time.Second, "how long a session may take to connect, and the target may stay away after a connection broke before the replay stops early (exit 5)")
	fl.DurationVar(&f.ioTimeout, "io-timeout", replayrun.DefaultIOTimeout, "how long a statement may go without an answer, beyond twice its logged duration, before the replay checks the target with a new connection and stops early (exit 5) when that gets none either")
	fl.Float64Var(&f.maxLost, "max-lost", 0.1, "percent of statements that may be lost to faults (connections refused or lost, the target gone) before the run is incomplete (exit 5)")
	addMaxSkipped(fl, &f.maxSkipped)
	fl.DurationVar(&f.maxLag, "max-lag", results.DefaultMaxLag, "warn that the timings are doubtful when the replay falls behind its schedule by more than this at p99, and leave the latency of a comparison of one run a side with it unjudged (speed > 0; 0: never)")
	fl.BoolVar(&f.skipPreflight, "skip-preflight", false, "do not check, before replaying, that the target accepts the logins of the log")
	fl.BoolVar(&f.ignoreConnLimit, "ignore-connection-limit", false, "replay even when the log holds more sessions open at once than the target has free connection slots (max_connections less the reserved slots and those in use), which the pre-flight otherwise refuses (exit 1)")
	fl.BoolVar(&f.requireStart, "require-start-state", false, "fail (exit 1) before replaying when the target's tables are not the starting point the capture recorded (--monitor-dsn), or when it recorded none")
	fl.StringVar(&f.sync, "sync", syncDefault.String(), "synchronize sessions: a statement waits until the commits it depended on in the log have run on the target: "+
		"answers (as object, and a commit waits for the statements of other sessions that ended before it was sent and read what it wrote: each statement at its original point among the commits, the order that checks answers), "+
		"object (those that wrote what it reads or writes), commit (all earlier commits), "+
		"load (only what would otherwise fail or be lost: writes and locks wait as in object, reads only for changes of the schema; the commit order is otherwise the server's, as the application's was) "+
		"or off (see docs/sync.md)")
	fl.DurationVar(&f.syncTimeout, "sync-timeout", replayrun.DefaultSyncTimeout, fmt.Sprintf("longest a statement waits for the commits it depends on with no progress from the session or shard it waits on "+
		"(a wait that progresses ends anyway after %d times this); it then runs anyway, and the give-up is counted", replayrun.SyncWaitLimit))
	addObserveFlags(fl, &f.observe)
	fl.BoolVar(&f.keepSamples, "keep-samples", false, keepSamplesUsage)
}

// newLoginHints are the run's options that the advice on a refused
// login must agree with (report.LoginHints).
func newLoginHints(f replayFlags) report.LoginHints {
	h := report.LoginHints{MappedUsers: map[string]bool{}, MappedDBs: map[string]bool{}, ConnectTimeout: f.connectTimeout}
	for _, m := range []struct {
		pairs []string
		into  map[string]bool
	}{{f.userMap, h.MappedUsers}, {f.dbMap, h.MappedDBs}} {
		for _, p := range m.pairs {
			if _, to, ok := strings.Cut(p, "="); ok {
				m.into[to] = true
			}
		}
	}
	return h
}
