#!/usr/bin/env bash
# bench/proxy.sh: what `pgrehearse capture` costs an application.
#
# BenchmarkCapturePgbench (internal/capturerun) runs pgbench directly and
# through the capture proxy, recording to disk, on the same throwaway
# server, alternating, BENCH_ROUNDS times (default 5), and reports each
# side's median transactions per second, mean latency and the median
# proxy/direct ratio. BenchmarkProxySelect (internal/proxy) times single
# SELECT 1 round trips, direct and through the proxy, alternating.
# With BENCH_DIGEST=1 it runs instead what the rows' digest costs the
# proxy: BenchmarkCaptureDigest (internal/capturerun), pgbench scripts
# through two capture proxies, one with the digest and one without, by
# turns (BENCH_CLIENTS default 4, BENCH_SECONDS default 3), with a CPU
# profile in /tmp/pgrehearse-digest.prof, and BenchmarkRelayRows
# (internal/proxy), the server pump alone, by turns with and without it
# (docs/capture-performance.md).
#
#   BENCH_CLIENTS=16 BENCH_SECONDS=5 BENCH_MODE=select|tpcb bench/proxy.sh
#   BENCH_DIGEST=1 bench/proxy.sh
#
# `bench/proxy.sh pgbouncer` instead runs BenchmarkProxyVsPgbouncer
# (internal/capturerun): the proxy, recording, against PgBouncer in
# session pooling (the distribution's pgbouncer package, which it needs),
# over pgbench -S simple, -S prepared and TPC-B-like prepared, alternating,
# BENCH_ROUNDS times: CPU per transaction of each relay and its ratio,
# the throughput ratio, and what each adds to a SELECT 1 round trip's p50.
# The proxy runs on BENCH_THREADS threads (default 1, capture --threads').
# BENCH_RECORD=0 runs the proxy recording nothing (an admin interface, no
# --out), as it is between recordings.
#
# `bench/proxy.sh standalone` runs bench/proxy-standalone.sh instead: the
# same comparison with each relay a process in a session of its own, as in
# production, and the proxy both recording and not, CPU per transaction
# split into user and system time (ROUNDS, SECONDS_PER_RUN, CLIENTS).
#
# The machine may be shared: compare within a run, as ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${BENCH_ROUNDS:-5}
if [ "${1:-}" = pgbouncer ]; then
  command -v pgbouncer >/dev/null || [ -x /usr/sbin/pgbouncer ] || { echo "pgbouncer is not installed (apt-get install pgbouncer)" >&2; exit 1; }
  exec env BENCH_PGBOUNCER=1 go test -run '^$' -bench 'BenchmarkProxyVsPgbouncer$' -benchtime "${rounds}x" -timeout 60m ./internal/capturerun
fi
if [ "${1:-}" = standalone ]; then
  exec bench/proxy-standalone.sh
fi
if [ -n "${BENCH_DIGEST:-}" ]; then
	go test -run '^$' -bench 'BenchmarkCaptureDigest' -benchtime "${rounds}x" -timeout 60m \
		-o /tmp/pgrehearse-capturerun.test -cpuprofile /tmp/pgrehearse-digest.prof ./internal/capturerun
	go tool pprof -tags /tmp/pgrehearse-digest.prof
	go tool pprof -tagfocus digest=true -top /tmp/pgrehearse-digest.prof | grep -E 'Total|rowdigest' || true
	go test -run '^$' -bench 'BenchmarkRelayRows' -benchtime 300x -count 3 ./internal/proxy
	exit
fi
go test -run '^$' -bench 'BenchmarkCapturePgbench$' -benchtime "${rounds}x" -timeout 60m ./internal/capturerun
go test -run '^$' -bench 'BenchmarkProxySelect$' -benchtime 20000x -count 3 -timeout 30m ./internal/proxy
