#!/usr/bin/env bash
# bench/aa-burst.sh: does an outside CPU burst that falls mostly on the
# candidate's rounds make the demo's identical targets "regress"? It runs
# `pgrehearse demo --change none` RUNS times and, in each, starts two busy
# loops (yes > /dev/null, as another job on the machine would) AT seconds
# after the demo's start, for FOR seconds; every line of the demo is
# stamped with its second, so the rounds the burst covered can be read
# next to it. It prints, per run, the burst, the rounds and the verdict.
# bench/results/2026-11-23-noise-outside-burst.md has the figures.
#
#   bench/aa-burst.sh [RUNS] [AT] [FOR]     (defaults: 3 runs, 22 s, 15 s:
#   with the demo's 4 s of traffic, candidate rounds 1 and 2)
#
# The burst is timed with sleep: this is an experiment, not a test. Run it
# alone (it takes the shared timing lock when flock is there).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
at=${2:-22}
for=${3:-15}
go build -o bin/pgrehearse ./cmd/pgrehearse
lock=()
if command -v flock >/dev/null; then lock=(flock /tmp/timing.lock); fi
dir=$(mktemp -d -t pgrehearse-aa-burst-XXXXXX)
echo "load before: $(uptime)"
for n in $(seq 1 "$runs"); do
  out=$dir/run-$n
  start=$(date +%s)
  (
    sleep "$at"
    echo "$(( $(date +%s) - start )) burst: start" >>"$out.log"
    timeout "$for" sh -c 'yes >/dev/null & yes >/dev/null & wait' || true
    echo "$(( $(date +%s) - start )) burst: end" >>"$out.log"
  ) &
  "${lock[@]}" bin/pgrehearse demo --change none --duration 4s --out "$out" 2>&1 >"$out.out" |
    while IFS= read -r line; do echo "$(( $(date +%s) - start )) $line"; done >>"$out.log"
  wait
  echo "== run $n"
  grep -E 'burst:|round [0-9]+ of [0-9]+: .*done|demo: verdict' "$out.log" | cut -c1-160
done
echo "load after: $(uptime)"
echo "results and logs: $dir"
