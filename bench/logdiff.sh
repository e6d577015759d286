#!/usr/bin/env bash
# bench/logdiff.sh: does the log reader still read every fixture log as a
# reference binary does? For each log under internal/*/testdata (and the
# files of any directories given), runs both binaries with
#   analyze --json - -j 1, analyze --json - -j 2, events --show-params
#   and findings
# and compares their standard output, standard error and exit code, byte
# for byte. Prints one line per difference and a summary; exits 1 when
# anything differs.
#
# STRIP in the environment lists top-level fields of the results JSON that
# a newer version adds on purpose (e.g. STRIP="version input part
# other_shards incomplete_reasons degraded_reasons"): a JSON standard
# output that differs is compared again without them (jq), and a
# difference only there is counted apart, as "stripped".
#
# Usage: bench/logdiff.sh REF_BINARY [DIR...]
#   REF_BINARY  pgrehearse built from the commit to compare with, e.g.
#               git worktree add /tmp/ref <commit> && (cd /tmp/ref && go build -o /tmp/ref/pgrehearse ./cmd/pgrehearse)
#   DIR         more directories of logs (e.g. /work/shared/fixtures/pgbadger)
# NEW_BINARY in the environment names the binary to test; by default the
# tree's own is built into bench/out/pgrehearse.
set -uo pipefail
cd "$(dirname "$0")/.."
ref=${1:?usage: bench/logdiff.sh REF_BINARY [DIR...]}
shift
new=${NEW_BINARY:-}
if [ -z "$new" ]; then
  mkdir -p bench/out
  go build -o bench/out/pgrehearse ./cmd/pgrehearse || exit 1
  new=bench/out/pgrehearse
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Logs: every file of a testdata directory but what is plainly not a log
# (expected outputs, scripts, notes, fuzz corpora, Go sources).
list() {
  find "$@" -type f \
    ! -path '*/fuzz/*' ! -name '*.golden' ! -name '*.go' ! -name '*.sh' \
    ! -name '*.md' ! -name '*.tsv' ! -name '*.txt' ! -name '*.json.golden' \
    ! -name '*.html' ! -name '*.png' 2>/dev/null | sort
}
mapfile -t files < <(list $(find internal -type d -name testdata -prune) "$@")

strip=${STRIP:-}
jqdel=.
if [ -n "$strip" ]; then
  command -v jq >/dev/null || { echo "logdiff: STRIP needs jq" >&2; exit 2; }
  jqdel=$(printf 'del(.%s) | ' $strip)'.'
fi

files_n=0 runs=0 diffs=0 stripped=0
for f in "${files[@]}"; do
  files_n=$((files_n + 1))
  for mode in "analyze -j 1" "analyze -j 2" "events" "findings"; do
    case $mode in
      "analyze -j 1") args=(analyze --json - -j 1 "$f") ;;
      "analyze -j 2") args=(analyze --json - -j 2 "$f") ;;
      events) args=(events --show-params "$f") ;;
      findings) args=(findings "$f") ;;
    esac
    runs=$((runs + 1))
    "$ref" "${args[@]}" > "$tmp/ref.out" 2> "$tmp/ref.err" < /dev/null; rc_ref=$?
    "$new" "${args[@]}" > "$tmp/new.out" 2> "$tmp/new.err" < /dev/null; rc_new=$?
    what=()
    if ! cmp -s "$tmp/ref.out" "$tmp/new.out"; then
      if [ -n "$strip" ] && jq "$jqdel" "$tmp/ref.out" > "$tmp/ref.json" 2>/dev/null &&
        jq "$jqdel" "$tmp/new.out" > "$tmp/new.json" 2>/dev/null && cmp -s "$tmp/ref.json" "$tmp/new.json"; then
        stripped=$((stripped + 1))
      else
        what+=(stdout)
      fi
    fi
    cmp -s "$tmp/ref.err" "$tmp/new.err" || what+=(stderr)
    [ "$rc_ref" = "$rc_new" ] || what+=("exit $rc_ref->$rc_new")
    if [ ${#what[@]} -gt 0 ]; then
      diffs=$((diffs + 1))
      echo "DIFF  $mode  $f: ${what[*]}"
      if [ -n "${LOGDIFF_VERBOSE:-}" ]; then
        diff <(cat "$tmp/ref.out" "$tmp/ref.err") <(cat "$tmp/new.out" "$tmp/new.err") | head -n 20
      fi
    fi
  done
done
echo "logdiff: $files_n logs, $runs runs (analyze --json -j 1, -j 2, events --show-params, findings), $diffs differ${strip:+; $stripped differ only in the stripped fields ($strip)}"
[ "$diffs" = 0 ]
