#!/usr/bin/env bash
# bench/parse.sh: how fast pgrehearse reads large stderr logs, next to
# `wc -l` reading the same file from the page cache in the same run.
# Figures are ratios against wc -l: the machines are shared and noisy.
#
# Two logs (bench/genlog): the benchmark log (16 sessions, every statement
# with its duration on one line) and a realistic one (hundreds of sessions
# with connection churn, log_statement = all with separate duration lines,
# long parameters, autovacuum and checkpoints; see synthlog.WriteRealistic).
#
# Usage: bench/parse.sh [MiB] [runs]   (default: a 1 GiB log each, 3 runs)
# BASELINE=/path/to/pgrehearse also times that binary on the same logs, in
# the same runs, right after this tree's: the ratio of the two is the
# figure to quote for a change (one binary built before it).
set -euo pipefail
cd "$(dirname "$0")/.."
mb=${1:-1024}
runs=${2:-3}
out=bench/out
mkdir -p "$out"
go build -o "$out/pgrehearse" ./cmd/pgrehearse
cores=$(nproc)
cpu=${BENCH_CPU:-1} # the core the one-core runs are pinned to

# run CORES LABEL CMD...: wall time, CPU time (user + system: on a shared
# machine the wall time includes waiting for a core) and peak RSS, pinned
# to one core or not; sets $secs. The ratio is to wc -l's wall time of the
# same run ($wc; the baseline row sets it).
run() {
  local cores=$1 label=$2; shift 2
  local t0 t1 out pin=()
  [ "$cores" = 1 ] && pin=(taskset -c "$cpu")
  t0=$(date +%s.%N)
  out=$( { /usr/bin/time -f '%M %U %S' "${pin[@]}" "$@" > /dev/null; } 2>&1 | tail -n 1 )
  t1=$(date +%s.%N)
  secs=$(awk -v t0="$t0" -v t1="$t1" 'BEGIN { print t1 - t0 }')
  [ -z "${wc:-}" ] && wc=$secs
  echo "$out" | awk -v l="$label" -v b="$bytes" -v s="$secs" -v wc="$wc" \
    '{ cpu = $2 + $3; if (cpu < 0.01) cpu = 0.01
       printf "  %-32s %6.2f s %5.0f MB/s  %4.2fx wc -l | cpu %6.2f s %5.0f MB/s | peak RSS %4.0f MB\n", l, s, b / s / 1e6, wc / s, cpu, b / cpu / 1e6, $1 / 1024 }'
}

for kind in bench realistic; do
  log=$out/$kind-${mb}m.log
  if [ ! -s "$log" ]; then
    echo "writing a ${mb} MiB $kind log to $log"
    go run ./bench/genlog -kind "$kind" -mb "$mb" > "$log"
  fi
  bytes=$(stat -L -c %s "$log")
  cat "$log" > /dev/null # into the page cache
  echo "$kind log: $log ($((bytes / 1000000)) MB)"
  for r in $(seq "$runs"); do
    echo " run $r"
    wc=
    run 1 "wc -l (baseline, 1 core)" wc -l "$log"
    run 1 "events --count (reader, 1 core)" "$out/pgrehearse" events --count "$log"
    if [ -n "${BASELINE:-}" ]; then run 1 "  baseline events --count" "$BASELINE" events --count "$log"; fi
    run 1 "analyze -j 1 (1 core)" "$out/pgrehearse" analyze -j 1 --findings=false "$log"
    if [ -n "${BASELINE:-}" ]; then run 1 "  baseline analyze -j 1" "$BASELINE" analyze -j 1 --findings=false "$log"; fi
    run "$cores" "analyze -j $cores ($cores cores)" "$out/pgrehearse" analyze -j "$cores" --findings=false "$log"
    if [ -n "${BASELINE:-}" ]; then run "$cores" "  baseline analyze -j $cores" "$BASELINE" analyze -j "$cores" --findings=false "$log"; fi
  done
done
