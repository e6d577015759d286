#!/usr/bin/env bash
# bench/aa.sh: what two identical targets differ by. It captures a
# workload (the demo's shop and an application mix, with writes and
# errors) on a throwaway server and replays it ROUNDS times onto each of
# two identical throwaway targets (A B B A A B ...), at speed 1 with
# their own logs for server-side timings, keeping each replay's result in
# DIR; then bench/aafloors prints how far apart single runs were per
# figure, and what report made of them one run a side and three a side.
# docs/noise-measured.md derives the default noise floors from it.
#
#   bench/aa.sh [DIR] [SECONDS] [ROUNDS]     (defaults: a temporary
#   directory, 30 s of traffic, 5 rounds a side)
#
# Timings: run it alone (it takes the shared timing lock when flock is
# there) and note the load average it prints.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-$(mktemp -d -t pgrehearse-aa-XXXXXX)}
secs=${2:-30}
rounds=${3:-5}
mkdir -p "$dir"
lock=()
if command -v flock >/dev/null; then lock=(flock /tmp/timing.lock); fi
echo "load before: $(uptime)"
PGREHEARSE_AA_SECONDS=$secs PGREHEARSE_AA_ROUNDS=$rounds PGREHEARSE_AA_DIR=$dir \
  "${lock[@]}" go test -run '^$' -bench BenchmarkAAReplays -benchtime 1x -timeout 60m ./internal/cli/
echo "load after: $(uptime)"
go run ./bench/aafloors "$dir"
