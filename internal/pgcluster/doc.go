// Package pgcluster starts and stops throwaway PostgreSQL clusters for
// tests, benchmarks and the demo.
//
// A cluster lives in a fresh directory made with os.MkdirTemp (not
// testing.T.TempDir, so that a benchmark or the demo can use it too, and so
// that Options.Keep can leave it behind for inspection). It has its own
// data directory, its own unix socket directory and a free TCP port on
// 127.0.0.1, so any number of clusters can run side by side, also from test
// binaries of different packages running in parallel. It is tuned for speed
// over durability (fsync off) and logs in English (lc_messages = 'C'),
// because pgrehearse's log reader only understands English messages.
//
// PostgreSQL refuses to run as root. When the current process is root, the
// server binaries run as the "postgres" operating system user, which is
// created if missing, and the cluster directory is handed to that user.
//
// A cluster must never outlive the process that started it. Stop shuts it
// down and removes its directory; in addition every cluster has a small
// watchdog process that stops the server and removes the directory when the
// starting process dies without calling Stop (a test binary killed by
// -timeout, a panic, SIGKILL).
//
// A cluster can go back to an earlier state: Snapshot copies its data
// directory while the server is stopped, and Restore puts a copy back and
// starts the server on the same port, so that a rehearsal replays a
// workload that writes from the same start every round.
//
// Options.Version runs another major version than the installed one:
// PostgreSQL 13 to 18 (Majors) from the cache that `make pg-versions`
// fills, .cache/pg/<major> in the module's root or $PGREHEARSE_PG_CACHE.
// Those builds hold the server and contrib but no pgbench; Pgbench then
// runs the installed pgbench, which drives any of them. A version missing
// from the cache is an error naming that command.
//
// The package only manages server processes. It knows nothing of
// pgrehearse's log reader, replay or workload, so that each of those can be
// tested against a real server through it.
package pgcluster
