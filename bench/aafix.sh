#!/usr/bin/env bash
# bench/aafix.sh: does a fix that changes nothing claim anything? Issue
# 57's acceptance: an A/A fix (a new index no query uses) on an identical
# candidate, rehearsed RUNS times on a busy machine, must claim neither a
# regression nor a gain. Each run is `pgrehearse demo --change none` (a
# control and a candidate alike, 3 rounds a side) with
# --try 'unused:CREATE INDEX aa_unused ON customers (created_at)': no
# query of the shop filters or sorts customers by created_at, and nothing
# writes customers, so the index is never read nor kept up. The try runs
# in --fix-rounds (3) candidate rounds of its own, judged against the
# control's rounds run in turn with it and against the candidate without
# it (docs/fix-rounds.md, "Your own change: --try").
#
# It prints, per run, the load average before it, the rehearsal's verdict
# and the try's outcome: its status, the queries that "regressed with the
# fix only" (costs), those slower or faster beyond noise than without it
# (changes), and those set aside as within noise. A clean run has no
# costs and no changes.
#
#   bench/aafix.sh [RUNS] [DURATION]     (defaults: 5 runs, 20s of traffic)
#
# Run it while the machine is busy: it takes no timing lock, on purpose.
# PGREHEARSE: a pgrehearse binary (default: built from here).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
duration=${2:-20s}
dir=$(mktemp -d -t pgrehearse-aafix-XXXXXX)
pgr=${PGREHEARSE:-$dir/pgrehearse}
[ -n "${PGREHEARSE:-}" ] || go build -o "$pgr" ./cmd/pgrehearse
try='unused:CREATE INDEX aa_unused ON customers (created_at)'
echo "command: $pgr demo --change none --duration $duration --try '$try' --out $dir/run-N"
claims=0
for n in $(seq 1 "$runs"); do
  out=$dir/run-$n
  echo "== run $n: $(date -u +%H:%M:%S) UTC, load $(cut -d' ' -f1-3 /proc/loadavg)"
  set +e
  "$pgr" demo --change none --duration "$duration" --try "$try" --out "$out" >"$out.out" 2>"$out.err"
  rc=$?
  set -e
  echo "exit code $rc; $(grep -o 'verdict: .*' "$out.err" | head -1)"
  if [ ! -f "$out/report.json" ]; then
    tail -5 "$out.err"
    continue
  fi
  # One line per try: its status and what it claims.
  line=$(jq -r '.fixes[]? | select(.name == "try-unused") |
    "try-unused: \(.status) (\(.rounds) rounds, control rounds \(.control_rounds // [] | map(tostring) | join(","))); costs \(.costs // [] | length); changes \(.changes // [] | length) (\([.changes[]?.direction] | join(","))); within noise \(.within_noise // [] | length)"' "$out/report.json")
  echo "${line:-try-unused: missing from report.json}"
  jq -r '.fixes[]? | select(.name == "try-unused") | (.costs // [])[], (.changes // [])[] | "  claim: \(.direction // "slower") \(.query[0:80])"' "$out/report.json"
  if [ -z "$line" ] || [ "$(jq '[.fixes[]? | select(.name == "try-unused") | ((.costs // []) + (.changes // []))[]] | length' "$out/report.json")" != 0 ]; then
    claims=$((claims + 1))
  fi
  sed -n '/^Fixes tried/,$p' "$out.out" | head -20
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "runs that claimed something (or lost the try): $claims of $runs; results in $dir"
