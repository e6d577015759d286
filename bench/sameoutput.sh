#!/usr/bin/env bash
# bench/sameoutput.sh: checks that a change left the output of the log
# commands as it was, against a reference binary built from an earlier
# commit (outside the repository: it is passed as an argument).
#
# For every fixture log of the repository's testdata directories it runs,
# with both binaries:
#   analyze --json - -j 1, analyze --json - -j 2, events --show-params,
#   findings, replay --dry-run --speed 0 --json -
# and compares standard output, standard error and the exit code byte for
# byte. The results JSON differs on purpose in what a newer version adds:
# "version" and the fields named in STRIP (default: input, part,
# other_shards, incomplete_reasons) are removed from both sides before
# comparing, and the script says so. A dry run's JSON also holds the wall
# clock (started_at, ended_at, wall_seconds, client_cpu_seconds, each
# query's first_seen and last_seen: when the replay ran them) and the
# reader's memory high-water mark, which differ from run to run of one
# binary: they are removed too, and its summary on standard error, which
# times the run, is not compared.
#
# Usage: bench/sameoutput.sh REFERENCE_BINARY [NEW_BINARY]
#   NEW_BINARY defaults to a fresh build of the working tree.
# Exit status: 0 when every output is the same, 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/.."
ref=${1:?usage: bench/sameoutput.sh REFERENCE_BINARY [NEW_BINARY]}
new=${2:-}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
if [ -z "$new" ]; then
  new=$out/pgrehearse
  go build -o "$new" ./cmd/pgrehearse || exit 1
fi
STRIP=${STRIP:-input part other_shards incomplete_reasons}
command -v jq >/dev/null || { echo "jq is needed to strip the new fields" >&2; exit 1; }
jqdel='del(.version)'
for f in $STRIP; do jqdel="$jqdel | del(.$f)"; done
jqwall='del(.started_at, .ended_at, .wall_seconds, .client_cpu_seconds, .reader.max_buffered_bytes, .reader.budget_waits, .reader.over_budget, .reader.budget_wait_ms) | del(.queries[]?.first_seen, .queries[]?.last_seen)'

# Fixture logs: every file under a testdata directory that is not a
# golden file, a script, a note or a result (JSON results of
# internal/results, pgbench outputs of internal/sweep).
mapfile -t logs < <(find internal -path '*/testdata/*' -type f \
  ! -path '*/fuzz/*' ! -name '*.golden' ! -name '*.md' ! -name '*.sh' \
  ! -path 'internal/results/testdata/*' ! -path 'internal/sweep/testdata/*' \
  ! -path 'internal/report/testdata/*' ! -path 'internal/compare/testdata/*' | sort)

same=0 differ=0
run() { # run BIN NAME ARGS... -> $out/NAME.{stdout,stderr,rc}
  local bin=$1 name=$2; shift 2
  "$bin" "$@" >"$out/$name.stdout" 2>"$out/$name.stderr" </dev/null
  echo $? >"$out/$name.rc"
}
compare() { # compare LABEL JSON(0|1|wall)
  local label=$1 json=$2 what
  # Byte for byte; a results JSON that differs is compared again without
  # the fields a newer version adds (jq keeps the order of the keys).
  local filter=$jqdel
  [ "$json" = wall ] && filter="$jqdel | $jqwall"
  if [ "$json" != 0 ] && ! cmp -s "$out/r.stdout" "$out/n.stdout" &&
    jq -e . "$out/r.stdout" >/dev/null 2>&1 && jq -e . "$out/n.stdout" >/dev/null 2>&1; then
    jq "$filter" "$out/r.stdout" >"$out/r.cmp"
    jq "$filter" "$out/n.stdout" >"$out/n.cmp"
  else
    cp "$out/r.stdout" "$out/r.cmp"
    cp "$out/n.stdout" "$out/n.cmp"
  fi
  what=""
  cmp -s "$out/r.cmp" "$out/n.cmp" || what="$what stdout"
  # A dry run's summary (standard error, with --json -) times the run.
  [ "$json" = wall ] || cmp -s "$out/r.stderr" "$out/n.stderr" || what="$what stderr"
  cmp -s "$out/r.rc" "$out/n.rc" || what="$what exit($(cat "$out/r.rc")->$(cat "$out/n.rc"))"
  if [ -z "$what" ]; then
    same=$((same + 1))
  else
    differ=$((differ + 1))
    echo "DIFFERS:$what: $label"
    diff <(head -c 100000 "$out/r.cmp") <(head -c 100000 "$out/n.cmp") | head -n 10
    diff "$out/r.stderr" "$out/n.stderr" | head -n 6
  fi
}
for log in "${logs[@]}"; do
  for j in 1 2; do
    run "$ref" r analyze --json - -j "$j" "$log"
    run "$new" n analyze --json - -j "$j" "$log"
    compare "analyze --json - -j $j $log" 1
  done
  run "$ref" r events --show-params "$log"
  run "$new" n events --show-params "$log"
  compare "events --show-params $log" 0
  run "$ref" r findings "$log"
  run "$new" n findings "$log"
  compare "findings $log" 0
  run "$ref" r replay --dry-run --speed 0 --json - "$log"
  run "$new" n replay --dry-run --speed 0 --json - "$log"
  compare "replay --dry-run --speed 0 --json - $log" wall
done
echo "fixture logs: ${#logs[@]}; outputs compared: $((same + differ)); the same: $same; different: $differ"
echo "(results JSON compared without: version $STRIP; dry runs also without their wall-clock fields)"
[ "$differ" = 0 ]
