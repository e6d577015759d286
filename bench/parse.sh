#!/usr/bin/env bash
# bench/parse.sh: how fast pgrehearse reads a large stderr log, next to
# `wc -l` reading the same file from the page cache in the same run.
# Figures are ratios against wc -l: the machines are shared and noisy.
#
# Usage: bench/parse.sh [MiB]   (default 1024: a 1 GiB log)
set -euo pipefail
cd "$(dirname "$0")/.."
mb=${1:-1024}
out=bench/out
mkdir -p "$out"
log=$out/synthetic-${mb}m.log
go build -o "$out/pgrehearse" ./cmd/pgrehearse
if [ ! -s "$log" ]; then
  echo "writing a ${mb} MiB synthetic log to $log"
  go run ./bench/genlog -mb "$mb" > "$log"
fi
bytes=$(stat -c %s "$log")
cat "$log" > /dev/null # into the page cache

# run LABEL CMD...: one core (taskset), wall time and peak RSS.
run() {
  local label=$1; shift
  local t0 t1 rss
  t0=$(date +%s.%N)
  rss=$( { /usr/bin/time -f '%M' taskset -c 0 "$@" > /dev/null; } 2>&1 | tail -n 1 )
  t1=$(date +%s.%N)
  awk -v l="$label" -v b="$bytes" -v t0="$t0" -v t1="$t1" -v rss="$rss" \
    'BEGIN { s = t1 - t0; printf "%-34s %8.2f s %9.0f MB/s   peak RSS %6.0f MB\n", l, s, b / s / 1e6, rss / 1024 }'
}

echo "log: $log ($((bytes / 1000000)) MB), one core each"
run "wc -l (baseline)" wc -l "$log"
run "pgrehearse events --count" "$out/pgrehearse" events --count --prefix '%m [%p] %q%u@%d/%a %c ' "$log"
run "pgrehearse analyze -j 1" "$out/pgrehearse" analyze -j 1 --prefix '%m [%p] %q%u@%d/%a %c ' "$log"
