#!/usr/bin/env bash
# bench/proxy.sh: what `pgrehearse capture` costs an application.
#
# BenchmarkCapturePgbench (internal/capturerun) runs pgbench directly and
# through the capture proxy, recording to disk, on the same throwaway
# server, alternating, BENCH_ROUNDS times (default 5), and reports each
# side's median transactions per second, mean latency and the median
# proxy/direct ratio. BenchmarkProxySelect (internal/proxy) times single
# SELECT 1 round trips, direct and through the proxy, alternating.
#
#   BENCH_CLIENTS=16 BENCH_SECONDS=5 BENCH_MODE=select|tpcb bench/proxy.sh
#
# The machine may be shared: compare within a run, as ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${BENCH_ROUNDS:-5}
go test -run '^$' -bench 'BenchmarkCapturePgbench$' -benchtime "${rounds}x" -timeout 60m ./internal/capturerun
go test -run '^$' -bench 'BenchmarkProxySelect$' -benchtime 20000x -count 3 -timeout 30m ./internal/proxy
