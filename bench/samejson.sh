#!/usr/bin/env bash
# bench/samejson.sh: checks that a change left the JSON (and the text) of
# rehearse, report and headroom as they were, against a reference tree
# (a clone at an earlier commit, outside the repository), on stored
# inputs, whose output does not depend on the time they are run.
#
# rehearse, report and headroom time real replays, so their JSON differs
# from run to run of one binary. What is deterministic is what they make
# of stored rounds and steps, and neither command has a flag to judge
# stored ones again (at 1810a82 or now): the rehearse and headroom JSON
# are made by small programs under bench/, built in both trees, that call
# the libraries the commands call, as the commands call them.
#
# For a rehearsal (rehearse --out DIR, or demo --out DIR: DIR/rounds/
# round-NN-control.json, round-NN-candidate.json and rehearsal.json):
#   - report --json - --baseline CONTROL... --candidate CANDIDATE... (the
#     comparison rehearse makes of them), with its summary (standard
#     error), and each round alone (report FILE --json -);
#   - bench/samerehearse: rehearse --json's document (the comparison, the
#     findings of the candidate's first round, the rehearsal's index),
#     judged as rehearse judges it (rehearse.Judge, the flags in
#     REHEARSE_FLAGS, default the demo's: -fail-on
#     'p95>+50%,wal>+50%,dirtied>+50%' -min-effect-ms 0.2). It is run
#     over a copy of the rounds whose index keeps only the comparison's
#     rounds: 1810a82 has no fix rounds, and would read a fix round as
#     one of the comparison's (what rehearse --fixes=false writes). Not
#     made: the plans and the fixes (EXPLAIN and fix rounds on live
#     servers), and the findings that need the candidate's catalog (no
#     server: they are listed as not evaluated, alike in both trees).
#     When DIR/report.json (the demo's rehearse --json) is there, the new
#     tree's document is first checked against it, without "plans",
#     "fixes" and "findings" (a check of the program, not counted);
#   - bench/samejson: judge.Levels, headroom's judgement of a side's
#     steps, over the same rounds (the control's as the 1x baseline, the
#     candidate's first two as k = 2, its third as k = 4).
# For a headroom run (headroom --out DIR/steps --json DIR/headroom.json,
# or demo --headroom --out DIR):
#   - bench/sameheadroom: headroom.Run again over the stored steps, each
#     step the search asks for read from DIR/steps instead of replayed,
#     with the stored run's by, speed, search bounds, span, sides and
#     resets (read from DIR/headroom.json) and the SLO in HEADROOM_SLO
#     (default headroom's, p95<+50%,errors<+0.1pp): the whole JSON
#     (steps, measurements, verdicts, baselines, answers, first breaks,
#     USL, peak and knee) and the summary (standard error). Not made: the
#     clock (each step's started_at, reset_seconds, replay_seconds, the
#     run's started_at and ended_at: zero in both) and the server's CPU
#     (measured from /proc during the live step: absent in both, so no
#     step can be bound by the server's CPU). A search that asks for a
#     step the stored run did not take fails, and says which. The new
#     tree's JSON is first checked against DIR/headroom.json without
#     those fields (a check of the program, not counted).
# And report --json - over the results of internal/results/testdata
# (each alone, and every pair).
# Outputs are compared byte for byte, standard error and exit codes too;
# a JSON that differs is then compared field by field, printing the
# fields only one side has and those that changed (their paths, indexes
# as N, queries matched by fingerprint and shown as {fp}). Nothing is
# stripped from the compared outputs: none of them holds a clock.
#
# Usage: bench/samejson.sh REFERENCE_TREE DIR...
#   REFERENCE_TREE: a clone at the reference commit (git clone; git
#   checkout 1810a82); its pgrehearse and the bench programs are built
#   there (bench/samejson, bench/samerehearse and bench/sameheadroom are
#   copied into it, samerehearse built with -tags ref1810a82: 1810a82's
#   judge API differs).
# Exit status: 0 when every output is the same and every check of the
# render programs passed, 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/.."
reftree=${1:?usage: bench/samejson.sh REFERENCE_TREE DIR...}
shift
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
here=$(pwd)
go build -o "$out/new" ./cmd/pgrehearse || exit 1
go build -o "$out/newj" ./bench/samejson || exit 1
go build -o "$out/newr" ./bench/samerehearse || exit 1
go build -o "$out/newh" ./bench/sameheadroom || exit 1
for p in samejson samerehearse sameheadroom; do
  mkdir -p "$reftree/bench/$p"
  cp bench/$p/*.go "$reftree/bench/$p/"
done
(cd "$reftree" && go build -o "$out/ref" ./cmd/pgrehearse && go build -o "$out/refj" ./bench/samejson &&
  go build -tags ref1810a82 -o "$out/refr" ./bench/samerehearse && go build -o "$out/refh" ./bench/sameheadroom) || exit 1
REHEARSE_FLAGS=${REHEARSE_FLAGS:--fail-on p95>+50%,wal>+50%,dirtied>+50% -min-effect-ms 0.2}
HEADROOM_SLO=${HEADROOM_SLO:-p95<+50%,errors<+0.1pp}

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
program() { # program LABEL: compare, for a bench program, which must not fail
  if [ "$(cat "$out/r.rc")" != 0 ] || [ "$(cat "$out/n.rc")" != 0 ]; then
    differ=$((differ + 1))
    echo "FAILED: $1: exit $(cat "$out/r.rc") (reference), $(cat "$out/n.rc") (new)"
    tail -n 2 "$out/r.stderr" "$out/n.stderr"
    return
  fi
  compare "$1"
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

checks=0 checked=0
selfcheck() { # selfcheck LABEL LIVE RENDER JQFILTER WHAT: the new program against the command's own JSON, without WHAT
  checks=$((checks + 1))
  if ! jq -S "$4" "$2" >"$out/live.cmp" || ! jq -S "$4" "$3" >"$out/render.cmp"; then
    echo "CHECK FAILED: $1: jq could not read $2 or the render"
    return
  fi
  if cmp -s "$out/live.cmp" "$out/render.cmp"; then
    checked=$((checked + 1))
    echo "check: $1: the new tree's render is the command's JSON, without $5"
  else
    echo "CHECK FAILED: $1: the new tree's render is not the command's JSON (without $5):"
    fields "$out/live.cmp" "$out/render.cmp"
  fi
}
rehearsal() { # rehearsal DIR: a rehearsal's rounds
  local dir=$1 top=$1
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
  if [ -f "$dir/rehearsal.json" ]; then
    local abs
    abs=$(cd "$dir" && pwd)
    # shellcheck disable=SC2086 # REHEARSE_FLAGS are words
    if [ -f "$top/report.json" ] && "$out/newr" $REHEARSE_FLAGS "$abs" >"$out/render.json"; then
      selfcheck "rehearse --json $top/report.json" "$top/report.json" "$out/render.json" 'del(.plans, .fixes, .findings)' '"plans", "fixes" and "findings"'
    fi
    # The comparison's rounds only, with their index: what a rehearsal
    # without fix rounds writes, which 1810a82 reads as the new does.
    local cmpdir=$out/comparison
    rm -rf "$cmpdir" && mkdir -p "$cmpdir"
    cp "${ctl[@]}" "${cand[@]}" "$cmpdir/"
    jq 'del(.fixes) | .records |= map(select((.fix // "") == "" and (.beside_fixes // false) == false))' \
      "$dir/rehearsal.json" >"$cmpdir/rehearsal.json"
    # shellcheck disable=SC2086
    run "$out/refr" r $REHEARSE_FLAGS "$cmpdir"
    # shellcheck disable=SC2086
    run "$out/newr" n $REHEARSE_FLAGS "$cmpdir"
    program "rehearse --json (bench/samerehearse $REHEARSE_FLAGS) $dir"
  fi
  levels=("1=$(IFS=,; echo "${ctl[*]}")")
  [ "${#cand[@]}" -ge 2 ] && levels+=("2=${cand[0]},${cand[1]}")
  [ "${#cand[@]}" -ge 3 ] && levels+=("4=${cand[2]}")
  run "$out/refj" r "${levels[@]}"
  run "$out/newj" n "${levels[@]}"
  program "headroom's judgement (judge.Levels) $dir"
}
headroomrun() { # headroomrun DIR: a headroom run's steps and JSON
  local dir=$1 live=$1/headroom.json steps=$1/steps args
  [ -d "$steps" ] || steps=$dir
  args=(-slo "$HEADROOM_SLO" -by "$(jq -r .by "$live")" -speed "$(jq -r .speed "$live")"
    -max-k "$(jq -r .search.max_k "$live")" -base-rounds "$(jq -r .search.base_rounds "$live")"
    -boundary-rounds "$(jq -r .search.boundary_rounds "$live")" -span "$(jq -r .span_seconds "$live")"
    -sides "$(jq -r '[.sides[].side as $s | "\($s)=\(.reset_modes[$s])"] | join(",")' "$live")")
  local clock='del(.started_at, .ended_at) | del(.sides[].steps[].started_at, .sides[].steps[].reset_seconds, .sides[].steps[].replay_seconds,
    .sides[].steps[].file, .sides[].steps[].measurement.server_cpu_cores, .sides[].steps[].measurement.server_cpu_s)'
  if "$out/newh" "${args[@]}" "$steps" >"$out/render.json" 2>/dev/null; then
    selfcheck "headroom --json $live" "$live" "$out/render.json" "$clock" "the clock's fields, the step's file and the server's CPU"
  else
    checks=$((checks + 1))
    echo "CHECK FAILED: headroom --json $live: the new tree's render stopped: $("$out/newh" "${args[@]}" "$steps" 2>&1 >/dev/null | tail -n 1)"
  fi
  run "$out/refh" r "${args[@]}" "$steps"
  run "$out/newh" n "${args[@]}" "$steps"
  program "headroom --json (bench/sameheadroom ${args[*]}) $dir"
}
for dir in "$@"; do
  if [ -f "$dir/headroom.json" ]; then
    headroomrun "$dir"
  else
    rehearsal "$dir"
  fi
done
mapfile -t stored < <(ls internal/results/testdata/*.json | sort)
for f in "${stored[@]}"; do
  both "report --json - $f" report --json - "$f"
  for g in "${stored[@]}"; do
    [ "$f" = "$g" ] || both "report --json - $f $g" report --json - "$f" "$g"
  done
done
echo "outputs compared: $((same + differ)); the same: $same; different: $differ"
[ "$checks" = 0 ] || echo "checks of the render programs against the commands' own JSON: $checked of $checks passed"
[ "$differ" = 0 ] && [ "$checked" = "$checks" ]
