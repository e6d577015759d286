#!/usr/bin/env bash
# drivers.sh is a manual check, not a test: real drivers, installed from
# their registries, run the protocol forms a capture's replay must send as
# they were sent (a portal read in batches, a cancel, the fast-path large
# object calls) through `pgrehearse capture`, and the capture is replayed
# onto a second server set up as the first was. It prints
# pg_stat_statements' calls and rows per query on both sides and the
# replay's answer comparison, and fails when they differ.
#
#   node-postgres + pg-cursor: a cursor read 100 rows at a time with Flush
#   asyncpg: a cursor with prefetch 100 in a transaction, a timeout cancel
#   pgjdbc: a fetch size of 100, a large object, a query timeout cancel
#
# Needs PostgreSQL's binaries (PG_BIN, default /usr/lib/postgresql/15/bin)
# with pg_stat_statements, node and npm, python3 with venv, java and mvn.
# Everything goes under WORK (default /tmp/pgrehearse-drivers).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
bin=${PG_BIN:-/usr/lib/postgresql/15/bin}
work=${WORK:-/tmp/pgrehearse-drivers}
src_port=${SRC_PORT:-55431} dst_port=${DST_PORT:-55432}
export PROXY_PORT=${PROXY_PORT:-55440}
runas=()
if [ "$(id -u)" = 0 ]; then runas=(runuser -u postgres --); fi

mkdir -p "$work"
go build -o "$work/pgrehearse" ./cmd/pgrehearse
cd "$work"
[ -d node_modules/pg-cursor ] || { npm init -y >/dev/null; npm install pg pg-cursor >/dev/null; }
[ -x venv/bin/python ] && venv/bin/python -c 'import asyncpg' 2>/dev/null || { python3 -m venv venv; venv/bin/pip install -q asyncpg; }
mvn -B -q dependency:get -Dartifact=org.postgresql:postgresql:42.7.4 >/dev/null
jar=$(ls ~/.m2/repository/org/postgresql/postgresql/42.7.4/postgresql-42.7.4.jar)

psql() { "$bin/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -U postgres "$@"; }
stop() {
	for n in src dst; do
		[ -f "$work/pg-$n/data/postmaster.pid" ] && "${runas[@]}" "$bin/pg_ctl" -D "$work/pg-$n/data" -m fast stop >/dev/null || true
	done
	[ -f "$work/capture.pid" ] && kill "$(cat "$work/capture.pid")" 2>/dev/null || true
}
trap stop EXIT
for n in src dst; do
	port=$([ $n = src ] && echo "$src_port" || echo "$dst_port")
	rm -rf "pg-$n"; mkdir -p "pg-$n"; chown "$(id -un postgres 2>/dev/null || id -un)" "pg-$n" 2>/dev/null || true
	"${runas[@]}" "$bin/initdb" -D "pg-$n/data" -U postgres -A trust >/dev/null
	"${runas[@]}" "$bin/pg_ctl" -D "pg-$n/data" -l "pg-$n/log" -w \
		-o "-p $port -k $work/pg-$n -c shared_preload_libraries=pg_stat_statements" start >/dev/null
	psql -p "$port" -c "CREATE EXTENSION pg_stat_statements; CREATE TABLE big AS SELECT g AS id, 'v' || g AS v FROM generate_series(1, 2000) g; SELECT pg_stat_statements_reset()" >/dev/null
done

rm -rf capture capture.log
./pgrehearse capture --listen "127.0.0.1:$PROXY_PORT" --upstream "host=127.0.0.1 port=$src_port user=postgres dbname=postgres sslmode=disable" --out capture >capture.log 2>&1 &
echo $! >capture.pid
until grep -q listening capture.log; do sleep 0.1; done
NODE_PATH="$work/node_modules" node "$repo/hack/drivers/cursor.js"
venv/bin/python "$repo/hack/drivers/asyncpg_forms.py"
java -cp "$jar" "$repo/hack/drivers/Jdbc.java"
kill -INT "$(cat capture.pid)"
while kill -0 "$(cat capture.pid)" 2>/dev/null; do sleep 0.1; done
rm capture.pid

./pgrehearse replay --target "host=127.0.0.1 port=$dst_port user=postgres dbname=postgres sslmode=disable" \
	--speed 0 --findings=false --json replay.json capture >replay.txt 2>&1 || true
grep -E 'statements:|errors:|SQLSTATE|answers:|differ' replay.txt
calls="SELECT calls || ' ' || rows || ' ' || query FROM pg_stat_statements WHERE query !~ 'pgrehearse|pg_stat_statements_reset' AND query <> 'SELECT \$1' ORDER BY query"
psql -p "$src_port" -At -c "$calls" >source.txt
psql -p "$dst_port" -At -c "$calls" >target.txt
echo "pg_stat_statements (calls rows query), source | target:"
paste -d'|' source.txt target.txt
diff source.txt target.txt >/dev/null || { echo "calls or rows differ between source and target"; exit 1; }
python3 -c 'import json, sys; o = json.load(open("replay.json"))["outcomes"]; sys.exit(1 if o.get("answer_differs", 0) or not o.get("answered") else 0)' ||
	{ echo "answers differ"; exit 1; }
lo=$(psql -p "$dst_port" -At -c "SELECT string_agg(convert_from(lo_get(oid), 'UTF8'), ',') FROM pg_largeobject_metadata")
[ "$lo" = "jdbc large object" ] || { echo "large object on the target: '$lo'"; exit 1; }
echo "ok: equal calls and rows, no answer differs, the large object is on the target"
