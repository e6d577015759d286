#!/usr/bin/env bash
# generate.sh writes the syslog fixtures of this directory: a real
# PostgreSQL 15 logs the same workload to csvlog and to syslog, and
# rsyslog (Debian's rsyslog 8.2302 package) writes what it receives in
# three formats at once. The tests read each syslog file and check that it
# gives the events of the csvlog file of the same run.
#
#   run 1 (log_destination = 'csvlog,syslog', log_line_prefix =
#   'user=%u,db=%d,app=%a,client=%h '):
#     bsd.log       RSYSLOG_TraditionalFileFormat ("Nov 22 08:11:02 host postgres[1]: [5-1] ...")
#     iso.log       RSYSLOG_FileFormat ("2026-11-22T08:11:02.123456+00:00 host postgres[1]: ...")
#     rfc5424.log   RSYSLOG_SyslogProtocol23Format ("<134>1 2026-... host postgres 1 - - [5-1] ...")
#     run1.csv      the csvlog of the same run
#   run 2 (log_destination = 'stderr,csvlog', log_line_prefix =
#   '%m [%p] %q%u@%d/%a '): the stderr lines, each sent to rsyslog by
#   logger(1) as journald forwards a service's stderr, one message a line:
#     journald.log  RSYSLOG_TraditionalFileFormat
#     run2.csv      the csvlog of the same run
#
# Run as root on a machine with PostgreSQL 15 and rsyslog installed and
# no syslog daemon of its own (rsyslog is started here on /dev/log, and
# stopped at the end). Times, pids and host names differ from run to run.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=/usr/lib/postgresql/15/bin
work=$(mktemp -d)
chown postgres "$work"
trap 'kill $(cat "$work/rsyslog.pid" 2>/dev/null) 2>/dev/null || true; su postgres -s /bin/sh -c "$bin/pg_ctl -D $work/data stop -m fast" >/dev/null 2>&1 || true; rm -f /dev/log; rm -rf "$work"' EXIT

cat > "$work/rsyslog.conf" <<EOF
module(load="imuxsock" SysSock.Use="on")
\$WorkDirectory $work
if \$programname == 'postgres' then {
  action(type="omfile" file="$work/bsd.log" template="RSYSLOG_TraditionalFileFormat")
  action(type="omfile" file="$work/iso.log" template="RSYSLOG_FileFormat")
  action(type="omfile" file="$work/rfc5424.log" template="RSYSLOG_SyslogProtocol23Format")
}
EOF
rsyslogd -f "$work/rsyslog.conf" -i "$work/rsyslog.pid"
for _ in $(seq 50); do [ -S /dev/log ] && break; sleep 0.1; done

pg() { su postgres -s /bin/sh -c "$*"; }
port=54329
workload() {
  local psql="$bin/psql -X -q -h $work -p $port"
  pg "$bin/createuser -h $work -p $port alice"
  pg "$bin/createdb -h $work -p $port -O alice shop"
  # Simple statements, a multi-line one, one longer than syslog's 900
  # bytes, and failures.
  long="SELECT '$(head -c 1200 /dev/zero | tr '\0' 'x')' AS long_value, 1 AS a, 2 AS b"
  pg "PGAPPNAME=web $psql -U alice shop" <<SQL || true
CREATE TABLE t (id int PRIMARY KEY, v text);
INSERT INTO t VALUES (1, 'one');
SELECT id,
       v
  FROM t
 WHERE id = 1;
$long;
SELECT 1/0;
INSERT INTO t VALUES (1, 'dup');
SELECT * FROM missing;
SQL
  # The extended protocol, with parameters.
  cat > "$work/bench.sql" <<'SQL'
\set id random(1, 1000)
SELECT $$it's "quoted"$$ || :id AS x, :id + 1 AS y;
SQL
  chown postgres "$work/bench.sql"
  pg "PGAPPNAME=bench $bin/pgbench -n -h $work -p $port -U alice -M prepared -t 5 -c 2 -f $work/bench.sql shop" >/dev/null
  pg "PGAPPNAME=bench $bin/pgbench -n -h $work -p $port -U alice -M extended -t 3 -f $work/bench.sql shop" >/dev/null
}

start() { # start DESTINATION PREFIX
  pg "$bin/initdb -D $work/data -A trust -U postgres" >/dev/null
  cat >> "$work/data/postgresql.conf" <<EOF
port = $port
unix_socket_directories = '$work'
listen_addresses = ''
logging_collector = on
log_directory = '$work/pglog'
log_destination = '$1'
log_line_prefix = '$2'
log_min_duration_statement = 0
log_connections = on
log_disconnections = on
syslog_ident = 'postgres'
EOF
  pg "$bin/pg_ctl -D $work/data -w -l $work/pg_ctl.log start" >/dev/null
}
stop() {
  pg "$bin/pg_ctl -D $work/data -w stop -m fast" >/dev/null
  rm -rf "$work/data"
}

# Run 1: csvlog and syslog.
start 'csvlog,syslog' 'user=%u,db=%d,app=%a,client=%h '
workload
stop
sleep 1 # rsyslog writes what it received
cp "$work/pglog/"*.csv "$here/run1.csv"
for f in bsd iso rfc5424; do cp "$work/$f.log" "$here/$f.log"; done
rm -rf "$work/pglog"

# Run 2: stderr and csvlog; the stderr lines go to syslog through logger,
# as journald forwards a service's output.
: > "$work/bsd.log"
start 'stderr,csvlog' '%m [%p] %q%u@%d/%a '
workload
stop
pid=$(head -1 "$work"/pglog/*.log | sed -n 's/.*\[\([0-9]*\)\].*/\1/p' | head -1)
logger --size 65536 --id="${pid:-1}" -t postgres -u /dev/log < "$work"/pglog/*.log
sleep 1
cp "$work/pglog/"*.csv "$here/run2.csv"
cp "$work/bsd.log" "$here/journald.log"
chmod 644 "$here"/*.log "$here"/*.csv
echo "written to $here"
