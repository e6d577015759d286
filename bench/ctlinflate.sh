#!/usr/bin/env bash
# bench/ctlinflate.sh: the server time per call of bench/forecast's
# queries when the application runs them (pgbench at its rate, as the
# truth) against when pgrehearse replays production's log of the same
# application (as rehearse's control rounds do), on ONE throwaway server,
# in alternating runs, so that a comparison is paired on a shared machine
# (issue 58: the replay's control time of tiny queries is inflated, and
# its round trip outside the server's work is longer than the
# application's).
#
#   bench/ctlinflate.sh FORECAST_OUT
#
# FORECAST_OUT is a directory bench/forecast wrote (-out): its
# production/production.log and production/script-*.sql are used. Every
# cycle runs each arm once, the order turned by one each cycle:
#   app     pgbench -M prepared, 8 clients, -R RATE, 20 s, --random-seed=7,
#           statement logging off (as bench/forecast's truth rounds);
#   replay  pgrehearse replay --speed 1 --sync load of production's log with
#           every statement logged and --target-log (as rehearse's rounds),
#           plus $REPLAY_FLAGS;
#   replayb, replayc  the replay arm with other binaries, $PGREHEARSE_B
#           and $PGREHEARSE_C (builds paired in one run, alternating);
#   replayq the replay on a server that logs no statement, without
#           --target-log;
#   applog  the app on a server that logs every statement, as a replay's;
#   dry     the app, with "pgrehearse replay --dry-run --speed 1" of the
#           same log running beside it: the replayer's own activity
#           without its connections.
# pg_stat_statements is reset before each run. Each run prints, per query,
# its calls and execution + planning time per call (us), and then the
# round trip per call outside the server's work (us, "out"): for the app,
# pgbench's per-transaction log (-l), its latency less its schedule lag
# (what bench/forecast's truth reads), less pg_stat_statements' time per
# call; for a replay, its round trips (--json's client_queries, from the
# first byte sent to the answer's end) less the same; and the client's
# voluntary and involuntary context switches and CPU (user + system) per
# statement (/usr/bin/time). At the end, per arm, the median over its runs of each
# run's figure over the figure of the app run of the same cycle, for both,
# and of replayb and replayc over replay; the medians of the round trips
# outside the server and of the context switches. A busy machine moves a
# run's figures by 2x: read the paired ratios and their ranges.
#
#   CYCLES=4 ARMS="app replay replayb" PGREHEARSE=/tmp/main PGREHEARSE_B=/tmp/new \
#       bench/ctlinflate.sh /tmp/fc-head3
#
# Environment: CYCLES (4), ARMS ("app replay"; add replayb, replayc,
# replayq, applog, dry), RATE (723), REPLAY_FLAGS, COLLECTOR (on: the
# server's logging_collector; off writes the log to pg_ctl -l's file
# from each backend, without the collector's process), PG_BIN
# (/usr/lib/postgresql/15/bin), PGREHEARSE (a pgrehearse binary; default:
# built from here), PGREHEARSE_B and PGREHEARSE_C (replayb's and
# replayc's). The server is built as bench/forecast builds its clusters
# (its settings, the same data). Needs jq and /usr/bin/time.
set -euo pipefail
cd "$(dirname "$0")/.."
fc=${1:?usage: bench/ctlinflate.sh FORECAST_OUT}
command -v jq >/dev/null && [ -x /usr/bin/time ] || { echo "ctlinflate: needs jq and /usr/bin/time" >&2; exit 2; }
[ -f "$fc/production/production.log" ] || { echo "ctlinflate: $fc/production/production.log: missing (run bench/forecast -out $fc first)" >&2; exit 2; }
cycles=${CYCLES:-4}
arms=(${ARMS:-app replay})
rate=${RATE:-723}
. bench/lib.sh ctlinflate
for b in B C; do
  case " ${ARMS:-} " in *" replay${b,} "*)
    v=PGREHEARSE_$b
    [ -x "${!v:-}" ] || { echo "ctlinflate: the replay${b,} arm needs $v, a pgrehearse binary" >&2; exit 2; } ;;
  esac
done

prefix='%m [%p] %q%u@%d/%a %c %e '
"${as[@]}" "$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --no-locale -N >/dev/null
cat >>"$dir/data/postgresql.conf" <<EOF
port = $port
listen_addresses = ''
unix_socket_directories = '$dir'
logging_collector = ${COLLECTOR:-on}
log_directory = '$dir/log'
log_destination = 'stderr'
log_line_prefix = '$prefix'
log_min_duration_statement = -1
log_rotation_size = 0
lc_messages = 'C'
fsync = off
synchronous_commit = off
full_page_writes = off
shared_preload_libraries = 'pg_stat_statements'
pg_stat_statements.track_planning = on
EOF
"${as[@]}" "$bin/pg_ctl" -D "$dir/data" -w -l "$dir/pg_ctl.log" start >/dev/null
psql=("$bin/psql" -h "$dir" -p "$port" -U postgres -X -q -At -v ON_ERROR_STOP=1)
"${psql[@]}" -d postgres -c "CREATE DATABASE shop"
# bench/forecast's data (app.go's schema), the same on every server.
"${psql[@]}" -d shop >/dev/null <<'EOF'
SET synchronous_commit = on;
CREATE TABLE customers (id bigint PRIMARY KEY, email text NOT NULL, name text NOT NULL, created_at timestamptz NOT NULL);
INSERT INTO customers SELECT i, 'user' || i || '@example.com', 'Customer ' || i, '2026-01-01'::timestamptz + i * interval '1 minute'
FROM generate_series(1, 50000) AS i;
CREATE INDEX customers_email_idx ON customers (email);
CREATE TABLE orders (id bigserial PRIMARY KEY, customer_id bigint NOT NULL, total numeric(10,2) NOT NULL, status text NOT NULL, created_at timestamptz NOT NULL);
INSERT INTO orders (id, customer_id, total, status, created_at)
SELECT i, 1 + (i::bigint * 7919) % 50000, (i % 500) + 0.99, (ARRAY['new', 'paid', 'shipped', 'delivered'])[1 + i % 4],
	'2026-01-01'::timestamptz + ((i::bigint * 7919) % 600000) * interval '10 seconds'
FROM generate_series(1, 600000) AS i;
SELECT setval('orders_id_seq', 600000);
CREATE INDEX orders_created_idx ON orders (created_at);
CREATE INDEX orders_customer_idx ON orders (customer_id);
VACUUM ANALYZE;
CREATE EXTENSION pg_stat_statements;
EOF

# logging ON|OFF sets log_min_duration_statement and waits for it.
logging() {
  local v=-1
  [ "$1" = on ] && v=0
  "${psql[@]}" -d postgres -c "ALTER SYSTEM SET log_min_duration_statement = $v" -c "SELECT pg_reload_conf()" >/dev/null
  until [ "$("${psql[@]}" -d shop -c 'SHOW log_min_duration_statement')" = "$v" ]; do sleep 0.05; done
}
s=$fc/production/script
# timed CMD...: runs CMD, its context switches and CPU in $dir/time.out.
timed() { /usr/bin/time -o "$dir/time.out" -f '%w %c %U %S' "$@"; }
app() {
  rm -f "$dir"/pgb.*
  timed "$bin/pgbench" -h "$dir" -p "$port" -U postgres -n -M prepared -c 8 -j 2 -T 20 -R "$rate" --random-seed=7 \
    -l --log-prefix "$dir/pgb" -f "$s-0.sql@10" -f "$s-1.sql@5" -f "$s-2.sql@5" -f "$s-3.sql@1" shop >"$dir/app.out" 2>&1
}
# replay [BINARY]: the replay of production's log, as rehearse's rounds.
replay() {
  local logs=("$dir"/log/*.log)
  # Without the collector the server's stderr, pg_ctl -l's file, is the log.
  [ "${COLLECTOR:-on}" = on ] || logs=("$dir/pg_ctl.log")
  rm -f "$dir/replay.json"
  timed "${1:-$pgr}" replay --target "host=$dir port=$port user=postgres dbname=shop" --speed 1 --sync load \
    --format stderr --prefix "$prefix" --target-log "${logs[-1]}" --target-log-prefix "$prefix" --json "$dir/replay.json" \
    ${REPLAY_FLAGS:-} "$fc/production/production.log" >"$dir/replay.out" 2>&1
}
replayb() { replay "$PGREHEARSE_B"; }
replayc() { replay "$PGREHEARSE_C"; }
# replayq: the replay on a server that logs no statement, without
# --target-log (its round trips then are the result's queries).
replayq() {
  rm -f "$dir/replay.json"
  timed "$pgr" replay --target "host=$dir port=$port user=postgres dbname=shop" --speed 1 --sync load \
    --format stderr --prefix "$prefix" --json "$dir/replay.json" ${REPLAY_FLAGS:-} "$fc/production/production.log" >"$dir/replayq.out" 2>&1
}
# applog: the app on a server that logs every statement, as a replay's.
applog() { app; }
dry() {
  "$pgr" replay --dry-run --speed 1 --format stderr --prefix "$prefix" "$fc/production/production.log" >/dev/null 2>&1 &
  local d=$!
  app
  wait "$d"
}
# roundtrips ARM: "query us_per_call" of the client's round trips of the
# run just made: pgbench's latency less schedule lag per script (the
# scripts' order is bench/forecast's kinds), or the replay's client_queries.
roundtrips() {
  case $1 in
  app | applog)
    cat "$dir"/pgb.* | awk '$3 != "skipped" && $3 != "failed" { n[$4]++; t[$4] += $3 - ($7 == "" ? 0 : $7) }
      END { split("lookup insert update report", q); for (k in n) printf "%s %.1f\n", q[k + 1], t[k] / n[k] }' ;;
  replay | replayb | replayc | replayq)
    jq -r '(.client_queries // .queries)[] | [(.query | ascii_downcase | gsub("\\s+"; " ")), .calls, .total_ms] | @tsv' "$dir/replay.json" |
      awk -F'\t' '{ q = ""
        if ($1 ~ /from customers where email/) q = "lookup"; else if ($1 ~ /insert into orders/) q = "insert"
        else if ($1 ~ /update orders set status/) q = "update"; else if ($1 ~ /group by customer_id/) q = "report"
        if (q != "") { n[q] += $2; t[q] += $3 } }
        END { for (q in n) if (n[q] > 0) printf "%s %.1f\n", q, t[q] / n[q] * 1000 }' ;;
  esac
}
# run ARM CYCLE: one run; appends "cycle arm query calls us_per_call" lines
# to runs.txt, "cycle arm query out_us" to out.txt and "cycle arm
# voluntary involuntary statements" to cs.txt.
run() {
  local log=off
  case $1 in replay | replayb | replayc | applog) log=on ;; esac
  logging $log
  "${psql[@]}" -d shop -c "SELECT pg_stat_statements_reset()" >/dev/null
  "$1" || { echo "ctlinflate: the $1 run failed:" >&2; tail -5 "$dir/$1.out" "$dir/app.out" 2>/dev/null >&2; exit 1; }
  "${psql[@]}" -d shop -F ' ' -c "SELECT q, sum(calls), round((sum(total_exec_time + total_plan_time) / sum(calls) * 1000)::numeric, 1)
    FROM (SELECT CASE WHEN query LIKE 'SELECT id, name FROM customers WHERE email%' THEN 'lookup'
        WHEN query LIKE 'INSERT INTO orders%' THEN 'insert' WHEN query LIKE 'UPDATE orders SET status%' THEN 'update'
        WHEN query LIKE 'SELECT customer_id, count(*)%' THEN 'report' END AS q, *
      FROM pg_stat_statements) s WHERE q IS NOT NULL GROUP BY q ORDER BY q" |
    while read -r q calls us; do echo "$2 $1 $q $calls $us"; done >>"$dir/runs.txt"
  if [ "$1" != dry ]; then
    roundtrips "$1" | while read -r q rt; do
      awk -v c="$2" -v a="$1" -v q="$q" -v rt="$rt" '$1 == c && $2 == a && $3 == q { printf "%s %s %s %.1f\n", c, a, q, rt - $5 }' "$dir/runs.txt"
    done >>"$dir/out.txt"
    read -r vol inv usr sys <"$dir/time.out"
    echo "$2 $1 $vol $inv $(awk -v c="$2" -v a="$1" '$1 == c && $2 == a { n += $4 } END { print n }' "$dir/runs.txt") $usr $sys" >>"$dir/cs.txt"
  fi
  printf '%s cycle %d %-7s load %s: %s\n' "$(date -u +%T)" "$2" "$1" "$(cut -d' ' -f1 /proc/loadavg)" \
    "$(awk -v c="$2" -v a="$1" '$1 == c && $2 == a { printf "%s %s calls %s us  ", $3, $4, $5 }' "$dir/runs.txt")"
  [ "$1" = dry ] || printf '    out of the server per call: %s; context switches per statement: %s\n' \
    "$(awk -v c="$2" -v a="$1" '$1 == c && $2 == a { printf "%s %s us  ", $3, $4 }' "$dir/out.txt")" \
    "$(awk -v c="$2" -v a="$1" '$1 == c && $2 == a { printf "voluntary %.2f, involuntary %.2f; CPU %.1f us", $3 / $5, $4 / $5, ($6 + $7) / $5 * 1e6 }' "$dir/cs.txt")"
}
: >"$dir/runs.txt"
: >"$dir/out.txt"
: >"$dir/cs.txt"
for c in $(seq 1 "$cycles"); do
  for j in $(seq 0 $((${#arms[@]} - 1))); do
    run "${arms[$(((j + c - 1) % ${#arms[@]}))]}" "$c"
  done
done
# ratios FILE COL BASE: per arm (not BASE) and query, the median (range)
# over cycles of the run's figure (column COL) over BASE's of its cycle.
ratios() {
  awk -v col="$2" -v base="$3" '{ us[$1 " " $2 " " $3] = $col; qs[$3]; as[$2] }
  END {
    for (a in as) if (a != base) for (q in qs) {
      n = 0
      for (c = 1; (c " " base " " q) in us; c++) if ((c " " a " " q) in us && us[c " " base " " q] > 0) r[++n] = us[c " " a " " q] / us[c " " base " " q]
      if (n == 0) continue
      for (i = 1; i <= n; i++) for (k = i + 1; k <= n; k++) if (r[k] < r[i]) { t = r[i]; r[i] = r[k]; r[k] = t }
      med = n % 2 ? r[(n + 1) / 2] : (r[n / 2] + r[n / 2 + 1]) / 2
      printf "  %-7s / %-7s %-6s %.2fx (%.2f-%.2f) over %d cycles\n", a, base, q, med, r[1], r[n], n
    }
  }' "$1" | sort
}
# medians FILE COL: per arm and query, the median (range) of column COL.
medians() {
  sort -k2,2 -k3,3 -k"$2","$2"n "$1" | awk -v col="$2" '{ k = $2 " " $3; v[k, ++n[k]] = $col }
    END { for (k in n) { m = n[k]; med = m % 2 ? v[k, (m + 1) / 2] : (v[k, m / 2] + v[k, m / 2 + 1]) / 2
      printf "  %-14s %.1f us (%.1f-%.1f) over %d runs\n", k, med, v[k, 1], v[k, m], m } }' | sort
}
echo "server time per call (execution + planning), each run over the app run of its cycle: median (range)"
ratios "$dir/runs.txt" 5 app
echo "round trip per call outside the server's work: median (range) over runs"
medians "$dir/out.txt" 4
echo "the same, each run over the app run of its cycle"
ratios "$dir/out.txt" 4 app
for b in B C; do
  v=PGREHEARSE_$b
  if grep -q " replay${b,} " "$dir/out.txt" && grep -q ' replay ' "$dir/out.txt"; then
    echo "server time and round trip outside it, replay${b,} (${!v}) over replay (${PGREHEARSE:-built here}) of its cycle"
    ratios "$dir/runs.txt" 5 replay | grep " replay${b,} " | sed 's/^  /  server /'
    ratios "$dir/out.txt" 4 replay | grep " replay${b,} " | sed 's/^  /  outside /'
  fi
done
echo "client context switches per statement (voluntary, involuntary): median over runs"
awk '{ printf "x %s vol %.3f\nx %s inv %.3f\n", $2, $3 / $5, $2, $4 / $5 }' "$dir/cs.txt" | medians /dev/stdin 4 | sed 's/ us / /g'
echo "client CPU per statement (user + system, /usr/bin/time): median over runs"
awk '{ printf "x %s cpu %.2f\n", $2, ($6 + $7) / $5 * 1e6 }' "$dir/cs.txt" | medians /dev/stdin 4
