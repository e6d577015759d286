#!/usr/bin/env bash
# bench/replay.sh: replay throughput at --speed 0 next to pgbench's own, on
# the same throwaway server in the same run. It captures a pgbench run's
# log (log_min_duration_statement = 0), runs pgbench again without logging
# (the baseline), and replays the captured log with as many sessions; then
# it measures the schedule lag of 200 sessions at 5,000 statements/s.
#
# Usage: bench/replay.sh   (env: BENCH_CLIENTS=8 BENCH_SECONDS=10
#        BENCH_MODE=prepared|extended|simple BENCH_SELECT_ONLY=1)
set -euo pipefail
cd "$(dirname "$0")/.."
go test -run '^$' -bench 'ReplayVsPgbench|Lag200Sessions' -benchtime 1x -v ./internal/replay/ |
  grep -E 'replay:|Benchmark|ok|FAIL'
