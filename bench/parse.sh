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

# run CORES LABEL CMD...: on one core (taskset) or all, wall time and peak RSS.
run() {
  local cores=$1 label=$2; shift 2
  local t0 t1 rss pin=()
  [ "$cores" = 1 ] && pin=(taskset -c 0)
  t0=$(date +%s.%N)
  rss=$( { /usr/bin/time -f '%M' "${pin[@]}" "$@" > /dev/null; } 2>&1 | tail -n 1 )
  t1=$(date +%s.%N)
  awk -v l="$label" -v b="$bytes" -v t0="$t0" -v t1="$t1" -v rss="$rss" \
    'BEGIN { s = t1 - t0; printf "%-34s %8.2f s %9.0f MB/s   peak RSS %6.0f MB\n", l, s, b / s / 1e6, rss / 1024 }'
}

prefix='%m [%p] %q%u@%d/%a %c '
echo "log: $log ($((bytes / 1000000)) MB)"
run 1 "wc -l (baseline, 1 core)" wc -l "$log"
run 1 "events --count (reader, 1 core)" "$out/pgrehearse" events --count --prefix "$prefix" "$log"
run 1 "analyze -j 1 (1 core)" "$out/pgrehearse" analyze -j 1 --prefix "$prefix" "$log"
cores=$(nproc)
run "$cores" "analyze -j $cores ($cores cores)" "$out/pgrehearse" analyze -j "$cores" --prefix "$prefix" "$log"
