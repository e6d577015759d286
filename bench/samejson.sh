#!/usr/bin/env bash
# bench/samejson.sh: checks that a change left the JSON (and the text) of
# report and headroom's judgement as they were, against a reference tree
# (a clone at an earlier commit, outside the repository), on stored
# inputs, whose output does not depend on the time they are run.
#
# rehearse, report and headroom time real replays, so their JSON differs
# from run to run of one binary. What is deterministic is what they make
# of stored rounds:
#   - report --json - --baseline CONTROL... --candidate CANDIDATE... over
#     a rehearsal's rounds (rehearse --out DIR, or demo --out DIR: DIR/
#     rounds/round-NN-control.json and round-NN-candidate.json): the
#     comparison rehearse makes of them, with its summary (standard
#     error), and each round alone (report FILE --json -);
#   - bench/samejson, built in both trees: judge.Levels, headroom's
#     judgement of a side's steps, over the same rounds (the control's as
#     the 1x baseline, the candidate's first two as k = 2, its third as
#     k = 4);
#   - report --json - over the results of internal/results/testdata
#     (each alone, and every pair).
# Outputs are compared byte for byte, standard error and exit codes too;
# a JSON that differs is then compared field by field, printing the
# fields only one side has and those that changed (their paths, indexes
# as N, queries matched by fingerprint and shown as {fp}). Nothing is stripped: none of these outputs holds a clock.
#
# Usage: bench/samejson.sh REFERENCE_TREE ROUNDS_DIR... 
#   REFERENCE_TREE: a clone at the reference commit (git clone; git
#   checkout 1810a82); its pgrehearse and bench/samejson are built there
#   (bench/samejson/main.go is copied into it when absent).
# Exit status: 0 when every output is the same, 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/.."
reftree=${1:?usage: bench/samejson.sh REFERENCE_TREE ROUNDS_DIR...}
shift
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
here=$(pwd)
go build -o "$out/new" ./cmd/pgrehearse || exit 1
go build -o "$out/newj" ./bench/samejson || exit 1
mkdir -p "$reftree/bench/samejson"
[ -f "$reftree/bench/samejson/main.go" ] || cp bench/samejson/main.go "$reftree/bench/samejson/"
(cd "$reftree" && go build -o "$out/ref" ./cmd/pgrehearse && go build -o "$out/refj" ./bench/samejson) || exit 1

same=0 differ=0
fields() { # fields REF NEW: the paths that differ between two JSON files
  python3 - "$1" "$2" <<'PY'
import json, re, sys
def paths(o, p=''):
    if isinstance(o, dict):
        r = {}
        for k, v in o.items(): r.update(paths(v, p + '/' + k))
        return r
    if isinstance(o, list):
        r = {}
        # Queries are matched by fingerprint (and metric), not by their
        # place in a list that a changed label reorders.
        keys = [isinstance(v, dict) and 'fingerprint' in v and v['fingerprint'] + ':' + str(v.get('metric', '')) for v in o]
        if o and all(keys) and len(set(keys)) == len(keys):
            for k, v in zip(keys, o): r.update(paths(v, p + '/{' + k + '}'))
            return r
        for i, v in enumerate(o): r.update(paths(v, p + '/' + str(i)))
        return r
    return {p: o}
a, b = (paths(json.load(open(f))) for f in sys.argv[1:3])
n = lambda k: re.sub(r'/\{[^}]*\}', '/{fp}', re.sub(r'/\d+', '/N', k))
only_ref = sorted({n(k) for k in set(a) - set(b)})
only_new = sorted({n(k) for k in set(b) - set(a)})
changed = [k for k in set(a) & set(b) if a[k] != b[k]]
ulp = [k for k in changed if isinstance(a[k], float) and isinstance(b[k], float) and abs(a[k] - b[k]) <= 1e-12 * max(abs(a[k]), abs(b[k]))]
for k in only_ref: print('  only in the reference:', k)
for k in only_new: print('  only in the new:', k)
for k in sorted({n(k) for k in changed if k not in ulp}): print('  changed:', k)
for k in sorted(k for k in changed if k not in ulp)[:6]: print('   e.g.', k, repr(a[k])[:80], '->', repr(b[k])[:80])
for k in sorted({n(k) for k in ulp}): print('  changed in the last digit only (relative <= 1e-12):', k)
PY
}
compare() { # compare LABEL: $out/{r,n}.{stdout,stderr,rc}
  local what=""
  cmp -s "$out/r.stdout" "$out/n.stdout" || what="$what stdout"
  cmp -s "$out/r.stderr" "$out/n.stderr" || what="$what stderr"
  cmp -s "$out/r.rc" "$out/n.rc" || what="$what exit($(cat "$out/r.rc")->$(cat "$out/n.rc"))"
  if [ -z "$what" ]; then
    same=$((same + 1))
    return
  fi
  differ=$((differ + 1))
  echo "DIFFERS:$what: $1"
  if [[ $what == *stdout* ]]; then
    if jq -e . "$out/r.stdout" >/dev/null 2>&1 && jq -e . "$out/n.stdout" >/dev/null 2>&1; then
      fields "$out/r.stdout" "$out/n.stdout"
    else
      diff "$out/r.stdout" "$out/n.stdout" | head -n 10
    fi
  fi
  [[ $what == *stderr* ]] && diff "$out/r.stderr" "$out/n.stderr" | head -n 8
}
run() { # run BIN NAME ARGS...
  local bin=$1 name=$2; shift 2
  "$bin" "$@" >"$out/$name.stdout" 2>"$out/$name.stderr" </dev/null
  echo $? >"$out/$name.rc"
}
both() { # both LABEL ARGS...: pgrehearse ARGS with both binaries
  local label=$1; shift
  run "$out/ref" r "$@"
  run "$out/new" n "$@"
  compare "$label"
}

for dir in "$@"; do
  [ -d "$dir/rounds" ] && dir=$dir/rounds
  mapfile -t ctl < <(ls "$dir"/round-*-control.json 2>/dev/null | sort)
  mapfile -t cand < <(ls "$dir"/round-*-candidate.json 2>/dev/null | sort)
  if [ "${#ctl[@]}" = 0 ] || [ "${#cand[@]}" = 0 ]; then
    echo "$dir: no rounds (round-NN-control.json, round-NN-candidate.json)" >&2
    exit 1
  fi
  both "report --json - (rehearsal) $dir" report --json - --baseline "${ctl[@]}" --candidate "${cand[@]}"
  for f in "${ctl[@]}" "${cand[@]}"; do
    both "report --json - $f" report --json - "$f"
  done
  levels=("1=$(IFS=,; echo "${ctl[*]}")")
  [ "${#cand[@]}" -ge 2 ] && levels+=("2=${cand[0]},${cand[1]}")
  [ "${#cand[@]}" -ge 3 ] && levels+=("4=${cand[2]}")
  run "$out/refj" r "${levels[@]}"
  run "$out/newj" n "${levels[@]}"
  compare "headroom's judgement (judge.Levels) $dir"
done
mapfile -t stored < <(ls internal/results/testdata/*.json | sort)
for f in "${stored[@]}"; do
  both "report --json - $f" report --json - "$f"
  for g in "${stored[@]}"; do
    [ "$f" = "$g" ] || both "report --json - $f $g" report --json - "$f" "$g"
  done
done
echo "outputs compared: $((same + differ)); the same: $same; different: $differ"
[ "$differ" = 0 ]
