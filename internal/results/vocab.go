package results

import "slices"

// The vocabulary that crosses the results boundary: what producers
// (analyze, replay) write and consumers (compare, findings, report) test.
// Each is a typed constant defined here once; a consumer compares with
// these, never with a string of its own.

// SyncMode is how a replay synchronized its sessions (docs/sync.md).
type SyncMode string

// Synchronization modes, as Sync.Mode writes them.
const (
	// SyncObject: a statement waited for the logged commits that wrote
	// what it reads or writes.
	SyncObject SyncMode = "object"
	// SyncCommit: a statement waited for every earlier logged commit.
	SyncCommit SyncMode = "commit"
	// SyncOff: sessions ran freely.
	SyncOff SyncMode = "off"
	// SyncLoad: only what would otherwise fail or be lost waited (a
	// write or lock, as in object mode); reads waited only for changes
	// of the schema, and the rest of the commit order was the server's,
	// so the target received the load the application gave.
	SyncLoad SyncMode = "load"
	// SyncAnswers: the order of a replay that checks answers. As in
	// object mode, and a commit waited for the statements of other
	// sessions that ended before it was sent and read what it wrote:
	// only a statement whose interval overlapped such a commit could
	// see another state than the original's.
	SyncAnswers SyncMode = "answers"
)

// SkipReason is why a statement read from the log was not run by a
// replay: the keys of StatementCounts.Skipped. An analysis skips nothing.
type SkipReason string

// Skip reasons of a replay. Some skip by design (the log lacks what the
// statement needs, or the options exclude it); the others are faults,
// which Replay.Lost counts (Lost reports which).
const (
	SkipParamsMissing   SkipReason = "parameters not logged"
	SkipParamsTruncated SkipReason = "parameters truncated"
	SkipCopyData        SkipReason = "copy data not in log"
	// SkipFastPath: a call of the fast-path protocol (libpq's
	// large-object functions: lo_open, loread, lowrite...), which the
	// server logs without its arguments; from a capture, which holds
	// them, only a call of a function made after initdb, whose OID on
	// the target is another.
	SkipFastPath    SkipReason = "fast-path function call"
	SkipNotReadOnly SkipReason = "not read-only"
	// SkipExecuteUnknown: with a read-only replay, an SQL-level EXECUTE
	// whose PREPARE the session did not show (it ran before the log or
	// the time window), so whether it writes is unknown.
	SkipExecuteUnknown SkipReason = "EXECUTE of a statement prepared outside the log"
	// SkipPrepareSkipped: an EXECUTE whose PREPARE was skipped.
	SkipPrepareSkipped SkipReason = "EXECUTE of a statement whose PREPARE was skipped"
	SkipConnectFailed  SkipReason = "connection failed"
	SkipConnectionLost SkipReason = "connection lost"
	// SkipBrokenTransaction: the rest of a transaction block whose
	// connection broke; a new connection resumes at the session's next
	// transaction boundary.
	SkipBrokenTransaction SkipReason = "rest of a transaction whose connection broke"
	// SkipTargetGone: statements left when the target stayed away past
	// the connect timeout and the replay stopped early.
	SkipTargetGone SkipReason = "target unavailable"
	// SkipInterrupted: statements stopped by the user (Ctrl-C,
	// SIGTERM): those not run, and those in flight that the stop
	// cancelled on the server.
	SkipInterrupted SkipReason = "interrupted"
	// SkipDependencyLost: a statement that waited for another session's
	// commit which a fault lost on the target (the other session's
	// connection broke before it committed), with the rest of its
	// transaction block: without what it depended on it would do other
	// work.
	SkipDependencyLost SkipReason = "dependency lost"
)

// lostReasons are the skip reasons of faults.
var lostReasons = []SkipReason{SkipConnectFailed, SkipConnectionLost, SkipBrokenTransaction, SkipDependencyLost, SkipTargetGone, SkipInterrupted}

// Lost reports whether statements skipped for r were lost to a fault
// (counted in Replay.Lost) rather than skipped by design.
func (r SkipReason) Lost() bool {
	for _, l := range lostReasons {
		if r == l {
			return true
		}
	}
	return false
}

// LostReasons lists the skip reasons of faults, in a fixed order.
func LostReasons() []SkipReason { return append([]SkipReason(nil), lostReasons...) }

// LineSkip is why a log line was read but gave no event: the keys of
// LineCounts.Skipped. The log reader (package logread) decides them; the
// ones a consumer tests are named here, with the reader's exact words (a
// test of package source holds the two together).
type LineSkip string

// Line skip reasons that consumers test.
const (
	// LineSkipLockWait: "still waiting for ShareLock", "acquired": the
	// lock waits log_lock_waits writes.
	LineSkipLockWait LineSkip = "lock wait"
)

// IncompleteReason is why a run did not do all it claims: the kind of
// each entry of Result.Incomplete, whose text says it to a person.
type IncompleteReason string

// Reasons a result is incomplete.
const (
	// IncompleteNothingMeasured: the input yielded nothing to measure
	// (no statement, or mostly unreadable lines).
	IncompleteNothingMeasured IncompleteReason = "nothing_measured"
	// IncompleteInputCut: an input could not be read whole (a
	// compressed file cut short).
	IncompleteInputCut IncompleteReason = "input_cut"
	// IncompleteLost: more statements than allowed were lost to faults.
	IncompleteLost IncompleteReason = "lost"
	// IncompleteTargetGone: the target stayed away and the replay
	// stopped early.
	IncompleteTargetGone IncompleteReason = "target_gone"
	// IncompleteErrorStart: the replay's first statements all failed on
	// the target, none of them in the original, and it stopped early.
	IncompleteErrorStart IncompleteReason = "error_start"
	// IncompleteMissingParts: a merge lacks some parts of its input.
	IncompleteMissingParts IncompleteReason = "missing_parts"
	// IncompleteFailedParts: a merge holds parts that failed (a shard
	// that stopped early, or that the other shards saw lost).
	IncompleteFailedParts IncompleteReason = "failed_parts"
	// IncompleteOther: a reason written by an earlier version, which did
	// not type its reasons.
	IncompleteOther IncompleteReason = "other"
)

// DegradedReason is why a replay's timings cannot be trusted though it
// ran: the kind of each entry of Result.Degraded, whose text says it to a
// person.
type DegradedReason string

// Reasons a replay is degraded.
const (
	// DegradedReconnected: sessions reconnected after their connection
	// broke (a restart, a crash, a terminated backend).
	DegradedReconnected DegradedReason = "reconnected"
	// DegradedSilentConnections: connections got no answer within the
	// I/O timeout while the target answered others, and were cut.
	DegradedSilentConnections DegradedReason = "silent_connections"
	// DegradedSyncTimeouts: more sync waits than the documented share
	// gave up at their timeout.
	DegradedSyncTimeouts DegradedReason = "sync_timeouts"
	// DegradedOther: a reason written by an earlier version, which did
	// not type its reasons.
	DegradedOther DegradedReason = "other"
)

// MarkDegraded adds why the replay's timings cannot be trusted: its kind
// and the sentence a person reads.
func (r *Result) MarkDegraded(reason DegradedReason, text string) {
	r.Degraded = append(r.Degraded, text)
	r.DegradedReasons = append(r.DegradedReasons, reason)
}

// DegradedBecause reports whether reason is among the reasons the replay
// is degraded.
func (r *Result) DegradedBecause(reason DegradedReason) bool {
	return slices.Contains(r.DegradedReasons, reason)
}

// MarkIncomplete adds why the run is incomplete: its kind and the
// sentence a person reads.
func (r *Result) MarkIncomplete(reason IncompleteReason, text string) {
	r.Incomplete = append(r.Incomplete, text)
	r.IncompleteReasons = append(r.IncompleteReasons, reason)
}

// IncompleteBecause reports whether reason is among the reasons the run
// is incomplete.
func (r *Result) IncompleteBecause(reason IncompleteReason) bool {
	return slices.Contains(r.IncompleteReasons, reason)
}

// Unpaced reports whether the replay ran as fast as possible (speed 0)
// rather than at a pace of the original's.
func (r *Replay) Unpaced() bool { return r.Speed == 0 }
