#!/usr/bin/env bash
# bench/ctlinflate.sh: the server time per call of bench/forecast's
# queries when the application runs them (pgbench at its rate, as the
# truth) against when pgrehearse replays production's log of the same
# application (as rehearse's control rounds do), on ONE throwaway server,
# in alternating runs, so that a comparison is paired on a shared machine
# (issue 58: the replay's control time of tiny queries is inflated).
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
#   dry     the app, with "pgrehearse replay --dry-run --speed 1" of the
#           same log running beside it: the replayer's own activity
#           without its connections.
# pg_stat_statements is reset before each run. Each run prints, per query,
# its calls and execution + planning time per call (us); at the end, per
# arm, the median over its runs of each run's figure over the figure of the
# app run of the same cycle.
#
# Environment: CYCLES (4), ARMS ("app replay"; add dry), RATE (723),
# REPLAY_FLAGS, PG_BIN (/usr/lib/postgresql/15/bin), PGREHEARSE (a
# pgrehearse binary; default: built from here). The server is built as
# bench/forecast builds its clusters (its settings, the same data).
set -euo pipefail
cd "$(dirname "$0")/.."
fc=${1:?usage: bench/ctlinflate.sh FORECAST_OUT}
[ -f "$fc/production/production.log" ] || { echo "ctlinflate: $fc/production/production.log: missing (run bench/forecast -out $fc first)" >&2; exit 2; }
cycles=${CYCLES:-4}
arms=(${ARMS:-app replay})
rate=${RATE:-723}
. bench/lib.sh ctlinflate

prefix='%m [%p] %q%u@%d/%a %c %e '
"${as[@]}" "$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --no-locale -N >/dev/null
cat >>"$dir/data/postgresql.conf" <<EOF
port = $port
listen_addresses = ''
unix_socket_directories = '$dir'
logging_collector = on
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
app() {
  "$bin/pgbench" -h "$dir" -p "$port" -U postgres -n -M prepared -c 8 -j 2 -T 20 -R "$rate" --random-seed=7 \
    -f "$s-0.sql@10" -f "$s-1.sql@5" -f "$s-2.sql@5" -f "$s-3.sql@1" shop >"$dir/app.out" 2>&1
}
replay() {
  local logs=("$dir"/log/*.log)
  "$pgr" replay --target "host=$dir port=$port user=postgres dbname=shop" --speed 1 --sync load \
    --format stderr --prefix "$prefix" --target-log "${logs[-1]}" --target-log-prefix "$prefix" \
    ${REPLAY_FLAGS:-} "$fc/production/production.log" >"$dir/replay.out" 2>&1
}
dry() {
  "$pgr" replay --dry-run --speed 1 --format stderr --prefix "$prefix" "$fc/production/production.log" >/dev/null 2>&1 &
  local d=$!
  app
  wait "$d"
}
# run ARM CYCLE: one run; appends "cycle arm query calls us_per_call" lines.
run() {
  local log=off
  [ "$1" = replay ] && log=on
  logging $log
  "${psql[@]}" -d shop -c "SELECT pg_stat_statements_reset()" >/dev/null
  "$1" || { echo "ctlinflate: the $1 run failed:" >&2; tail -5 "$dir/$1.out" "$dir/app.out" 2>/dev/null >&2; exit 1; }
  "${psql[@]}" -d shop -F ' ' -c "SELECT q, sum(calls), round((sum(total_exec_time + total_plan_time) / sum(calls) * 1000)::numeric, 1)
    FROM (SELECT CASE WHEN query LIKE 'SELECT id, name FROM customers WHERE email%' THEN 'lookup'
        WHEN query LIKE 'INSERT INTO orders%' THEN 'insert' WHEN query LIKE 'UPDATE orders SET status%' THEN 'update'
        WHEN query LIKE 'SELECT customer_id, count(*)%' THEN 'report' END AS q, *
      FROM pg_stat_statements) s WHERE q IS NOT NULL GROUP BY q ORDER BY q" |
    while read -r q calls us; do echo "$2 $1 $q $calls $us"; done >>"$dir/runs.txt"
  printf '%s cycle %d %-6s load %s: %s\n' "$(date -u +%T)" "$2" "$1" "$(cut -d' ' -f1 /proc/loadavg)" \
    "$(awk -v c="$2" -v a="$1" '$1 == c && $2 == a { printf "%s %s calls %s us  ", $3, $4, $5 }' "$dir/runs.txt")"
}
: >"$dir/runs.txt"
for c in $(seq 1 "$cycles"); do
  for j in $(seq 0 $((${#arms[@]} - 1))); do
    run "${arms[$(((j + c - 1) % ${#arms[@]}))]}" "$c"
  done
done
echo "per call (execution + planning), each run over the app run of its cycle: median (range) over $cycles cycles"
awk '{ us[$1 " " $2 " " $3] = $5; qs[$3]; as[$2] }
  END {
    for (a in as) if (a != "app") for (q in qs) {
      n = 0
      for (c = 1; (c " app " q) in us; c++) if ((c " " a " " q) in us) r[++n] = us[c " " a " " q] / us[c " app " q]
      if (n == 0) continue
      for (i = 1; i <= n; i++) for (k = i + 1; k <= n; k++) if (r[k] < r[i]) { t = r[i]; r[i] = r[k]; r[k] = t }
      med = n % 2 ? r[(n + 1) / 2] : (r[n / 2] + r[n / 2 + 1]) / 2
      printf "  %-6s / app  %-6s %.2fx (%.2f-%.2f)\n", a, q, med, r[1], r[n]
    }
  }' "$dir/runs.txt" | sort
