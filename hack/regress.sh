#!/usr/bin/env bash
# regress.sh replays PostgreSQL's own regression suite (issue 39's
# acceptance): pg_regress runs the parallel schedule against a throwaway
# PostgreSQL 15 server that logs every statement; the log is analyzed,
# then replayed at --speed 0 and at --speed 1, each onto a fresh server of
# its own, and the figures that matter are printed: statements that
# failed only on the target, how many of them are named as server-assigned
# ids baked into later texts, the rest, and whether each run is complete.
#
# The suite's sql/, expected/, data/ and schedule are not installed by
# Debian's postgresql-15 package: they come from its source package, which
# `apt-get source` brings from Debian's archive (the deb-src lines and the
# package lists are kept in a private directory, so the machine's own apt
# lists are not touched), into $REGRESS_CACHE (.cache/regress). The regress
# module (regress.so) is built there from the same source, which needs
# postgresql-server-dev-15 (installed as root when missing).
# REGRESS_SRC=DIR uses a src/test/regress directory of your own instead.
#
# The suite runs a second time through `pgrehearse capture` (issue 46
# item 5), onto a server of its own that logs nothing, and that capture
# is analyzed and replayed at --speed 0 onto a fresh server too: the
# table at the end has a row per replay, from the log and from the
# capture, with each one's real exit code and completeness, and checks
# the capture's errors by SQLSTATE against its failed count plus the
# errors outside any statement (a Parse with no Execute: psql's \gdesc).
# REGRESS_PROXY=0 leaves the capture out.
#
# Everything else lives in a temporary directory, removed at the end
# unless REGRESS_KEEP=1; REGRESS_SPEEDS (default "0 1") chooses the log's
# runs, PGREHEARSE_BIN a pgrehearse of your own (the checkout's is built).
# Not part of make test: it takes about twenty minutes on two cores.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
major=$("$PG_BIN/postgres" --version | sed -E 's/.* ([0-9]+)\..*/\1/')
cache=${REGRESS_CACHE:-$root/.cache/regress}
speeds=${REGRESS_SPEEDS:-0 1}
mkdir -p "$cache"

# --- the suite's files --------------------------------------------------
src=${REGRESS_SRC:-}
if [ -z "$src" ]; then
	src=$(ls -d "$cache"/postgresql-"$major".*/src/test/regress 2>/dev/null | tail -1 || true)
fi
if [ -z "$src" ] || [ ! -f "$src/parallel_schedule" ]; then
	echo "regress: fetching the source of postgresql-$major with apt-get source" >&2
	apt=$cache/apt
	mkdir -p "$apt/lists/partial" "$apt/archives/partial"
	cat >"$apt/sources.list" <<-EOF
		deb-src http://deb.debian.org/debian bookworm main
		deb-src http://deb.debian.org/debian bookworm-updates main
		deb-src http://deb.debian.org/debian-security bookworm-security main
	EOF
	aptopts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
		-o "Dir::State::Lists=$apt/lists" -o "Dir::Cache::Archives=$apt/archives"
		-o "Dir::Cache::pkgcache=$apt/pkgcache.bin" -o "Dir::Cache::srcpkgcache=$apt/srcpkgcache.bin"
		-o APT::Sandbox::User=root)
	apt-get "${aptopts[@]}" update >&2
	# The installed server's version first, then the archive's others,
	# newest first: the security archive lists versions whose files it
	# no longer holds.
	want=$(dpkg-query -W -f '${Version}' "postgresql-$major" 2>/dev/null || true)
	got=
	for v in $want $(apt-cache "${aptopts[@]}" showsrc "postgresql-$major" | awk '/^Version:/ {print $2}' | sort -rV); do
		if (cd "$cache" && apt-get "${aptopts[@]}" source --download-only "postgresql-$major=$v" >&2); then
			got=$v
			break
		fi
	done
	[ -n "$got" ] || { echo "regress: no source of postgresql-$major could be fetched" >&2; exit 1; }
	echo "regress: the suite of postgresql-$major $got (the server is ${want:-not a Debian package})" >&2
	tarball=$(ls "$cache"/postgresql-"$major"_"${got%%-*}".orig.tar.* | tail -1)
	tar -xf "$tarball" -C "$cache" --wildcards '*/src/test/regress/*'
	src=$(ls -d "$cache"/postgresql-"$major".*/src/test/regress | tail -1)
fi
src=$(cd "$src" && pwd)
echo "regress: suite from $src" >&2

# --- the regress module (C functions the suite calls) --------------------
lib=$cache/lib-$major
if [ ! -f "$lib/regress.so" ] || [ "$src/regress.c" -nt "$lib/regress.so" ]; then
	inc=$(pg_config --includedir-server 2>/dev/null || true)
	if [ ! -f "$inc/postgres.h" ] && [ "$(id -u)" = 0 ]; then
		# The headers of the installed server's own version: an unpinned
		# install would upgrade the server with them.
		v=$(dpkg-query -W -f '${Version}' "postgresql-$major")
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "postgresql-server-dev-$major=$v" >&2
		inc=$(pg_config --includedir-server)
	fi
	[ -f "$inc/postgres.h" ] || { echo "regress: needs postgresql-server-dev-$major (PostgreSQL's server headers)" >&2; exit 1; }
	mkdir -p "$lib"
	gcc -O1 -fPIC -shared -I"$inc" "$src/regress.c" -o "$lib/regress.so"
fi
# autoinc and refint (contrib/spi) are installed with the server.
pkglib=$(cd "$PG_BIN/../lib" && pwd)
for m in autoinc refint; do ln -sf "$pkglib/$m.so" "$lib/$m.so"; done

# --- throwaway servers ----------------------------------------------------
work=$(mktemp -d /tmp/pgrehearse-regress.XXXXXX)
runas=()
if [ "$(id -u)" = 0 ]; then
	id postgres >/dev/null 2>&1 || useradd --system --user-group --no-create-home --shell /usr/sbin/nologin postgres
	chown postgres: "$work"
	chmod 755 "$work" "$cache" "$lib"
	runas=(runuser -u postgres --)
fi
servers=()
cleanup() {
	for d in "${servers[@]}"; do "${runas[@]}" "$PG_BIN/pg_ctl" -D "$d" -m immediate stop >/dev/null 2>&1 || true; done
	if [ "${REGRESS_KEEP:-}" = 1 ]; then echo "regress: kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT

freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start NAME: a fresh cluster logging every statement as the README asks;
# prints its port.
start() {
	local d=$work/$1 port
	port=$(freeport)
	"${runas[@]}" "$PG_BIN/initdb" -D "$d" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 >"$work/$1.initdb" 2>&1
	cat >>"$d/postgresql.conf" <<-EOF
		port = $port
		listen_addresses = '127.0.0.1'
		unix_socket_directories = '$work'
		max_connections = 200
		max_prepared_transactions = 10
		fsync = off
		log_min_duration_statement = 0
		log_connections = on
		log_disconnections = on
		lc_messages = 'C'
		log_line_prefix = '%m [%p] %q%u@%d/%a %c %e '
		logging_collector = off
	EOF
	"${runas[@]}" "$PG_BIN/pg_ctl" -D "$d" -l "$work/$1.log" -w start >/dev/null
	servers+=("$d")
	echo "$port"
}
stop() { "${runas[@]}" "$PG_BIN/pg_ctl" -D "$work/$1" -w stop >/dev/null; }

# PGREHEARSE_BIN: a pgrehearse built elsewhere (another commit's).
pgr=${PGREHEARSE_BIN:-$work/pgrehearse}
[ -n "${PGREHEARSE_BIN:-}" ] || go build -o "$pgr" ./cmd/pgrehearse

# --- the original: pg_regress on a server logging every statement ---------
port=$(start origin)
mkdir -p "$work/out"
[ "$(id -u)" = 0 ] && chown postgres: "$work/out"
echo "regress: pg_regress --schedule=parallel_schedule on port $port" >&2
status=0
regress=$pkglib/pgxs/src/test/regress/pg_regress
(cd "$work/out" && "${runas[@]}" env PGTZ= PGDATESTYLE= "$regress" --host=127.0.0.1 --port="$port" \
	--bindir="$PG_BIN" --inputdir="$src" --outputdir="$work/out" --dlpath="$lib" \
	--schedule="$src/parallel_schedule" >"$work/pg_regress.out" 2>&1) || status=$?
tail -3 "$work/pg_regress.out" >&2
echo "regress: pg_regress exit $status (its failures, if any, are the environment's; see $work/out/regression.diffs with REGRESS_KEEP=1)" >&2
stop origin
log=$work/origin.log
echo "regress: the original's log: $(wc -l <"$log") lines" >&2

# --- analyze and replay ---------------------------------------------------
"$pgr" analyze --json "$work/analyze.json" "$log" >"$work/analyze.txt" 2>"$work/analyze.err" || { cat "$work/analyze.err" >&2; exit 1; }

runs=()
rcs=()
for s in $speeds; do
	tport=$(start "target-$s")
	echo "regress: replay of the log --speed $s onto a fresh server (port $tport)" >&2
	r=0
	"$pgr" replay --target "host=127.0.0.1 port=$tport user=postgres dbname=postgres" --speed "$s" \
		--json "$work/replay-log-$s.json" "$log" >"$work/replay-log-$s.txt" 2>"$work/replay-log-$s.err" || r=$?
	stop "target-$s"
	runs+=("log-$s")
	rcs+=("$r")
done

# --- the same suite through the capture proxy -------------------------------
if [ "${REGRESS_PROXY:-1}" != 0 ]; then
	pport=$(start proxied)
	cport=$(freeport)
	"$pgr" capture --listen "127.0.0.1:$cport" --upstream "host=127.0.0.1 port=$pport user=postgres dbname=postgres" \
		--out "$work/capture" >"$work/capture.out" 2>"$work/capture.err" &
	cpid=$!
	for _ in $(seq 300); do grep -q "listening on" "$work/capture.err" && break; sleep 0.1; done
	grep -q "listening on" "$work/capture.err" || { cat "$work/capture.err" >&2; exit 1; }
	rm -rf "$work/out"; mkdir -p "$work/out"
	[ "$(id -u)" = 0 ] && chown postgres: "$work/out"
	echo "regress: pg_regress --schedule=parallel_schedule through pgrehearse capture on port $cport" >&2
	pstatus=0
	(cd "$work/out" && "${runas[@]}" env PGTZ= PGDATESTYLE= "$regress" --host=127.0.0.1 --port="$cport" \
		--bindir="$PG_BIN" --inputdir="$src" --outputdir="$work/out" --dlpath="$lib" \
		--schedule="$src/parallel_schedule" >"$work/pg_regress-proxied.out" 2>&1) || pstatus=$?
	tail -3 "$work/pg_regress-proxied.out" >&2
	echo "regress: pg_regress through the proxy exit $pstatus" >&2
	kill -INT "$cpid"
	crc=0
	wait "$cpid" || crc=$?
	echo "regress: capture exit $crc: $(tail -2 "$work/capture.err" | tr '\n' ' ')" >&2
	stop proxied
	"$pgr" analyze --json "$work/analyze-capture.json" "$work/capture" >"$work/analyze-capture.txt" 2>"$work/analyze-capture.err" ||
		{ cat "$work/analyze-capture.err" >&2; exit 1; }
	tport=$(start target-capture)
	echo "regress: replay of the capture --speed 0 onto a fresh server (port $tport)" >&2
	r=0
	"$pgr" replay --target "host=127.0.0.1 port=$tport user=postgres dbname=postgres" --speed 0 \
		--json "$work/replay-capture-0.json" "$work/capture" >"$work/replay-capture-0.txt" 2>"$work/replay-capture-0.err" || r=$?
	stop target-capture
	runs+=("capture-0")
	rcs+=("$r")
fi

# --- the figures -------------------------------------------------------------
python3 - "$work" "${runs[*]}" "${rcs[@]}" <<'EOF'
import json, os, sys
work, runs, rcs = sys.argv[1], sys.argv[2].split(), sys.argv[3:]
for src, name in (("log", "analyze.json"), ("capture", "analyze-capture.json")):
    if not os.path.exists(f"{work}/{name}"):
        continue
    a = json.load(open(f"{work}/{name}"))
    ln = a.get("lines") or a.get("messages") or {}
    st = a["statements"]
    errs = sum((a.get("errors_by_sqlstate") or {}).values())
    outside = a.get("errors_outside_statements", 0)
    print(f"original ({src}): {ln.get('total')} {'lines' if src == 'log' else 'records'}, statements {st['total']} "
          f"({st['executed']} executed, {st['failed']} failed), sessions {a['sessions']['total']}; "
          f"errors by SQLSTATE {errs} {'=' if errs == st['failed'] + outside else '!='} failed {st['failed']} "
          f"+ outside any statement {outside}")
table = []
for run, rc in zip(runs, rcs):
    r = json.load(open(f"{work}/replay-{run}.json"))
    o, st = r["outcomes"], r["statements"]
    only, baked = o["failed_only_on_target"], o.get("only_on_target_baked_ids", 0)
    afp = o.get("only_on_target_after_fast_path", 0)
    inc = r.get("incomplete") or []
    table.append((run, rc, st["total"], st["failed"], only, baked, afp, only - baked - afp,
                  o.get("answer_differs", 0), o.get("answer_differs_unexplained", 0),
                  "yes" if not inc and not r.get("partial") else "NO"))
    print(f"{run}: exit {rc}; statements {st['total']} ({st['executed']} executed, {st['failed']} failed, skipped {st.get('skipped')})")
    print(f"  failed only on the target: {only}, of them baked-in server-assigned ids: {baked}, "
          f"after a skipped fast-path call in their session: {afp}, the rest: {only - baked - afp}")
    sy = r.get("sync") or {}
    print(f"  wall {r.get('wall_seconds', 0):.0f} s; sync: waited {sy.get('waited')}, timeouts {sy.get('timeouts')}, deadlocks unblocked {sy.get('deadlocks_unblocked')}")
    print(f"  only on the target by cause: {o.get('only_on_target_by_sqlstate')}")
    print(f"  failed only in the original: {o['failed_only_in_original']}")
    inc = r.get("incomplete") or []
    print(f"  complete: {'yes' if not inc and not r.get('partial') else 'NO: ' + '; '.join(inc)}")
    for k in ("degraded", "warnings"):
        for w in r.get(k) or []:
            print(f"  {k[:-1]}: {w}")
    print("  queries that failed only on the target:")
    for q in r.get("queries") or []:
        for code, n in (q.get("only_on_target_by_sqlstate") or {}).items():
            print(f"    {code} x{n}: {q['query'][:100]!r}")
    st = r.get("startup_settings")
    if st:
        print(f"  startup settings: {st.get('note')}")
head = ("replay", "exit", "statements", "failed", "only on target", "baked ids", "after fast path", "rest",
        "answers differ", "unexplained", "complete")
print()
print(" | ".join(head))
for row in table:
    print(" | ".join(str(x).rjust(len(h)) for x, h in zip(row, head)))
EOF
for run in "${runs[@]}"; do
	echo "--- replay $run summary (standard error) ---"
	tail -5 "$work/replay-$run.err"
done
