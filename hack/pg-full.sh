#!/usr/bin/env bash
# pg-full.sh MAJOR [PREFIX] builds the full PostgreSQL installation of
# MAJOR pinned in hack/pg-full.txt (server, client programs, pg_upgrade,
# contrib) from the upstream source tarball in Debian's pool, checked
# against its pinned sha256, into PREFIX (default .cache/pg-full/MAJOR).
#
# Why from source: the server builds of make pg-versions (npm) hold
# initdb, pg_ctl and postgres alone, and Debian bookworm packages only
# PostgreSQL 15; bench/forecast's pg-upgrade change needs the new major's
# pg_upgrade with the pg_dump, psql... beside it. Building takes about
# 15 minutes on two cores. It is idempotent: a PREFIX whose stamp names the
# pinned version and whose pg_upgrade runs is left alone.
#
# Needs a C compiler, make, bison and flex (PostgreSQL 17 and later
# tarballs carry no generated parsers), zlib; installed as root on Debian
# when missing. Built without ICU and readline, which nothing here needs.
set -euo pipefail
cd "$(dirname "$0")/.."

major=${1:?usage: pg-full.sh MAJOR [PREFIX]}
read -r version sum < <(awk -v m="$major" '$1 == m { print $2, $3 }' hack/pg-full.txt)
if [ -z "${version:-}" ]; then
	echo "pg-full: major $major is not pinned in hack/pg-full.txt" >&2
	exit 1
fi
prefix=${2:-.cache/pg-full/$major}
mkdir -p "$prefix"
prefix=$(cd "$prefix" && pwd)

if [ "$(cat "$prefix/.pg-full-version" 2>/dev/null)" = "$version" ] &&
	"$prefix/bin/pg_upgrade" --version >/dev/null 2>&1; then
	echo "pg-full: $prefix holds PostgreSQL $version"
	exit 0
fi

missing=()
for tool in cc make bison flex curl bzip2; do
	command -v "$tool" >/dev/null || missing+=("$tool")
done
[ -e /usr/include/zlib.h ] || missing+=(zlib1g-dev)
if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		pkgs=()
		for m in "${missing[@]}"; do
			case "$m" in cc) pkgs+=(gcc) ;; *) pkgs+=("$m") ;; esac
		done
		export DEBIAN_FRONTEND=noninteractive
		apt-get install -y "${pkgs[@]}" || { apt-get update && apt-get install -y "${pkgs[@]}"; }
	else
		echo "pg-full: missing ${missing[*]}: sudo apt-get install gcc make bison flex curl bzip2 zlib1g-dev" >&2
		exit 1
	fi
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
file=postgresql-${major}_${version}.orig.tar.bz2
url=http://deb.debian.org/debian/pool/main/p/postgresql-$major/$file
echo "pg-full: fetching $url"
curl -fsS --retry 3 -o "$work/$file" "$url"
echo "$sum  $work/$file" | sha256sum -c --quiet
tar -C "$work" -xjf "$work/$file"
src=$work/postgresql-$version
echo "pg-full: building PostgreSQL $version into $prefix (about 15 minutes on two cores)"
jobs=$(nproc)
(
	cd "$src"
	./configure --prefix="$prefix" --without-icu --without-readline >"$work/configure.log" 2>&1 ||
		{ tail -20 "$work/configure.log" >&2; exit 1; }
	make -s -j"$jobs" >"$work/make.log" 2>&1 || { tail -40 "$work/make.log" >&2; exit 1; }
	make -s install >>"$work/make.log" 2>&1
	make -s -C contrib -j"$jobs" >>"$work/make.log" 2>&1 || { tail -40 "$work/make.log" >&2; exit 1; }
	make -s -C contrib install >>"$work/make.log" 2>&1
)
# The servers and pg_upgrade run as the postgres user when this runs as
# root (pgcluster), which must reach and execute the installation: each
# directory on the way gets o+x (search, not listing) where it lacks it,
# as hack/pg-versions.sh does.
chmod -R o+rX "$prefix"
if [ "$(id -u)" = 0 ]; then
	d=
	IFS=/ read -ra parts <<<"${prefix#/}"
	for p in "${parts[@]}"; do
		d=$d/$p
		perm=$(stat -c %A "$d")
		[ "${perm:9:1}" = x ] || [ "${perm:9:1}" = t ] || { chmod o+x "$d"; echo "pg-full: chmod o+x $d: the servers run as the postgres user"; }
	done
fi
echo "$version" >"$prefix/.pg-full-version"
"$prefix/bin/pg_upgrade" --version
if ldd "$prefix/bin/postgres" "$prefix/bin/pg_upgrade" | grep 'not found' >&2; then
	exit 1
fi
