// Package replay plays the events of PostgreSQL server logs against a target
// server, session by session, at the original pace times a speed factor, and
// measures what the target did: per query fingerprint the calls, errors and
// latencies (the same rows as package analyze), how late each statement was
// issued against its schedule, and why any statement was not replayed.
//
// # Layers
//
// The package consumes events (package event) from an event.Source and talks
// to the target through pgconn only: it does not know log formats, it does
// not select (the time window, the filters, pgrehearse's own sessions and
// shards are package source's decorators, whose counts it puts in the
// Result), and it writes no reports; internal/report renders a Result. The
// sequence around a replay (pre-flight, observer, the target's log,
// findings, the outcome) is package replayrun's. Measurements flow one way, to the
// Result and to an optional SampleSink; nothing measured feeds back into the
// schedule.
//
// # Sessions and pacing
//
// The Schedule is decided once, from Options.Speed: Paced (speed > 0) or
// Unpaced (speed 0, as fast as possible); the engine asks the schedule,
// never the speed, whether events have a time to wait for.
//
// One dispatcher goroutine reads events lazily and routes each to the queue
// of its original session. Every session has its own goroutine, its own
// connection (as the logged user, to the logged database, after the
// --user-map/--database-map rewrites) and one timer, reset per event. An
// event is due at start + (t_logged - t_first) / speed, with the speed kept
// in float64. A statement that is slow on the target delays only the later
// statements of its own session: the dispatcher never waits for a session.
//
// On Linux the sessions can run instead as coroutines of one engine
// (engine_linux.go), with the dispatcher, which waits for the answers of
// all their connections, and for the next statement's time when paced,
// with one epoll, as pgbench does from one thread: the same session code,
// parked where it would wait, without a goroutine parked and woken per
// statement. Options.Sessions chooses; by default the engine runs when
// the process has at most two CPUs for Go code (Options.Sessions,
// Options.Engines).
//
// At speed > 0 a session connects half a second (connectAheadBy) before
// its first event is due, and the clock starts once the sessions of the
// log's first half second have connected, so connection set-up is not
// counted as the lag of first statements. Up to speed 1, a session that
// begins after another ended in the log takes that one's client (dispatcher.takeClient)
// and does not connect before it ended on the target: an application that
// connects for each request holds no more sessions at once in the replay
// than it did, and a slower target makes the replay late, as the
// application's own clients would be, instead of crowding it. On
// goroutines, the last coarseMargin before a statement is waited on a
// timerfd shared by all sessions (see precise.go): the runtime's own
// timers fire up to 1 ms late. On the engine, its own timerfd wakes the
// session.
//
// # Synchronization
//
// Sessions that depend on each other's writes are kept in order by
// Options.Sync (sync.go; the decisions are package syncdep's): the
// dispatcher, as it reads each execution event, asks the tracker which
// logged commits of other sessions it depends on; the session, once the
// event is due, waits until those have run on the target (given up after
// SyncTimeout with no progress from the session or shard it waits for,
// and ended at once when the wait would deadlock with a row lock), and
// after running an event that commits, marks that commit done.
// A statement of unknown effect by its kind (DDL, DO, CALL) also waits, as
// a barrier, for the events of other sessions that ended before it
// started in the log, reads included.
// The wait is measured apart from schedule lag. It works at every speed:
// at speed 0 it is what orders the sessions, and it narrows the start
// barrier below: a new session waits before connecting only for earlier
// statements of unknown effect (DDL that may have created its role or
// database) and for the sessions that had ended in the log before it
// started, so that the replay holds no more connections at once than the
// original did.
//
// With Sync off, speed 0 keeps the replay sound with a start barrier
// instead: a session created by the log after other sessions had finished
// statements (CREATE TABLE in one session, INSERT in the next) must see
// them finished on the target too, so a new session's goroutine, before
// its first event, waits until every event read before its first one has
// completed in the other sessions (the log is in completion order, so that
// is everything that had finished when the session started). Running
// sessions are not ordered against each other; only session starts are.
// Only the new session waits; the dispatcher and every other session go
// on. Multiplied sessions (Multiply > 1) always run so.
//
// # Memory
//
// Reading is bounded two ways, documented on Options:
//   - Lookahead (speed > 0): the dispatcher reads an event only when the
//     replay clock is within Lookahead (log time) of it, so it holds about
//     Lookahead of traffic, not gigabytes of a 100 GB log. A statement is
//     logged when it ends, so a statement longer than Lookahead is issued
//     late by the difference; its lag says so.
//   - Speed0Window (speed 0): the reader stops at a few MB queued while
//     every session has events, and reads on (up to Budget) only for a
//     session that has none; reading far ahead in one burst took the CPU
//     of the server under test.
//   - Budget: the bytes of all queued events (DefaultBudget, 32 MiB). When
//     the budget is used up the dispatcher waits for sessions to drain
//     their queues, which is flow control, not a stall: the sessions
//     holding the events are working. At speed > 0 it is reached when the
//     target cannot keep up with the schedule: the lookahead alone follows
//     the clock, not the sessions, and would read on while the backlog
//     grows; the result counts the waits and their time
//     (results.ReaderCounts), and the statements due meanwhile show as lag.
//     Waiting could hang the replay if those sessions are all blocked on
//     locks held by a session whose COMMIT is not read yet, so the wait
//     watches progress: when no statement completes anywhere for
//     stallTimeout, the dispatcher reads on past the budget (counted as
//     reader.over_budget) until one of the sessions that held the budget
//     completes an event. Memory is bounded in every replay
//     that makes progress, and no replay hangs on the budget.
//
// Queues are lists of small chunks given back as they are consumed, so a
// session that once had a backlog does not keep its memory, and a queued
// event is a copy of its own (event.Event.Detach), not a slot in the reader's
// slab: what the queues hold is what the budget counts, whichever
// session is far behind (docs/performance.md).
//
// # Protocol forms of a capture
//
// A capture (package capture) records how each execution was sent, and
// the replay sends it so (wire.go): parameter types and formats, each
// COPY's data, an Execute's row limit on the portal the original named
// and the fetches that continue it without a Bind (one statement, its
// answer compared once its last batch ran: fetch.go), a batch flushed
// without Sync, a fast-path FunctionCall, and a CancelRequest sent to the
// replay's own backend as long after the statement's start as the
// original client sent its own.
//
// # Counting
//
// Statements are counted as package analyze counts them: a query string of
// k statements is k statements, and when it fails the failure is put on
// its last statement. Every statement read (of the selected events) ends in
// exactly one of executed, failed or skipped[reason], so
// Statements.Total == Executed + Failed + sum(Skipped) always, even when
// the replay is interrupted (unrun statements are skipped as
// "interrupted"). Statements the sources' selection left out are not part
// of the total; they are counted under Filtered, as are events without a
// session, which cannot be replayed. Strings that hold no statement
// (only comments) are not sent and are counted under Statements.Empty, as
// analyze does.
//
// The package must not: block the dispatcher on one session, spawn a
// goroutine per statement, compute the schedule in time.Duration
// arithmetic on the rate, or exit the process.
package replay
