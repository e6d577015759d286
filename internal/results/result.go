package results

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/querystats"
	"github.com/pgrehearse/pgrehearse/internal/timeline"
)

// Version is the version of the JSON form that Encode writes. Version 1
// is the form of the releases before versions were written: no "version"
// field, latency histograms only on request, an analysis's "sessions" a
// plain number. Version 2 had no input, part, other_shards nor
// incomplete_reasons.
const Version = 3

// Kind is what produced a result.
type Kind string

// Kinds of results.
const (
	// KindAnalysis: the analysis of server logs; the figures are what
	// the server logged.
	KindAnalysis Kind = "analysis"
	// KindReplay: a replay against a target; Replay holds what only a
	// replay has.
	KindReplay Kind = "replay"
)

// Valid reports whether k is a known kind.
func (k Kind) Valid() bool { return k == KindAnalysis || k == KindReplay }

// LatencySource says where a result's durations were measured. Only
// results of the same source compare: a client round trip includes
// network and client time that a server-side duration does not have.
type LatencySource string

// Latency sources.
const (
	// LatencyServerLog: durations the server logged
	// (log_min_duration_statement); server-side.
	LatencyServerLog LatencySource = "server_log"
	// LatencyClient: round trips measured by the replaying client.
	LatencyClient LatencySource = "client"
	// LatencyPgStatStatements: execution times from pg_stat_statements
	// deltas; server-side, but without parse/bind and, unless
	// track_planning is on, without planning.
	LatencyPgStatStatements LatencySource = "pg_stat_statements"
)

// Valid reports whether s is a known source.
func (s LatencySource) Valid() bool {
	switch s {
	case LatencyServerLog, LatencyClient, LatencyPgStatStatements:
		return true
	}
	return false
}

// ServerSide reports whether durations of s were measured by the server.
func (s LatencySource) ServerSide() bool {
	return s == LatencyServerLog || s == LatencyPgStatStatements
}

// Result is what one run measured. Fields that a kind does not have are
// zero; Replay is nil for an analysis. Its JSON form is the contract of
// `pgrehearse analyze --json` and `pgrehearse replay --json`
// (docs/results-json.md).
type Result struct {
	// Source names where the result came from (a file), for messages;
	// not part of the JSON.
	Source string `json:"-"`

	Version       int           `json:"version"`
	Kind          Kind          `json:"kind"`
	LatencySource LatencySource `json:"latency_source"`
	// Partial marks a run that stopped early (interrupted, or a read
	// error): it covers only what was read or ran.
	Partial bool `json:"partial,omitempty"`
	// Incomplete says why the run did not do all it claims, though it
	// ran to its end: part of the workload was lost (sessions that could
	// not connect or lost their connection, a target that went away) or
	// part of the input could not be read. Empty for a complete run.
	Incomplete []string `json:"incomplete,omitempty"`
	// IncompleteReasons are the kinds of the entries of Incomplete, one
	// each, in the same order: what a consumer tests (MarkIncomplete
	// adds both).
	IncompleteReasons []IncompleteReason `json:"incomplete_reasons,omitempty"`
	// Degraded says why a replay's timings cannot be trusted though it
	// ran to its end with (almost) every statement: recovering from a
	// fault changed them (sessions reconnected after a restart, sync
	// waits given up at their timeout beyond the documented share).
	// Like an incomplete result, a degraded one is not judged.
	Degraded []string `json:"degraded,omitempty"`
	// DegradedReasons are the kinds of the entries of Degraded, one each,
	// in the same order (MarkDegraded adds both).
	DegradedReasons []DegradedReason `json:"degraded_reasons,omitempty"`
	// Warnings are what a reader must know before trusting the figures
	// (a replay that fell behind its schedule, so the target saw another
	// load than the original's); a report repeats them.
	Warnings []string `json:"warnings,omitempty"`

	Files []string `json:"files"`
	// Input names the files read, with their sizes and content hashes,
	// so that results of the same input are known as such; nil when the
	// producer was not told (events from memory).
	Input *Input `json:"input,omitempty"`
	// Part says which part of its input the result covers (shards, a
	// round); nil for the whole input.
	Part      *Part `json:"part,omitempty"`
	FirstTime Time  `json:"first_time,omitzero"`
	LastTime  Time  `json:"last_time,omitzero"`

	// Lines account for every line of the logs read, when the producer
	// read logs and was told their counts.
	Lines *LineCounts `json:"lines,omitempty"`
	// Messages account for every record of the captures read, when the
	// producer read a capture of the proxy.
	Messages   *MessageCounts  `json:"messages,omitempty"`
	Statements StatementCounts `json:"statements"`
	// Events counts the events read by kind ("connect", "execute",
	// ...), including those that are not calls.
	Events   map[event.Kind]int64 `json:"events,omitempty"`
	Sessions SessionCounts        `json:"sessions"`
	// Filtered counts what the time window and filters left out
	// (--start, --end, --database...), outside Statements.
	Filtered Filtered `json:"filtered"`
	// OtherShards counts what a shard left to the other shards, apart
	// from Filtered; nil when the sessions were not split.
	OtherShards      *OtherShards     `json:"other_shards,omitempty"`
	ErrorsBySQLState map[string]int64 `json:"errors_by_sqlstate"`
	// ErrorsOutsideStatements counts the errors among ErrorsBySQLState
	// that no statement reports: a Parse or Bind the client never
	// executed (psql's \gdesc), a FATAL outside any statement. The
	// other errors are the failed statements'; an analysis only.
	ErrorsOutsideStatements int64 `json:"errors_outside_statements,omitempty"`
	// Queries are per fingerprint, by total time, most first, each with
	// its latency histogram.
	Queries []querystats.Row `json:"queries"`
	// Timeline is the activity over time: statements, errors and p95
	// per bucket of wall (log) time.
	Timeline *timeline.JSON `json:"timeline,omitempty"`
	// Evidence is the server-side evidence of the run (package
	// observe's JSON), kept as it was written; nil without.
	Evidence json.RawMessage `json:"evidence,omitempty"`

	// KeptSamples: the user asked to keep parameter values
	// (--keep-samples), and Samples holds them. Without, the result
	// holds no parameter value, and plans made from it are generic.
	KeptSamples bool `json:"kept_samples,omitempty"`
	// Samples are, per fingerprint, its slowest and its median
	// executions with their parameter values; only with KeptSamples.
	Samples []QuerySamples `json:"samples,omitempty"`
	// LoggedPlans are, per fingerprint, the plan the server logged
	// with auto_explain, when its log had any (an analysis).
	LoggedPlans []LoggedPlan `json:"logged_plans,omitempty"`

	*Replay
}

// Replay is what only a replay has.
type Replay struct {
	DryRun bool    `json:"dry_run,omitempty"`
	Speed  float64 `json:"speed"`
	// Pooled: each user's, database's and application's sessions were
	// replayed as their application's connection pool (replay.Options.Pool).
	Pooled bool `json:"pooled,omitempty"`
	// StartedAt and EndedAt are the wall-clock times the replay ran
	// between; WallSeconds is the time between them.
	StartedAt   Time    `json:"started_at,omitzero"`
	EndedAt     Time    `json:"ended_at,omitzero"`
	WallSeconds float64 `json:"wall_seconds"`
	// ClientCPUSeconds is the CPU time the replayer itself used, where
	// the platform tells.
	ClientCPUSeconds float64 `json:"client_cpu_seconds,omitempty"`
	// TargetLocal: the target is on the replayer's machine, so the
	// replayer's CPU was taken from the server.
	TargetLocal bool `json:"target_local,omitempty"`

	// Lost counts the statements not replayed because of a fault: a
	// session that could not connect or lost its connection, a target
	// that went away, an interruption. They are among the skipped ones;
	// the others were skipped by design (parameters not logged, COPY
	// data, --read-only).
	Lost int64 `json:"lost"`

	// ReplayerDelayed counts the statements whose time on the target
	// included a wait the replayer made: a row lock held by a session
	// that was itself in a sync wait (holding its open transaction while
	// it waited for another session's commit). They are counted in
	// their queries' calls without a latency, so that the comparison
	// leaves their times out.
	ReplayerDelayed int64 `json:"replayer_delayed,omitempty"`

	// LagSources splits the schedule lag by the side that caused it;
	// nil at speed 0 or when nothing was late.
	LagSources *LagSources `json:"lag_sources,omitempty"`

	// Destructive counts the statements read that destroy or reshape
	// data or schema (DROP TABLE, TRUNCATE, DELETE without WHERE, ALTER
	// TABLE...), by kind, whether they ran or not.
	Destructive map[string]int64 `json:"destructive,omitempty"`

	// Lag is how late statements were issued against their schedule,
	// in ms; nil at speed 0, where there is no schedule.
	Lag *Distribution `json:"lag_ms"`
	// Connections is how long the sessions' connections took to set
	// up on the target; nil in a dry run and in results from before.
	Connections *Connections `json:"connections,omitempty"`
	// Finish is how far behind its schedule the replay finished, which
	// the lag does not say: a statement's lag leaves out the waits for
	// other sessions' commits and its own session's earlier statements
	// running late. Nil at speed 0, in a dry run, for a replay that
	// stopped early, and in results written before it was recorded.
	Finish *Finish `json:"finish,omitempty"`
	// Window is the paced replay's schedule window, measured apart
	// because the replay issued statements after it (Window's comment
	// says why); nil when it issued none, at speed 0, when the window's
	// end was known only after it had passed (the input's last event
	// neither given, replay.Options.WindowLast, nor read in time), and
	// in results written before it was recorded. Shards merge theirs
	// (mergeWindows); a shard that fell behind without one leaves the
	// merge without one.
	Window *Window `json:"window,omitempty"`
	// MaxLagMS is the lag p99 beyond which the replay's timings are
	// doubtful (its --max-lag, in ms; 0: never), which the replay
	// warned by and a comparison judges by (Lagged); nil in results
	// written before it was recorded, which DefaultMaxLag then stands
	// for.
	MaxLagMS *float64 `json:"max_lag_ms,omitempty"`
	// Sync is what synchronizing the sessions did (docs/sync.md); nil
	// in results written before it existed.
	Sync *Sync `json:"sync,omitempty"`
	// SyncWait is the time statements waited for other sessions'
	// commits (synchronized replay), in ms; nil when not synchronized.
	SyncWait *Distribution `json:"sync_wait_ms,omitempty"`

	// Errors are examples of the target's errors, one per SQLSTATE and
	// fingerprint, most frequent first (at most MaxErrorSamples).
	Errors   []ErrorSample `json:"errors"`
	Outcomes Outcomes      `json:"outcomes"`
	// DifferingAnswers are the executions whose answers differed, in
	// the order decided (--keep-answers; at most MaxDifferingAnswers,
	// DifferingAnswersDropped the others); nil when not asked.
	DifferingAnswers        []DifferingAnswer `json:"differing_answers,omitempty"`
	DifferingAnswersDropped int64             `json:"differing_answers_dropped,omitempty"`
	Reader                  ReaderCounts      `json:"reader"`

	// ClientQueries are the client round trips when Queries are the
	// target's server-side figures (read from its log); absent
	// otherwise.
	ClientQueries []querystats.Row `json:"client_queries,omitempty"`
	// TargetLog describes the target's log when Queries come from it.
	TargetLog *TargetLog `json:"target_log,omitempty"`

	// Shards describes each shard of a replay split by session: its
	// own, in a shard's result; every shard merged, in shard order, in
	// a merge's.
	Shards []ShardRun `json:"shards,omitempty"`

	// StartupSettings says what a replay knows of the settings that
	// the original clients sent when they connected, outside any
	// statement (libpq's PGOPTIONS, PGTZ, PGDATESTYLE...), which change
	// results silently; nil in an analysis and in results from before.
	StartupSettings *StartupSettings `json:"startup_settings,omitempty"`

	// StartDigests is how the target's table digests compared, before
	// the first statement, with those the capture stored at its start;
	// nil when none were compared. A difference proven stops the replay
	// before it runs (no result); one on a table written around the
	// start's digest is listed in Unproven and the replay goes on.
	StartDigests *StartDigests `json:"start_digests,omitempty"`

	// Preamble counts what a replay of a capture ran to recreate the
	// state of the sessions recorded from the middle before their first
	// statement; nil when it had none.
	Preamble *Preamble `json:"preamble,omitempty"`

	// BatchInserts is what --batch-inserts did to the workload's
	// single-row INSERTs; nil when it was not asked.
	BatchInserts *BatchInserts `json:"batch_inserts,omitempty"`
	// Leftovers is what the replay left behind on the target (prepared
	// transactions), or held there when its sessions ended (advisory
	// locks); nil when nothing.
	Leftovers *Leftovers `json:"leftovers,omitempty"`
}

// BatchInserts counts what a replay with batched INSERTs sent: a session's
// consecutive single-row INSERT ... VALUES into one table with one column
// list, with no other statement of the session between them (so within
// one transaction, or one run of autocommit statements), went as one
// multi-row INSERT of up to Max rows. Max 1 counts without merging, for a
// replay to compare with.
type BatchInserts struct {
	Max int `json:"max"`
	// Statements are the single-row INSERTs that could be merged (read,
	// whether merged or not); Batches the INSERTs sent for them, Rows
	// the rows those carried (Statements, when every one was sent).
	Statements int64 `json:"statements"`
	Batches    int64 `json:"batches"`
	Rows       int64 `json:"rows"`
	// NotBatched counts the INSERTs left as they were, by reason.
	NotBatched map[string]int64 `json:"not_batched,omitempty"`
	// Tables are the rows each table received through mergeable
	// INSERTs, by name as the statements wrote it.
	Tables map[string]int64 `json:"tables,omitempty"`
	// InsertMS is the time the target took for the statements that
	// carried those rows (batches, or single rows with Max 1), as the
	// replay measured it; WALBytes the WAL the target wrote during the
	// replay, -1 when it could not be read.
	InsertMS float64 `json:"insert_ms"`
	WALBytes int64   `json:"wal_bytes"`
}

// Preamble is what a replay ran, apart from the workload's statements,
// to recreate the sessions a capture recorded from the middle: their
// settings and SQL-level prepared statements, on each of their
// connections, untimed and not compared. Their protocol-level prepared
// statements are prepared as any others, when first executed.
type Preamble struct {
	// Sessions are the sessions recorded from the middle that connected;
	// Statements the preamble statements run, Failed those of them the
	// target refused (a role it lacks, say).
	Sessions   int64 `json:"sessions"`
	Statements int64 `json:"statements"`
	Failed     int64 `json:"failed"`
}

// StartDigests is the pre-flight's comparison of the target's table
// digests with the start's.
type StartDigests struct {
	// Compared counts the tables digested at the start and compared on
	// the target; Match those whose digests are equal.
	Compared int `json:"compared"`
	Match    int `json:"match"`
	// Unproven are the tables whose digests differ but were written
	// while the start's digest and position were read, so that a copy
	// at the start's position may differ so: not the target's fault for
	// certain, their answers not proven either way.
	Unproven []UnprovenDigest `json:"unproven,omitempty"`
}

// UnprovenDigest is one table whose digest differs, not proven.
type UnprovenDigest struct {
	// Table is schema.name; Ranges the key ranges that differ ("keys
	// 1..6250", "all rows"), or Why the table could not be compared.
	Table  string   `json:"table"`
	Ranges []string `json:"ranges,omitempty"`
	Why    string   `json:"why,omitempty"`
	// Written is the rows written in it around the start's digest, as
	// the cumulative statistics told; -1 when they could not tell.
	Written int64 `json:"written"`
}

// StartupSettings is what a replay knows of its sessions' startup
// settings. A capture records each session's startup parameters, and
// the replay sets them on its connection. A server log records none of
// them: the replay's sessions run with the target's defaults, and what
// the original's were is not known. The replay says so, with the
// target's values of the reported settings that decide results, and
// with the evidence it has that they differed: sessions of a client
// known to set some (pg_regress), and executions that failed on one side
// only with a date, time or interval error. It cannot see a difference
// that changes a result without an error (a time printed in another
// zone, another DateStyle's output).
type StartupSettings struct {
	// Recorded: the input recorded the startup parameters (a capture),
	// and the replay set them; false for a log.
	Recorded bool `json:"recorded"`
	// SessionsWithSettings counts the sessions whose recorded startup
	// parameters set something beyond the user, database and
	// application name.
	SessionsWithSettings int64 `json:"sessions_with_settings,omitempty"`
	// Target holds the values the target reported to the replay's first
	// connection without recorded settings (TimeZone, DateStyle,
	// IntervalStyle, client_encoding): its defaults, as the replay's
	// sessions of a log ran with them.
	Target map[string]string `json:"target,omitempty"`
	// KnownClients counts the sessions, by application name, of clients
	// known to connect with startup settings of their own, and says
	// which (pg_regress: TimeZone, DateStyle and IntervalStyle).
	KnownClients []KnownClient `json:"known_clients,omitempty"`
	// DateTimeDiffers counts the executions that failed on one side
	// only (the original or the target) with a date, time or interval
	// error (SQLSTATE 22007, 22008, 22009, 22015): what another
	// TimeZone, DateStyle or IntervalStyle makes.
	DateTimeDiffers int64 `json:"datetime_outcomes_differ,omitempty"`
	// Suspect: KnownClients or DateTimeDiffers say that the original's
	// sessions may have run with other settings than the replay's.
	Suspect bool `json:"suspect,omitempty"`
	// Note says the above in a sentence, for a report.
	Note string `json:"note"`
}

// KnownClient is a client known to set startup settings of its own.
type KnownClient struct {
	Application string            `json:"application"`
	Sessions    int64             `json:"sessions"`
	Settings    map[string]string `json:"settings"`
}

// Sync is what synchronizing a replay's sessions did: a statement waited
// until the commits it depended on in the log had run on the target.
// Waits are counted per execution event, as Outcomes are; their times are
// Replay.SyncWait.
type Sync struct {
	Mode           SyncMode `json:"mode"`
	TimeoutSeconds float64  `json:"timeout_seconds,omitempty"`
	// Waited counts statements that waited for another session's
	// commit.
	Waited int64 `json:"waited"`
	// Timeouts counts waits given up after TimeoutSeconds; Deadlocks
	// those given up because the awaited session was blocked by the
	// waiting session's own locks. Both statements ran anyway.
	Timeouts  int64 `json:"timeouts"`
	Deadlocks int64 `json:"deadlocks_unblocked"`
	// SessionStartsWaited counts sessions whose connection, at speed 0,
	// waited for earlier statements of unknown effect (DDL that may have
	// created their role or database).
	SessionStartsWaited int64 `json:"session_starts_waited,omitempty"`
	// CatalogMS is how long reading the target's catalogs took, at the
	// start (part of the replay's wall time).
	CatalogMS float64 `json:"catalog_ms"`
	// TimeoutsByCause splits Timeouts by what the awaited session was
	// doing when the wait gave up (the Sync* cause constants of package
	// replay).
	TimeoutsByCause map[string]int64 `json:"timeouts_by_cause,omitempty"`
	// CheckReconnects counts the times the deadlock check's own
	// connection was lost and made again.
	CheckReconnects int64 `json:"check_reconnects,omitempty"`
	// LostTransactions counts the logged transactions whose commit never
	// ran on the target because of a fault (a crash or restart lost the
	// transaction in flight, its session lost its connection); LostCommits
	// lists the first of them with their place in the log's commit order.
	// Statements that waited for one were not run, and are counted as
	// skipped for a lost dependency.
	LostTransactions int64        `json:"lost_transactions,omitempty"`
	LostCommits      []LostCommit `json:"lost_commits,omitempty"`
	// Scope says how far a shard of a split replay synchronized:
	// across every shard, or within its own sessions only; empty when
	// the replay was not split.
	Scope SyncScope `json:"scope,omitempty"`
	// ShardLost counts waits given up because the awaited commit was
	// another shard's that was lost (SyncGiveUpShardLost): the statement
	// ran without it.
	ShardLost int64 `json:"shard_lost,omitempty"`
	// ByRow counts the executions ordered by the row their primary key
	// names (object mode), KeyNotLogged those of the same forms whose
	// key value the log did not give (parameters missing or cut, a
	// constant written in a form the replay does not read), ordered by
	// their whole table.
	ByRow        int64 `json:"by_row,omitempty"`
	KeyNotLogged int64 `json:"key_not_logged,omitempty"`
	// Notes say where synchronization did less than asked: off for a
	// reason, a database waited on in commit mode because its catalog
	// could not be read, the deadlock check unavailable.
	Notes []string `json:"notes,omitempty"`
}

// MaxLostCommits bounds Sync.LostCommits.
const MaxLostCommits = 100

// LostCommit is a logged transaction that a fault lost on the target.
type LostCommit struct {
	// Position is its place in the log's commit order (from 1), At the
	// log time of the event that committed it.
	Position uint64 `json:"position"`
	At       Time   `json:"at"`
}

// Finish is when a paced replay finished against its schedule.
type Finish struct {
	// ScheduleSeconds is how long the schedule lasted: from the replay
	// clock's start to the last event's due time (the log's span over
	// the speed).
	ScheduleSeconds float64 `json:"schedule_seconds"`
	// BehindSeconds is how much later than the schedule's end the
	// replay finished (its last session done); 0 on time. A replay's
	// last statement is due when it started in the log, so its own
	// duration is in this too.
	BehindSeconds float64 `json:"behind_seconds"`
}

// Window is the part of a paced replay that ran within its schedule:
// from the replay clock's start to the due time of the log's last
// event. When the target cannot keep up, each replayed session falls
// behind and runs its log to its end, so the sessions with less work
// finish first and the last ones run with fewer neighbours, and faster;
// an application's clients instead keep sending until they are stopped,
// all together. Within the window every session that fell behind still
// has statements to run, as the application's clients had: a
// comparison judges a query's mean on its calls issued within it (issue
// 58; bench/forecast's saturated candidates).
type Window struct {
	// Seconds is the window's length; AfterSeconds how long the
	// replay ran past it.
	Seconds      float64 `json:"seconds"`
	AfterSeconds float64 `json:"after_seconds"`
	// End is the window's end, µs since the epoch: when the observer's
	// pg_stat_statements snapshot of the window was asked for.
	End Time `json:"end"`
	// Statements counts the statements issued within the window
	// (those of the result's not issued after it), AfterStatements
	// those issued after it; Calls and AfterCalls the same of the
	// queries' calls (a statement of several queries is several).
	Statements      int64 `json:"statements"`
	AfterStatements int64 `json:"after_statements"`
	Calls           int64 `json:"calls"`
	AfterCalls      int64 `json:"after_calls"`
	// Queries are each query's client round trips issued within the
	// window, most calls first.
	Queries []WindowQuery `json:"queries"`
}

// WindowQuery is one query's round trips within a Window.
type WindowQuery struct {
	Fingerprint string  `json:"fingerprint"`
	Calls       int64   `json:"calls"`
	TimedCalls  int64   `json:"timed_calls"`
	TotalMS     float64 `json:"total_ms"`
	MeanMS      float64 `json:"mean_ms"`
}

// DefaultMaxLag is the schedule lag p99 beyond which a replay's timings
// are doubtful unless told otherwise (replay --max-lag, headroom's SLO):
// statements issued that late put another load on the target than the
// original's, and overlap otherwise (lock waits the original did not
// have), so their latencies are not evidence of the target's.
const DefaultMaxLag = 100 * time.Millisecond

// LagRule is the one rule by which a replay fell behind its schedule too
// far for its timings to be trusted: its lag p99 above its threshold.
// The replay warns by it and a comparison of one run a side leaves the
// latency of such a replay unjudged (package compare).
type LagRule struct {
	// P99MS and MaxMS are the replay's lag p99 and max in ms;
	// ThresholdMS is the threshold it exceeded (MaxLagMS, or
	// DefaultMaxLag's when the result does not say).
	P99MS       float64
	MaxMS       float64
	ThresholdMS float64
}

// LagBeyond reports whether lag p99 (in ms) is beyond maxLag, the rule
// itself: a non-positive maxLag never is.
func LagBeyond(p99MS float64, maxLag time.Duration) bool {
	return maxLag > 0 && p99MS > float64(maxLag.Microseconds())/1000
}

// Lagged says whether the replay fell behind its schedule beyond the
// threshold it ran with (MaxLagMS, DefaultMaxLag when unrecorded), and by
// how much; false for an analysis, a replay at speed 0 (no schedule) or
// one within its threshold.
func (r *Result) Lagged() (LagRule, bool) {
	if r == nil || r.Replay == nil || r.Lag == nil {
		return LagRule{}, false
	}
	maxLag := DefaultMaxLag
	if r.MaxLagMS != nil {
		maxLag = time.Duration(*r.MaxLagMS * float64(time.Millisecond))
	}
	if !LagBeyond(r.Lag.P99, maxLag) {
		return LagRule{}, false
	}
	return LagRule{P99MS: r.Lag.P99, MaxMS: r.Lag.Max, ThresholdMS: float64(maxLag.Microseconds()) / 1000}, true
}

// LagSources is the schedule lag of a replay split by its cause, in ms
// summed over the late statements: TargetMS is lateness of statements
// whose session was still waiting on the target when they were due (for
// its previous statement, its connection's start-up, or its client's
// previous session: the target was slower than the original);
// ReplayerMS the rest, lateness the replayer itself caused (its CPU, its
// goroutines scheduled late, its reading).
type LagSources struct {
	TargetMS   float64 `json:"target_ms"`
	ReplayerMS float64 `json:"replayer_ms"`
}

// MessageSkip says why a record of a capture made no event.
type MessageSkip string

// MessageCounts account for every record of a capture of the proxy, as
// LineCounts do for a log's lines: each was used (it made or completed an
// event) or skipped for a reason, so Total = Used + the sum of Skipped.
// The capture's decoder counts in this type (capture.MessageCounts is
// it), so that the counts reach a result as they were counted.
// Dropped are the messages the recorder lost (not in Total), and
// OpenSessions the sessions still open when the capture stopped.
type MessageCounts struct {
	Total        int64                 `json:"total"`
	Used         int64                 `json:"used"`
	Skipped      map[MessageSkip]int64 `json:"skipped"`
	Dropped      int64                 `json:"dropped,omitempty"`
	OpenSessions int64                 `json:"open_sessions,omitempty"`
	// ResumedSessions are the sessions a capture recorded from the
	// middle (open when its recording started), Preamble the state
	// items (settings, prepared statements) their replays recreate
	// before their first statement, and BeforeRecording the messages
	// those sessions sent after the recording started and before their
	// first idle point, by reason: relayed, never recorded, so not in
	// Total.
	ResumedSessions int64            `json:"resumed_sessions,omitempty"`
	Preamble        int64            `json:"preamble,omitempty"`
	BeforeRecording map[string]int64 `json:"skipped_before_recording,omitempty"`
}

// SkippedTotal is the sum of Skipped.
func (c MessageCounts) SkippedTotal() int64 { return sum(c.Skipped) }

// Add adds o's counts to c.
func (c *MessageCounts) Add(o MessageCounts) {
	c.Total += o.Total
	c.Used += o.Used
	c.Skipped = addCounts(c.Skipped, o.Skipped)
	c.Dropped += o.Dropped
	c.OpenSessions += o.OpenSessions
	c.ResumedSessions += o.ResumedSessions
	c.Preamble += o.Preamble
	for k, v := range o.BeforeRecording {
		if c.BeforeRecording == nil {
			c.BeforeRecording = map[string]int64{}
		}
		c.BeforeRecording[k] += v
	}
}

// LineCounts account for every physical line of the logs: each was parsed
// or skipped for a reason, so Total = Parsed + the sum of Skipped.
type LineCounts struct {
	Total   int64              `json:"total"`
	Parsed  int64              `json:"parsed"`
	Skipped map[LineSkip]int64 `json:"skipped"`
}

// SkippedTotal is the sum of Skipped.
func (c LineCounts) SkippedTotal() int64 { return sum(c.Skipped) }

// Add adds o's counts to c. A reason whose count sums to nothing is not
// listed (the parts of a split log may move a count from one to another).
func (c *LineCounts) Add(o LineCounts) {
	c.Total += o.Total
	c.Parsed += o.Parsed
	c.Skipped = addCounts(c.Skipped, o.Skipped)
}

// StatementCounts account for every statement read, after splitting
// strings that hold several: Total == Executed + Failed + the sum of
// Skipped, always. An analysis skips nothing: every statement the log
// shows ran, and failed or not.
type StatementCounts struct {
	Total    int64                `json:"total"`
	Executed int64                `json:"executed"`
	Failed   int64                `json:"failed"`
	Skipped  map[SkipReason]int64 `json:"skipped"`
	// Unparsed statements did not parse (they are among Failed unless
	// the log missed the error) and have a fallback fingerprint.
	Unparsed int64 `json:"unparsed,omitempty"`
	// Empty counts query strings with no statement at all (only
	// comments or whitespace); they are not in Total.
	Empty int64 `json:"empty"`
}

// SkippedTotal is the sum of Skipped.
func (c StatementCounts) SkippedTotal() int64 { return sum(c.Skipped) }

// Check reports an error when the counts do not add up.
func (c StatementCounts) Check() error {
	if got := c.Executed + c.Failed + c.SkippedTotal(); got != c.Total {
		return fmt.Errorf("statements do not add up: %d executed + %d failed + %d skipped = %d, not the total %d",
			c.Executed, c.Failed, c.SkippedTotal(), got, c.Total)
	}
	return nil
}

// SessionCounts count the original sessions and, for a replay, their
// connections to the target.
type SessionCounts struct {
	Total         int64 `json:"total"`
	Reconnects    int64 `json:"reconnects,omitempty"`
	ConnectFailed int64 `json:"connect_failed,omitempty"`
	// ConnectRetries counts connection attempts refused because the
	// server's listen queue was full and tried again.
	ConnectRetries int64 `json:"connect_retries,omitempty"`
	// CreatedElsewhereRetries counts statement attempts that failed
	// because a relation the log creates in another shard's session did
	// not exist yet on the target, and were run again (a shard without a
	// coordination database does not wait for other shards' commits).
	CreatedElsewhereRetries int64 `json:"created_elsewhere_retries,omitempty"`
	// ConnectFailedAsOriginal counts sessions that failed to connect on
	// the target as they had in the original; not in ConnectFailed.
	ConnectFailedAsOriginal int64 `json:"connect_failed_as_original,omitempty"`
	// ConnectFailures group the failed connections by what failed.
	ConnectFailures []ConnectFailure `json:"connect_failures,omitempty"`
}

// UnmarshalJSON also reads version 1 analyses, whose "sessions" is the
// number of sessions.
func (c *SessionCounts) UnmarshalJSON(b []byte) error {
	var n int64
	if err := json.Unmarshal(b, &n); err == nil {
		*c = SessionCounts{Total: n}
		return nil
	}
	type plain SessionCounts
	return json.Unmarshal(b, (*plain)(c))
}

// ConnectFailure is one way sessions failed to connect.
type ConnectFailure struct {
	User     string `json:"user"`
	Database string `json:"database"`
	SQLState string `json:"sqlstate,omitempty"`
	Message  string `json:"message"`
	Sessions int64  `json:"sessions"`
}

// ErrorSample is an example of an error of the target.
type ErrorSample struct {
	SQLState    string `json:"sqlstate"`
	Fingerprint string `json:"fingerprint"`
	Query       string `json:"query"`
	Message     string `json:"message"`
	Count       int64  `json:"count"`
}

// DifferingAnswer is one execution whose answer differed from the
// original's, as the replay decided it (replay --keep-answers): which
// execution of the capture it was (its session and times are the
// capture's, so that it can be found there and its explanation checked:
// a race needs a commit of another session that ended while it ran), how
// its answer differed and what explains it. An execution of several
// statements is one, under its first differing statement's kind.
type DifferingAnswer struct {
	Session string `json:"session"`
	// TimeUS is when the original client sent it, in microseconds
	// since the epoch; DurationUS how long after that its answer ended
	// (the capture's Time and Duration).
	TimeUS      int64  `json:"time_us"`
	DurationUS  int64  `json:"duration_us"`
	Fingerprint string `json:"fingerprint"`
	// Diff is how its answer differed (the first that did).
	Diff querystats.AnswerDiff `json:"diff"`
	// Cause is what explains it, "" when nothing does (unexplained);
	// with querystats.CauseTargetData (CauseSuspectData), Tables are the
	// tables it reads, under which Outcomes.AnswerDiffersTargetDataByTable
	// (AnswerDiffersSuspectByTable) counts it.
	Cause  querystats.AnswerCause `json:"cause,omitempty"`
	Tables []string               `json:"tables,omitempty"`
}

// MaxDifferingAnswers bounds Replay.DifferingAnswers; past it they are
// counted (DifferingAnswersDropped), not kept.
const MaxDifferingAnswers = 1 << 17

// MaxErrorSamples bounds Replay.Errors.
const MaxErrorSamples = 50

// Outcomes compare the original's failures with the target's, counted in
// execution events (a query string is one) among those that ran.
type Outcomes struct {
	// Ran counts execution events run on the target.
	Ran int64 `json:"ran"`
	// OriginalFailed: failed in the log; BothFailed of those failed on
	// the target too; FailedOnlyOnTarget succeeded in the log but not
	// on the target; FailedOnlyInOriginal the reverse.
	OriginalFailed       int64 `json:"original_failed"`
	BothFailed           int64 `json:"both_failed"`
	FailedOnlyOnTarget   int64 `json:"failed_only_on_target"`
	FailedOnlyInOriginal int64 `json:"failed_only_in_original"`
	// OnlyOnTargetBySQLState splits FailedOnlyOnTarget by the error
	// that caused each failure: its own SQLSTATE, but for a 25P02 (in a
	// block aborted on the target) the SQLSTATE of the error that
	// aborted the block, so that the 25P02s after an error of another
	// kind are not taken for errors of the replay's order. Not nil in
	// every replay that counts it (nil: a result from before).
	OnlyOnTargetBySQLState map[string]int64 `json:"only_on_target_by_sqlstate"`
	// OnlyOnTargetBakedIDs counts those of FailedOnlyOnTarget that came
	// from a server-assigned id of the original written into a later
	// statement's text (a large object's OID, a transaction id) or
	// passed typed as an object id (oid, regclass, regproc, regtype) to
	// a statement that failed on a missing OID, which the target
	// assigned otherwise, and the 25P02s after them: not the
	// target's doing, and not the replay's order.
	OnlyOnTargetBakedIDs int64 `json:"only_on_target_baked_ids,omitempty"`
	// OnlyOnTargetAfterFastPath counts those of FailedOnlyOnTarget,
	// not among OnlyOnTargetBakedIDs, in sessions that had skipped a
	// fast-path function call before (results.SkipFastPath): the
	// target lacks what the call did (a large object unlinked, so that
	// a later DROP ROLE of its owner fails), though which failure comes
	// of it is not proven.
	OnlyOnTargetAfterFastPath int64 `json:"only_on_target_after_fast_path,omitempty"`
	// OnlyOnTargetSessionState counts those of FailedOnlyOnTarget, not
	// among the two above, in sessions a capture recorded from the
	// middle, with an error that state the capture cannot hold
	// explains (a temporary table, a cursor WITH HOLD, a prepared
	// statement, a role made before the recording): "session state
	// from before the recording".
	OnlyOnTargetSessionState int64 `json:"only_on_target_session_state,omitempty"`
	// Answered counts the executions compared with the answer the
	// original server gave (the input recorded it: a capture); of them,
	// AnswerDiffers differed in outcome, SQLSTATE or row count. Both 0
	// for a log.
	Answered      int64 `json:"answered,omitempty"`
	AnswerDiffers int64 `json:"answer_differs,omitempty"`
	// AnswerDiffersExplained counts, of AnswerDiffers, those whose
	// statement's text explains them, or a race with another session's
	// transaction in the original, by cause (querystats.AnswerCause: a
	// volatile function, what a server assigns, a sequence's value an
	// INSERT returns, a race); AnswerDiffersUnexplained
	// the others, the ones to look at. Both empty when none.
	AnswerDiffersExplained   map[string]int64 `json:"answer_differs_explained,omitempty"`
	AnswerDiffersUnexplained int64            `json:"answer_differs_unexplained,omitempty"`
	// AnswerDiffersTargetData counts, of AnswerDiffers, those of
	// statements that read tables no concurrent transaction of the
	// original touched while they ran, with nothing else to explain
	// them (querystats.CauseTargetData): the target's data differs from
	// the start. Not an explanation: a replay with any fails.
	// AnswerDiffersTargetDataByTable counts them by table (a statement
	// that reads several counts under each).
	// They are the target's data only when proven: the same rows
	// (by key, key range or whole table, else the same statement with
	// the same parameters) read differently more than once. Those read
	// differently once are AnswerDiffersSuspect (querystats.
	// CauseSuspectData), by table in AnswerDiffersSuspectByTable: a
	// race the capture could not see explains one as well as the data
	// does, so they do not fail the replay (issue 77).
	AnswerDiffersTargetData        int64            `json:"answer_differs_target_data,omitempty"`
	AnswerDiffersTargetDataByTable map[string]int64 `json:"answer_differs_target_data_by_table,omitempty"`
	AnswerDiffersSuspect           int64            `json:"answer_differs_suspect,omitempty"`
	AnswerDiffersSuspectByTable    map[string]int64 `json:"answer_differs_suspect_by_table,omitempty"`
	// AnswerTaintByRelation: the rows the replay's own divergences
	// wrote outgrew what it follows by key (syncdep.MaxTaintRows), and
	// later ones tainted their tables whole: more answers explained
	// "after an earlier divergence, relation-wide" (querystats.
	// CauseAfterDivergenceRelation) than a key would have.
	AnswerTaintByRelation bool `json:"answer_taint_by_relation,omitempty"`
	// Error rates in percent of Ran, derived from the counts above.
	OriginalErrorRate float64 `json:"original_error_rate_pct"`
	TargetErrorRate   float64 `json:"target_error_rate_pct"`
}

// ExplainedOnlyOnTarget counts the failures only on the target that are
// explained: a server-assigned id of the original baked into a statement
// (OnlyOnTargetBakedIDs) and session state from before the recording
// (OnlyOnTargetSessionState); neither is the target's doing. Those after
// a skipped fast-path call are not among them: their cause is not proven.
func (o Outcomes) ExplainedOnlyOnTarget() int64 {
	return o.OnlyOnTargetBakedIDs + o.OnlyOnTargetSessionState
}

// GateErrorRate is the target's error rate as the replay's error-rate gate
// (--max-error-rate) counts it, in percent of Ran: TargetErrorRate
// without the explained failures only on the target
// (ExplainedOnlyOnTarget), so that a replay of a few statements, one of
// which names an OID the original's server assigned, does not fail for it.
func (o Outcomes) GateErrorRate() float64 {
	if o.Ran <= 0 {
		return 0
	}
	explained := min(o.ExplainedOnlyOnTarget(), o.FailedOnlyOnTarget)
	return 100 * float64(o.BothFailed+o.FailedOnlyOnTarget-explained) / float64(o.Ran)
}

// SetRates derives the error rates from the counts.
func (o *Outcomes) SetRates() {
	o.OriginalErrorRate, o.TargetErrorRate = 0, 0
	if o.Ran > 0 {
		o.OriginalErrorRate = 100 * float64(o.BothFailed+o.FailedOnlyInOriginal) / float64(o.Ran)
		o.TargetErrorRate = 100 * float64(o.BothFailed+o.FailedOnlyOnTarget) / float64(o.Ran)
	}
}

// Check reports an error when a replay's outcomes do not add up with its
// statements (s): each execution that ran is one or more statements
// executed or failed, a failure on the target on its last one (Failed ==
// BothFailed + FailedOnlyOnTarget, Failed <= Ran <= Executed + Failed);
// the original's failures are those both failed plus those only it did;
// nothing is compared that did not run (Answered <= Ran: an execution is
// compared whether it failed or not, so Answered may exceed Executed by
// the failures); and every differing answer is explained, unexplained,
// the target's data or suspect, once.
func (o Outcomes) Check(s StatementCounts) error {
	var bad []string
	if o.BothFailed+o.FailedOnlyOnTarget != s.Failed {
		bad = append(bad, fmt.Sprintf("%d both failed + %d failed only on the target != %d statements failed", o.BothFailed, o.FailedOnlyOnTarget, s.Failed))
	}
	if o.BothFailed+o.FailedOnlyInOriginal != o.OriginalFailed {
		bad = append(bad, fmt.Sprintf("%d both failed + %d failed only in the original != %d failed in the original", o.BothFailed, o.FailedOnlyInOriginal, o.OriginalFailed))
	}
	if o.Ran < s.Failed || o.Ran > s.Executed+s.Failed {
		bad = append(bad, fmt.Sprintf("%d executions ran, not between the %d statements failed and the %d executed or failed", o.Ran, s.Failed, s.Executed+s.Failed))
	}
	if o.Answered > o.Ran || o.AnswerDiffers > o.Answered {
		bad = append(bad, fmt.Sprintf("%d answers differ of %d compared of %d executions ran", o.AnswerDiffers, o.Answered, o.Ran))
	}
	if n := sum(o.AnswerDiffersExplained) + o.AnswerDiffersUnexplained + o.AnswerDiffersTargetData + o.AnswerDiffersSuspect; n != o.AnswerDiffers {
		bad = append(bad, fmt.Sprintf("%d explained + %d unexplained + %d the target's data + %d suspect != %d answers differ", sum(o.AnswerDiffersExplained), o.AnswerDiffersUnexplained, o.AnswerDiffersTargetData, o.AnswerDiffersSuspect, o.AnswerDiffers))
	}
	if o.OnlyOnTargetBySQLState != nil && sum(o.OnlyOnTargetBySQLState) != o.FailedOnlyOnTarget {
		bad = append(bad, fmt.Sprintf("%d failed only on the target by SQLSTATE != %d failed only on the target", sum(o.OnlyOnTargetBySQLState), o.FailedOnlyOnTarget))
	}
	if len(bad) > 0 {
		return fmt.Errorf("outcomes do not add up: %s", strings.Join(bad, "; "))
	}
	return nil
}

// Filtered counts what a run's window and filters removed, and
// pgrehearse's own statements, outside Statements.
type Filtered struct {
	Events     int64 `json:"events"`
	Statements int64 `json:"statements"` // execution events among Events
	Sessions   int64 `json:"sessions"`
	// OwnStatements counts, among Statements, those of pgrehearse's own
	// connections (application_name "pgrehearse-...": pre-flight logins,
	// catalog reads, the observer), left out of every run.
	OwnStatements int64 `json:"own_statements,omitempty"`
}

func (f *Filtered) add(o Filtered) {
	f.Events += o.Events
	f.Statements += o.Statements
	f.Sessions += o.Sessions
	f.OwnStatements += o.OwnStatements
}

// ReaderCounts describe a replay's reading of the log.
type ReaderCounts struct {
	Events int64 `json:"events"`
	// BudgetWaits counts the times the reader waited for the sessions'
	// queues to drain; OverBudget the events it read past its memory
	// budget because no statement was completing.
	BudgetWaits int64 `json:"budget_waits"`
	OverBudget  int64 `json:"over_budget"`
	// MaxBufferedBytes is the most the queues held at once (estimated).
	MaxBufferedBytes int64 `json:"max_buffered_bytes"`
	// BudgetBytes is the memory budget of the queues: the cap on the
	// statements read ahead of their sessions (estimated bytes; 0 in
	// results from before it was recorded). BudgetWaitMS is how long in
	// all the reader waited at it for the sessions (the target) to
	// catch up.
	BudgetBytes  int64   `json:"budget_bytes,omitempty"`
	BudgetWaitMS float64 `json:"budget_wait_ms,omitempty"`
}

// TargetLog describes what the target's own log said of a replay.
type TargetLog struct {
	Files []string `json:"files"`
	// Connections the replay opened, and of those the ones the log
	// shows statements of.
	Connections      int64 `json:"connections"`
	ConnectionsFound int64 `json:"connections_found"`
	// Statements the log shows on the replay's connections (execution
	// events; a query string is one), and of those the ones on
	// connections whose logged sequence equals what was sent.
	Executions        int64 `json:"executions"`
	ExecutionsMatched int64 `json:"executions_matched"`
	// Untimed counts logged executions without a duration (failed ones).
	Untimed int64 `json:"untimed"`
	// Mismatched lists connections whose logged sequence differs (at
	// most MaxMismatched), by backend pid.
	Mismatched []ConnMismatch `json:"mismatched,omitempty"`
}

// MaxMismatched bounds TargetLog.Mismatched.
const MaxMismatched = 20

// ConnMismatch is a connection whose statements in the target's log are
// not the ones sent.
type ConnMismatch struct {
	PID    uint32 `json:"pid"`
	Sent   int64  `json:"sent"`
	Logged int64  `json:"logged"`
	// SameOrder is false when the counts agree but the fingerprints'
	// order does not.
	SameOrder bool `json:"same_order"`
}

// OrderingSQLStates are the errors a replay causes when it runs sessions
// that depended on each other's commits in another order than the
// original: a foreign key whose row is not there yet (23503), a key
// inserted twice (23505), serialization failures and deadlocks (40001,
// 40P01), and the aborted transaction that follows one (25P02). Where the
// original did not have them, they say the replay did other work, not
// that the target is worse.
var OrderingSQLStates = []string{"23503", "23505", "40001", "40P01", "25P02"}

// UnknownSQLState keys ErrorsBySQLState for errors without a SQLSTATE (a
// stderr log whose prefix lacks %e).
const UnknownSQLState = "unknown"

// New returns an empty result of kind k, with maps and slices made so
// that its JSON has no nulls.
func New(k Kind, src LatencySource) *Result {
	r := &Result{
		Version:          Version,
		Kind:             k,
		LatencySource:    src,
		Files:            []string{},
		Statements:       StatementCounts{Skipped: map[SkipReason]int64{}},
		ErrorsBySQLState: map[string]int64{},
		Queries:          []querystats.Row{},
	}
	if k == KindReplay {
		r.Replay = &Replay{Errors: []ErrorSample{}, Outcomes: Outcomes{OnlyOnTargetBySQLState: map[string]int64{}}}
	}
	return r
}

// Complete reports whether the run did all it claims: not stopped early,
// nothing lost beyond its allowance.
func (r *Result) Complete() bool {
	return !r.Partial && len(r.Incomplete) == 0 && len(r.Degraded) == 0
}

// SpanSeconds is how long the run lasted: a replay's wall time, else the
// time between its first and last statement; 0 when unknown.
func (r *Result) SpanSeconds() float64 {
	if r.Replay != nil && r.WallSeconds > 0 {
		return r.WallSeconds
	}
	if r.FirstTime == 0 || r.LastTime <= r.FirstTime {
		return 0
	}
	return float64(r.LastTime-r.FirstTime) / 1e6
}

// HasHist reports whether every timed query carries its histogram, as
// significance tests and merging need; false without queries.
func (r *Result) HasHist() bool {
	for _, q := range r.Queries {
		if q.TimedCalls > 0 && q.Hist == "" {
			return false
		}
	}
	return len(r.Queries) > 0
}

// Name is Source, or the kind when the result came from no file.
func (r *Result) Name() string {
	if r.Source != "" {
		return r.Source
	}
	return string(r.Kind)
}

// Time is a point in time in µs since the Unix epoch, written as RFC 3339
// with microseconds in UTC; 0 means unknown.
type Time int64

// TimeLayout is how a Time is written.
const TimeLayout = querystats.TimeLayout

// Micros returns t in µs since the epoch.
func (t Time) Micros() int64 { return int64(t) }

// String formats t, or returns "" for the zero Time.
func (t Time) String() string {
	if t == 0 {
		return ""
	}
	return time.UnixMicro(int64(t)).UTC().Format(TimeLayout)
}

// MarshalText writes t as RFC 3339.
func (t Time) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText reads RFC 3339; "" is the zero Time.
func (t *Time) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*t = 0
		return nil
	}
	v, err := time.Parse(time.RFC3339Nano, string(b))
	if err != nil {
		return err
	}
	*t = Time(v.UnixMicro())
	return nil
}

func sum[K comparable](m map[K]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// addCounts adds o to m (made when nil) and drops keys that sum to 0.
func addCounts[K comparable](m, o map[K]int64) map[K]int64 {
	if m == nil {
		m = make(map[K]int64, len(o))
	}
	for k, v := range o {
		if m[k] += v; m[k] == 0 {
			delete(m, k)
		}
	}
	return m
}

// Query returns the row of fingerprint fp, or nil.
func (r *Result) Query(fp string) *querystats.Row {
	for i := range r.Queries {
		if r.Queries[i].Fingerprint == fp {
			return &r.Queries[i]
		}
	}
	return nil
}
