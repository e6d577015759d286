package replay

import (
	"time"

	"github.com/pgrehearse/pgrehearse/internal/results"
)

// SampleSink receives the replay's measurements as they happen, for live
// metrics. The engine never reads anything back from it.
//
// Concurrency: methods are called from many goroutines at once (each
// session's, and the dispatcher's for ReaderPosition) and must be safe for
// that; they are called on the hot path, so they must not block nor do I/O.
type SampleSink interface {
	// SessionOpened and SessionClosed bracket each connection to the
	// target (reconnections included; a dry run opens none).
	SessionOpened()
	SessionClosed()
	// Statement reports one execution event (a query string or an
	// extended-protocol execution) that was run or skipped.
	Statement(s Sample)
	// ReaderPosition reports the log time, in µs since the epoch, of the
	// last event read.
	ReaderPosition(logTimeUS int64)
}

// Sample is one execution event as the target ran it.
type Sample struct {
	// Fingerprint of its first statement, "" when it holds none.
	Fingerprint string
	// SQLState is the error's code when it failed on the target, else "".
	SQLState string
	// Skipped is the skip reason when it was not run, else "".
	Skipped results.SkipReason
	// Latency is the time the target took; Lag how late it was issued
	// against its schedule (0 at speed 0), sync waits left out;
	// SyncWait how long it waited for other sessions' commits (see
	// Options.Sync).
	Latency, Lag, SyncWait time.Duration
	// SyncGiveUp says why the sync wait ended before the commits it
	// waited for (SyncTimeout, SyncDeadlock), else "".
	SyncGiveUp string
}

type nopSink struct{}

func (nopSink) SessionOpened()       {}
func (nopSink) SessionClosed()       {}
func (nopSink) Statement(Sample)     {}
func (nopSink) ReaderPosition(int64) {}
