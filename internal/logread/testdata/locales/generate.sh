#!/usr/bin/env bash
# generate.sh writes the logs of this directory: for each language, a real
# PostgreSQL 15 (Debian's, with its message translations) logs a small
# workload with lc_messages in that language, to stderr (LANG.log) and
# csvlog (LANG.csv). The locales are compiled with localedef into a
# directory of their own (LOCPATH), so the machine's are left alone.
#
# Run as root on a machine with PostgreSQL 15 and the glibc locale sources
# (/usr/share/i18n). Times and pids differ from run to run.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=/usr/lib/postgresql/15/bin
work=$(mktemp -d)
chmod 755 "$work"
trap 'rm -rf "$work"' EXIT
port=54331
for lang in ja_JP ru_RU zh_CN ko_KR uk_UA sv_SE de_DE fr_FR es_ES it_IT; do
  loc=$work/loc
  mkdir -p "$loc"
  localedef -i "$lang" -f UTF-8 "$loc/$lang.UTF-8" 2>/dev/null || true
  chmod -R a+rX "$loc"
  data=$work/$lang
  mkdir -p "$data"
  chown postgres "$data"
  su postgres -s /bin/sh -c "$bin/initdb -D $data/db -A trust -U postgres --locale=C -E UTF8" >/dev/null
  cat >> "$data/db/postgresql.conf" <<EOF
port = $port
unix_socket_directories = '$data'
listen_addresses = ''
logging_collector = on
log_directory = '$data/log'
log_destination = 'stderr,csvlog'
log_line_prefix = '%m [%p] %q%u@%d '
log_min_duration_statement = 0
lc_messages = '$lang.UTF-8'
EOF
  su postgres -s /bin/sh -c "LOCPATH=$loc $bin/pg_ctl -D $data/db -w -l $data/pg_ctl.log start" >/dev/null
  su postgres -s /bin/sh -c "$bin/psql -X -q -h $data -p $port -U postgres postgres" >/dev/null 2>&1 <<'SQL' || true
SELECT 1;
SELECT 1/0;
SQL
  su postgres -s /bin/sh -c "LOCPATH=$loc $bin/pg_ctl -D $data/db -w stop -m fast" >/dev/null
  short=${lang%_*}
  cp "$data"/log/*.log "$here/$short.log"
  cp "$data"/log/*.csv "$here/$short.csv"
done
chmod 644 "$here"/*.log "$here"/*.csv
echo "written to $here"
