#!/usr/bin/env bash
# generate.sh writes the logs of this directory: a real PostgreSQL 15
# (Debian's) runs one session whose statement fails in a parallel worker
# (force_parallel_mode = on, parallel_leader_participation = off, a
# division by zero in a parallel scan), so
# that the worker logs the error first, as a process of its own, and then
# the leader logs it again with "CONTEXT:  parallel worker". Written with
# two log_line_prefix settings, each to stderr, csvlog and jsonlog:
#
#   debian.log  '%m [%p] %q%u@%d '   Debian's default: the worker's line
#                                    stops at %q (it has no client)
#   b.log       '%m [%p] %b %P %q%u@%d/%a %c '
#                                    the backend type ("parallel worker")
#                                    and the leader's pid before %q
#   b.csv, b.json                    csvlog and jsonlog of the second run
#                                    (backend_type, leader_pid)
#
# Run as root on a machine with PostgreSQL 15. Times and pids differ from
# run to run.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=/usr/lib/postgresql/15/bin
work=$(mktemp -d)
chmod 755 "$work"
trap 'rm -rf "$work"' EXIT
port=54339
for run in debian b; do
  case $run in
    debian) prefix='%m [%p] %q%u@%d ' ;;
    b) prefix='%m [%p] %b %P %q%u@%d/%a %c ' ;;
  esac
  data=$work/$run
  mkdir -p "$data"
  chown postgres "$data"
  su postgres -s /bin/sh -c "$bin/initdb -D $data/db -A trust -U postgres --locale=C -E UTF8" >/dev/null
  cat >> "$data/db/postgresql.conf" <<EOF
port = $port
unix_socket_directories = '$data'
listen_addresses = ''
logging_collector = on
log_directory = '$data/log'
log_destination = 'stderr,csvlog,jsonlog'
log_line_prefix = '$prefix'
log_min_duration_statement = 0
log_connections = on
log_disconnections = on
EOF
  su postgres -s /bin/sh -c "$bin/pg_ctl -D $data/db -w -l $data/pg_ctl.log start" >/dev/null
  su postgres -s /bin/sh -c "$bin/psql -X -q -h $data -p $port -U postgres postgres" >/dev/null 2>&1 <<'SQL' || true
CREATE TABLE t AS SELECT g AS a FROM generate_series(1, 1000) g;
ANALYZE t;
SET force_parallel_mode = on;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET parallel_leader_participation = off;
SELECT count(*) FROM t WHERE 1/(a-500) > 0;
SELECT 1;
SQL
  su postgres -s /bin/sh -c "$bin/pg_ctl -D $data/db -w stop -m fast" >/dev/null
  cp "$data"/log/*.log "$here/$run.log"
  if [ $run = b ]; then
    cp "$data"/log/*.csv "$here/$run.csv"
    cp "$data"/log/*.json "$here/$run.json"
  fi
done
chmod 644 "$here"/*.log "$here"/*.csv "$here"/*.json
echo "written to $here"
