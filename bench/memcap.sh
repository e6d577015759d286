#!/usr/bin/env bash
# bench/memcap.sh: the replay's peak memory (RSS) when its target cannot
# keep up (issue 57 item 9). It writes a 10-minute log shaped like a busy
# server's (bench/genlog -kind realistic -span 10m -gap 650us
# -per-session 800: about 1,000 sessions, 300 at a time, 346,000
# statements, 5,800 a second at --speed 10), starts a throwaway server
# with the tables the log names, and replays the log onto it at --speed 10
# with /usr/bin/time -v; on a 2-core machine the target (and the replayer
# beside it) cannot keep up. It prints the replay's summary, its peak
# RSS, and its RSS every RSS_EVERY seconds (5) from its start.
#
#   bench/memcap.sh [REPLAY FLAGS...]     (e.g. --sync off; default: the
#   replay's defaults at --speed 10)
#
# Environment: PG_BIN (default /usr/lib/postgresql/15/bin), SPAN (10m),
# GAP (650us: the mean time between two lines of the log), PER_SESSION
# (800: a session runs 10 to 10+PER_SESSION statements), WRITE_MS (0:
# when set, every write sleeps that long in a statement trigger),
# PGREHEARSE (a pgrehearse binary; default: built from here).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh memcap
go build -o "$dir/genlog" ./bench/genlog
"$dir/genlog" -kind realistic -span "${SPAN:-10m}" -gap "${GAP:-650us}" -per-session "${PER_SESSION:-800}" >"$dir/workload.log"

"${as[@]}" "$bin/initdb" -D "$dir/data" -U postgres -A trust >/dev/null
cat >>"$dir/data/postgresql.conf" <<CONF
port = $port
listen_addresses = '127.0.0.1'
unix_socket_directories = '$dir'
max_connections = 1500
shared_buffers = 16MB
fsync = off
synchronous_commit = off
lc_messages = 'C'
CONF
"${as[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w start >/dev/null
psql=("$bin/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U postgres)
"${psql[@]}" -d postgres -c "CREATE ROLE shop LOGIN; CREATE ROLE report LOGIN; CREATE ROLE billing LOGIN"
for db in shop analytics billing; do
  "${psql[@]}" -d postgres -c "CREATE DATABASE $db"
  "${psql[@]}" -d "$db" <<SQL
CREATE TABLE items (id int PRIMARY KEY, name text, price numeric, stock int, category_id int);
INSERT INTO items SELECT i, 'item ' || i, i % 100, 1000000, i % 40 FROM generate_series(0, 49999) i;
CREATE TABLE customers (id int PRIMARY KEY, email text, name text);
CREATE TABLE orders (id serial PRIMARY KEY, customer_id int, total numeric, created_at timestamptz DEFAULT now());
CREATE TABLE order_lines (order_id int, item_id int, qty int, price numeric);
CREATE TABLE carts (session_key text, updated_at timestamptz);
CREATE TABLE invoices (id serial PRIMARY KEY, amount numeric, currency text, status text, due_date date);
CREATE TABLE events (id bigserial PRIMARY KEY, kind text, payload jsonb, created_at timestamptz);
CREATE TABLE audit_log (actor text, action text, details text);
GRANT ALL ON ALL TABLES IN SCHEMA public TO shop, report, billing;
GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO shop, report, billing;
SQL
  if [ "${WRITE_MS:-0}" != 0 ]; then
    "${psql[@]}" -d "$db" <<SQL
CREATE FUNCTION slow() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN PERFORM pg_sleep($WRITE_MS / 1000.0); RETURN NULL; END \$\$;
CREATE TRIGGER slow BEFORE INSERT OR UPDATE ON items FOR EACH STATEMENT EXECUTE FUNCTION slow();
CREATE TRIGGER slow BEFORE INSERT OR UPDATE ON carts FOR EACH STATEMENT EXECUTE FUNCTION slow();
CREATE TRIGGER slow BEFORE INSERT OR UPDATE ON events FOR EACH STATEMENT EXECUTE FUNCTION slow();
CREATE TRIGGER slow BEFORE INSERT OR UPDATE ON audit_log FOR EACH STATEMENT EXECUTE FUNCTION slow();
SQL
  fi
done
echo "log: $(wc -c <"$dir/workload.log") bytes, $(grep -c 'connection authorized' "$dir/workload.log") sessions; load: $(uptime)"
set +e
/usr/bin/time -v "$pgr" replay --target "host=127.0.0.1 port=$port user=postgres dbname=postgres" \
  --speed 10 --observe=false --findings=false "$@" "$dir/workload.log" 2>"$dir/time.txt" &
timepid=$!
# RSS over time: the replay's VmRSS every ${RSS_EVERY:-5} s, from its start.
(
  pid=
  while [ -z "$pid" ] && kill -0 "$timepid" 2>/dev/null; do
    pid=$(pgrep -P "$timepid" | head -1)
    sleep 0.1
  done
  t=0
  while [ -n "$pid" ] && [ -r "/proc/$pid/status" ]; do
    rss=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null)
    [ -n "$rss" ] && echo "$t $rss"
    sleep "${RSS_EVERY:-5}"
    t=$((t + ${RSS_EVERY:-5}))
  done
) >"$dir/rss.txt" &
wait "$timepid"
rc=$?
wait
set -e
grep -v '^\s*\(Command being\|Average\|Major\|Minor\|Voluntary\|Involuntary\|Swaps\|File system\|Socket\|Signals\|Page size\|Exit status\|Percent\)' "$dir/time.txt"
echo "RSS over time (s: MiB): $(awk '{printf "%s%d: %.0f", (NR > 1 ? ", " : ""), $1, $2 / 1024}' "$dir/rss.txt")"
echo "exit code $rc; load: $(uptime)"
