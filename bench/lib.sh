# bench/lib.sh: the throwaway-server preamble of bench/memcap.sh and
# bench/ctlinflate.sh; sourced from the repository's root, not run:
#
#   . bench/lib.sh NAME
#
# It sets bin (PG_BIN, default /usr/lib/postgresql/15/bin); dir, a new
# directory /tmp/pgrehearse-NAME-XXXXXX the postgres user can read, whose
# server ($dir/data) is stopped and which is removed when the script
# exits; as, the prefix that runs the server's programs as postgres when
# the script runs as root (empty otherwise); pgr, the pgrehearse binary
# (PGREHEARSE, or one built from here into $dir); and port, a random one.
bin=${PG_BIN:-/usr/lib/postgresql/15/bin}
dir=$(mktemp -d -t "pgrehearse-$1-XXXXXX")
chmod 755 "$dir"
as=()
if [ "$(id -u)" = 0 ]; then
  as=(runuser -u postgres --)
  chown postgres "$dir"
fi
stop() {
  "${as[@]}" "$bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap stop EXIT
pgr=${PGREHEARSE:-$dir/pgrehearse}
[ -n "${PGREHEARSE:-}" ] || go build -o "$pgr" ./cmd/pgrehearse
port=$((20000 + RANDOM % 20000))
