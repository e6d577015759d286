package results

import "slices"

// Leftovers is what a replay left behind on the target, or held there
// when its sessions ended (Replay.Leftovers): nil when nothing.
type Leftovers struct {
	// Prepared are the prepared transactions the replay prepared (a
	// PREPARE TRANSACTION of the workload that ran on the target) and
	// that were still prepared at its end: they hold their locks until
	// COMMIT PREPARED or ROLLBACK PREPARED.
	Prepared []LeftoverPrepared `json:"prepared,omitempty"`
	// AdvisoryLocks are the advisory locks a session of the replay held
	// on the target when it ended (pg_locks, just before it
	// disconnected): its end released them.
	AdvisoryLocks []LeftoverAdvisory `json:"advisory_locks,omitempty"`
}

// LeftoverPrepared is one prepared transaction a replay left.
type LeftoverPrepared struct {
	Gid      string `json:"gid"`
	Database string `json:"database"`
	Owner    string `json:"owner"`
	// Reason is why it is listed; Cleanup what replay --cleanup did
	// with it ("" without the flag), CleanupError why it failed.
	Reason       LeftoverReason  `json:"reason"`
	Cleanup      LeftoverCleanup `json:"cleanup,omitempty"`
	CleanupError string          `json:"cleanup_error,omitempty"`
}

// LeftoverAdvisory is one advisory lock a session held as it ended.
type LeftoverAdvisory struct {
	// Session is the session's id in the input.
	Session  string `json:"session"`
	Database string `json:"database"`
	// Key is the lock's key as the functions take it: "42" for a
	// bigint, "1,2" for two integers.
	Key string `json:"key"`
	// Mode is pg_locks' mode: ExclusiveLock or ShareLock.
	Mode   string         `json:"mode"`
	Reason LeftoverReason `json:"reason"`
}

// LeftoverReason is why something is among a replay's leftovers.
type LeftoverReason string

// Reasons of leftovers.
const (
	// LeftoverStillPrepared: a transaction the replay prepared was
	// neither committed nor rolled back on the target by its end.
	LeftoverStillPrepared LeftoverReason = "still_prepared"
	// LeftoverHeldAtSessionEnd: an advisory lock a session still held
	// when it disconnected.
	LeftoverHeldAtSessionEnd LeftoverReason = "held_at_session_end"
)

// LeftoverCleanup is what replay --cleanup did with a leftover.
type LeftoverCleanup string

// Cleanups.
const (
	// LeftoverRolledBack: ROLLBACK PREPARED ran.
	LeftoverRolledBack LeftoverCleanup = "rolled_back"
	// LeftoverCleanupFailed: ROLLBACK PREPARED failed (CleanupError).
	LeftoverCleanupFailed LeftoverCleanup = "failed"
)

// mergeLeftovers is what two parts of a replay left, together.
func mergeLeftovers(x, y *Leftovers) *Leftovers {
	if x == nil || y == nil {
		if x == nil {
			return y
		}
		return x
	}
	return &Leftovers{Prepared: append(slices.Clip(x.Prepared), y.Prepared...), AdvisoryLocks: append(slices.Clip(x.AdvisoryLocks), y.AdvisoryLocks...)}
}
