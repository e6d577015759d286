// Package reset returns a target server to its starting state before each
// round of a rehearsal or a headroom search. A replay writes (inserts, updates, deletes,
// sequences), so a second replay of the same log onto the same server
// starts from other data and is not the same experiment: its unique keys
// collide, its tables have grown, its plans may differ. Every round must
// start where the first one did.
//
// Four ways, each a Resetter:
//
//   - Template copies each database the workload uses from a pristine
//     copy made once at the start (CREATE DATABASE ... TEMPLATE, with
//     STRATEGY FILE_COPY on PostgreSQL 15 and later), with the original's
//     owner, settings, privileges and connection limit; the round runs on
//     the copies, which are dropped after it. It needs a login that may
//     create databases.
//   - Command runs the user's own reset (a file system or volume snapshot
//     rolled back, a Database Lab clone reset) with the target named in
//     its environment, then waits until the target accepts connections.
//   - None does nothing, for read-only workloads, and says that the state
//     drifted from the second round on.
//   - DataDir restores a copy of a throwaway cluster's data directory
//     (package pgcluster), for the demo and tests.
//
// The package owns the target's server for a round: besides the resets,
// SetServer sets a server setting for one round (ALTER SYSTEM, then a
// reload, or a restart by a Restarter) and puts it back after it; package
// rounds applies a fix's setting through it.
//
// The package changes only what it creates: it never drops or alters a
// database it did not make, and it terminates only pgrehearse's own
// sessions. It never puts a password on a command line or in a message.
// It names no command-line flag: errors are typed, and the caller says
// which option to change.
package reset
