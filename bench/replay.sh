#!/usr/bin/env bash
# bench/replay.sh: replay throughput at --speed 0 next to pgbench's own, on
# the same throwaway server in the same run, and the schedule lag of 200
# sessions at 5,000 statements/s at speed 1.
#
# Throughput (BenchmarkSpeed0Experiment): it captures a pgbench -M prepared
# run's log, then BENCH_ROUNDS times runs in turn pgbench without logging,
# a bare pgconn loop of the captured statements (one goroutine and
# connection per session, from memory: the least a Go client can do) and
# the replay, all over the same unix socket, and prints the three rates
# and the client CPU per statement of each. pgbench -T stops every client
# at the same moment; a replay, like pgbench -t, runs each session's work
# to its end, so it waits for its slowest session: each round also runs
# pgbench -t with the log's transactions per session and prints the
# replay's rate against that too. Every run starts from a vacuumed,
# checkpointed server, and the order of the runs turns from round to
# round, so that none inherits another's dead tuples. The machine may be
# shared: compare within a round.
#
# The rounds run twice (BENCH_LAYOUT=shared,apart): first with the server
# and the clients on every CPU, then "apart", with the server's processes
# pinned to CPU 0 and the clients (this process, pgbench) to the others,
# GOMAXPROCS following. Shared, a client's own CPU (for a replay, reading
# and parsing the log) is taken from the server on a small machine, so
# the rate measures both; apart, the server is the bottleneck, as when the
# replayer runs on a machine of its own: that is the layout the
# "within 10% of pgbench" target is stated for.
#
# Figures, a profile of where the client's CPU goes and the targets:
# docs/performance.md.
#
# With --sync object or commit (BENCH_SYNC), both benchmarks also run the
# "sync floor": the bare message-level loop waiting for the same commits
# the replay's syncdep Tracker names, with the same deadlock check, and
# nothing else: what keeping the log's commit order costs any client, so
# that the replay's own cost shows apart from it (docs/performance.md).
#
# In full rounds (not BENCH_AB) two more clients run the same
# statements from memory: a one-thread epoll loop over raw sockets (what a
# poller engine could cost at least) and a goroutine per session on the
# same raw sockets (what Go's netpoller and scheduler add to it).
#
# BenchmarkWireVsPgconn adds the same bare loop on the message-level path
# the replay uses (internal/replay/wire.go) and runs the replay with a
# cancellable hard context as the CLI does, with its allocations per
# statement; BenchmarkStatementAllocs counts the allocations of one
# replayed execution (prepared, unnamed, simple).
#
# Synchronized replay (--sync, docs/sync.md): BENCH=Sync runs
# BenchmarkSyncThroughput (speed-0 rate of --sync object against off on
# pgbench-style traffic: own tables per client, select-only, tpcb-like;
# BENCH_SYNC_TRAFFIC picks), BenchmarkSyncLag200Sessions (lag at speed 1,
# 200 sessions writing tables of their own, object and off in turn) and
# BenchmarkSyncDependent (the producer/consumer orders workload: speed-1
# lag with sync waits left out, the waits, speed-0 object against off).
#
# Usage: bench/replay.sh   (env: BENCH_CLIENTS=8 BENCH_SECONDS=10 BENCH_SYNC=object
#        BENCH_ROUNDS=3 BENCH_LAYOUT=shared,apart
#        BENCH_PROFILE=DIR for CPU/block/mutex/allocation profiles,
#        BENCH_BASELINE=BIN to replay with another build's test binary
#        too, in the same rounds: git worktree add /tmp/base COMMIT,
#        copy internal/replay/baseline_test.go there if it lacks it, and
#        go test -c -o BIN ./internal/replay/ in it,
#        BENCH_AB=1 to leave pgbench -t and the bare loop out of the
#        rounds (this build, the baseline and pgbench -T only; more
#        rounds in the time, for an A/B of two builds),
#        BENCH_SESSIONS=engine|goroutines to run this build's sessions
#        so at speed 0 (default auto: one engine with GOMAXPROCS up to 2,
#        so in both layouts here; see docs/performance.md),
#        BENCH_ENGINES=N to deal them to N engines (default one),
#        BENCH='Speed0Experiment|Lag200Sessions' to run fewer)
set -euo pipefail
cd "$(dirname "$0")/.."
go test -run '^$' -bench "${BENCH:-Speed0Experiment|WireVsPgconn|StatementAllocs|Lag200Sessions}" -benchtime 1x -benchmem -timeout 40m -v ./internal/replay/ |
  grep -E 'round|Benchmark|ok|FAIL'
