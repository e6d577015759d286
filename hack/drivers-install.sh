#!/usr/bin/env bash
# drivers-install.sh installs the real client drivers that TestDrivers
# (internal/cli) runs through the capture proxy, from their registries
# with their ordinary clients, into one directory (argument 1, default
# .cache/drivers), which `make test-drivers` hands the test as
# PGREHEARSE_DRIVERS:
#
#   node/node_modules  node-postgres and pg-cursor (npm)
#   venv               asyncpg and psycopg 3 with its bundled libpq,
#                      psycopg[binary] (pip, in a virtual environment)
#   java/*.jar         pgjdbc (Maven)
#
# The versions are pinned below. It is idempotent: a directory whose
# stamp file names these versions is left alone, so a second run takes
# well under a second. Needs npm, python3 with venv, and mvn.
set -euo pipefail
cd "$(dirname "$0")/.."

pins="pg@8.23.1 pg-cursor@2.22.0 asyncpg==0.32.0 psycopg[binary]==3.3.9 org.postgresql:postgresql:42.7.4"
dir=${1:-.cache/drivers}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
if [ "$(cat "$dir/.versions" 2>/dev/null)" = "$pins" ]; then
	echo "drivers-install: $dir: $pins (cached)"
	exit 0
fi
rm -f "$dir/.versions"
for tool in npm python3 mvn java node; do
	command -v "$tool" >/dev/null || { echo "drivers-install: $tool not found: the drivers' tests need it" >&2; exit 1; }
done

npm_pkgs=() py_pkgs=() jars=()
for p in $pins; do
	case "$p" in
	*==*) py_pkgs+=("$p") ;;
	*:*:*) jars+=("$p") ;;
	*@*) npm_pkgs+=("$p") ;;
	esac
done

echo "drivers-install: npm ${npm_pkgs[*]}"
mkdir -p "$dir/node"
npm install --silent --no-save --prefix "$dir/node" "${npm_pkgs[@]}"

echo "drivers-install: pip ${py_pkgs[*]}"
[ -x "$dir/venv/bin/python" ] || python3 -m venv "$dir/venv"
"$dir/venv/bin/pip" install -q "${py_pkgs[@]}"

echo "drivers-install: mvn ${jars[*]}"
rm -rf "$dir/java"
for a in "${jars[@]}"; do
	# mvn -q still prints colour codes; its output is shown on failure.
	out=$(mvn -B -q dependency:copy -Dartifact="$a" -DoutputDirectory="$dir/java" 2>&1) || { echo "$out" >&2; exit 1; }
done

echo "$pins" >"$dir/.versions"
echo "drivers-install: $dir: $pins"
