#!/usr/bin/env bash
# bench/proxy-standalone.sh: the capture proxy against PgBouncer, each relay
# a process in a session of its own, as both run in production (a service
# manager starts each in its own session; PgBouncer -d calls setsid itself).
#
# BenchmarkProxyVsPgbouncer (bench/proxy.sh pgbouncer) runs the proxy inside
# the test binary, which pgbench, a child of it, shares a scheduling group
# with (kernel.sched_autogroup_enabled groups by session): there the proxy
# is preempted more often than PgBouncer, whose -d puts it in a session of
# its own (docs/capture-performance.md). This script runs instead, on a throwaway
# server of its own (PGBIN's initdb, default PostgreSQL 15's):
#
#   - PgBouncer in session pooling (the distribution's pgbouncer package);
#   - `pgrehearse capture` recording to disk (--out);
#   - `pgrehearse capture` recording nothing (--admin, no --out), as it is
#     between recordings;
#
# all three relaying pgbench -c CLIENTS -j 2 -T SECONDS over loopback TCP to
# the same server, by turns, ROUNDS times for each of -S simple, -S prepared
# and TPC-B-like prepared (the order of the three relays turns from one
# round to the next). It prints each run's CPU per transaction, split into
# user and system time (each process's /proc/PID/stat, all its threads),
# and, per workload, each proxy's ratio to PgBouncer as the rounds' median
# (lowest-highest), for CPU per transaction and for throughput. Last, one
# client's SELECT 1 round trips (pgbench -c 1 -S, simple protocol) go
# directly and through each relay, in turn, LATENCY_BLOCKS blocks of 2 s
# each (default 5), and each relay's
# added latency is its p50 less the direct p50 (pgbench --log, every
# transaction).
#
#   ROUNDS=6 SECONDS_PER_RUN=4 CLIENTS=16 bench/proxy-standalone.sh
#
# It exits 1, saying why, when a pgbench run fails or the recording proxy's
# capture is incomplete (it dropped records, which would make it look
# cheaper than a whole recording).
#
# As root, the server and PgBouncer run as the user postgres (neither runs
# as root). The machine may be shared: compare within a run, as ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-6}
secs=${SECONDS_PER_RUN:-4}
clients=${CLIENTS:-16}
pgbin=${PGBIN:-/usr/lib/postgresql/15/bin}
bouncer=$(command -v pgbouncer || echo /usr/sbin/pgbouncer)
[ -x "$bouncer" ] || { echo "pgbouncer is not installed (apt-get install pgbouncer)" >&2; exit 1; }
[ -x "$pgbin/initdb" ] || { echo "no PostgreSQL in $pgbin (set PGBIN)" >&2; exit 1; }

tmp=$(mktemp -d /tmp/pgrehearse-standalone.XXXXXX)
chmod 777 "$tmp"
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  [ -f "$tmp/pgbouncer.pid" ] && kill "$(cat "$tmp/pgbouncer.pid")" 2>/dev/null || true
  as_pg "$pgbin/pg_ctl" -D "$tmp/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT

# freeport: a port nothing on 127.0.0.1 listens on, and not in $used (it
# runs in a subshell: the caller adds what it got).
used=" "
freeport() {
  local p
  while :; do
    p=$((20000 + RANDOM % 40000))
    [[ $used == *" $p "* ]] && continue
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && continue
    echo "$p"
    return
  done
}
pgport=$(freeport); used+="$pgport "; bport=$(freeport); used+="$bport "
rport=$(freeport); used+="$rport "; nport=$(freeport); used+="$nport "; aport=$(freeport)

go build -o "$tmp/pgrehearse" ./cmd/pgrehearse
as_pg "$pgbin/initdb" -D "$tmp/data" -A trust -U postgres >/dev/null
as_pg "$pgbin/pg_ctl" -D "$tmp/data" -w -l "$tmp/server.log" \
  -o "-p $pgport -k $tmp -c listen_addresses=127.0.0.1 -c max_connections=$((3 * clients + 20)) -c fsync=off" start >/dev/null
"$pgbin/pgbench" -h 127.0.0.1 -p "$pgport" -U postgres -i -q -s 10 postgres >/dev/null 2>&1

cat > "$tmp/pgbouncer.ini" <<EOF
[databases]
postgres = host=127.0.0.1 port=$pgport dbname=postgres
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $bport
unix_socket_dir =
auth_type = trust
auth_file = $tmp/users.txt
pool_mode = session
max_client_conn = $((clients + 20))
default_pool_size = $((clients + 10))
logfile = $tmp/pgbouncer.log
pidfile = $tmp/pgbouncer.pid
ignore_startup_parameters = extra_float_digits
EOF
echo '"postgres" ""' > "$tmp/users.txt"
as_pg "$bouncer" -d "$tmp/pgbouncer.ini"

upstream="host=127.0.0.1 port=$pgport user=postgres dbname=postgres sslmode=disable"
setsid "$tmp/pgrehearse" capture --listen "127.0.0.1:$rport" --upstream "$upstream" --out "$tmp/capture" \
  >"$tmp/rec.log" 2>&1 </dev/null &
rpid=$!; pids+=("$rpid")
setsid "$tmp/pgrehearse" capture --listen "127.0.0.1:$nport" --upstream "$upstream" --admin "127.0.0.1:$aport" \
  >"$tmp/norec.log" 2>&1 </dev/null &
npid=$!; pids+=("$npid")
for port in "$bport" "$rport" "$nport"; do
  for _ in $(seq 100); do "$pgbin/pg_isready" -q -h 127.0.0.1 -p "$port" && break; sleep 0.1; done
  "$pgbin/pg_isready" -q -h 127.0.0.1 -p "$port" || { echo "relay on port $port did not start" >&2; cat "$tmp"/*.log >&2; exit 1; }
done
bpid=$(cat "$tmp/pgbouncer.pid")
for p in "$rpid" "$npid"; do
  [ "$(cat "/proc/$p/comm")" = pgrehearse ] || { echo "pid $p is not the proxy" >&2; exit 1; }
done

hz=$(getconf CLK_TCK)
# ticks PID: user and system clock ticks of the process, all its threads.
ticks() { sed -E 's/.*\) //' "/proc/$1/stat" | awk '{print $12, $13}'; }
# run NAME PID PORT MODE ARGS...: one pgbench run through a relay.
run() {
  local name=$1 pid=$2 port=$3 mode=$4; shift 4
  read -r u0 s0 < <(ticks "$pid")
  local st=0
  out=$("$pgbin/pgbench" -h 127.0.0.1 -p "$port" -U postgres -n "$@" -c "$clients" -j 2 -T "$secs" postgres 2>&1) || st=$?
  read -r u1 s1 < <(ticks "$pid")
  [ "$st" = 0 ] || { echo "pgbench through $name exited $st: $out" >&2; exit 1; }
  tx=$(sed -nE 's/.*actually processed: ([0-9]+).*/\1/p' <<<"$out")
  tps=$(sed -nE 's/^tps = ([0-9.]+).*/\1/p' <<<"$out")
  [ -n "$tx" ] && [ "$tx" -gt 0 ] || { echo "pgbench through $name failed: $out" >&2; exit 1; }
  awk -v r="$round" -v m="$mode" -v n="$name" -v tx="$tx" -v tps="$tps" -v hz="$hz" \
    -v u=$((u1 - u0)) -v s=$((s1 - s0)) \
    'BEGIN { printf "%s %s %s tps=%.0f cpu_us/tx=%.1f user_us/tx=%.1f sys_us/tx=%.1f\n", r, m, n, tps, 1e6*(u+s)/hz/tx, 1e6*u/hz/tx, 1e6*s/hz/tx }'
}

relays=("pgbouncer $bpid $bport" "recording $rpid $rport" "not-recording $npid $nport")
results="$tmp/results"
round=0
run recording "$rpid" "$rport" warm -S -M simple >/dev/null
run pgbouncer "$bpid" "$bport" warm -S -M simple >/dev/null
echo "round workload relay tps cpu_us/tx user_us/tx sys_us/tx (pgbench -c $clients -j 2 -T $secs, $(date -u +%H:%M) UTC)"
for round in $(seq "$rounds"); do
  for mode in select-simple select-prepared tpcb-prepared; do
    case $mode in
      select-simple) args=(-S -M simple) ;;
      select-prepared) args=(-S -M prepared) ;;
      tpcb-prepared) args=(-M prepared) ;;
    esac
    for k in 0 1 2; do
      read -r name pid port <<<"${relays[$(((k + round) % 3))]}"
      run "$name" "$pid" "$port" "$mode" "${args[@]}" | tee -a "$results"
    done
  done
done
echo "finished $(date -u +%H:%M) UTC"
echo
# Added latency: the p50 of one client's round trips through each relay,
# less the direct p50.
targets=("direct 0 $pgport" "${relays[@]}")
lat="$tmp/latency"
mkdir -p "$lat"
blocks=${LATENCY_BLOCKS:-5}
for block in $(seq "$blocks"); do
  for k in 0 1 2 3; do
    read -r name _ port <<<"${targets[$(((k + block) % 4))]}"
    (cd "$lat" && "$pgbin/pgbench" -h 127.0.0.1 -p "$port" -U postgres -n -S -M simple -c 1 -j 1 -T 2 \
      --log --log-prefix="$name.$block" postgres >/dev/null 2>&1) || { echo "pgbench -c 1 through $name failed" >&2; exit 1; }
  done
done
# p50 FILES...: the median latency (µs) of the transactions logged in FILES.
p50() { cat "$@" | awk '{print $3}' | sort -n | awk '{v[NR] = $1} END {printf "%d\n", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
d50=$(p50 "$lat"/direct.*)
echo "one client, pgbench -S simple, $blocks blocks of 2 s each by turns: direct p50 ${d50} us; added p50 (lowest-highest of the blocks):"
for r in "${relays[@]}"; do
  read -r name _ _ <<<"$r"
  lo=; hi=
  for block in $(seq "$blocks"); do
    a=$(( $(p50 "$lat/$name.$block".*) - $(p50 "$lat/direct.$block".*) ))
    if [ -z "$lo" ] || [ "$a" -lt "$lo" ]; then lo=$a; fi
    if [ -z "$hi" ] || [ "$a" -gt "$hi" ]; then hi=$a; fi
  done
  echo "  $name $(( $(p50 "$lat/$name".*) - d50 )) us ($lo to $hi)"
done
# The recording proxy's figures are those of a whole recording only if it
# dropped nothing: SIGTERM finalizes the capture, and exit 5 says it is
# incomplete (the recorder fell behind), which would make it look cheaper.
kill -TERM "$rpid"
st=0; wait "$rpid" || st=$?
pids=("$npid")
[ "$st" = 0 ] || { echo "the recording proxy exited $st (5: the capture is incomplete, records dropped): its CPU figures are not a whole recording's" >&2; cat "$tmp/rec.log" >&2; exit 1; }
echo
echo "per workload, the rounds' median (lowest-highest):"
awk '
  { split($4, a, "="); tps[$1, $2, $3] = a[2]; split($5, c, "="); cpu[$1, $2, $3] = c[2]
    split($6, u, "="); usr[$1, $2, $3] = u[2]; split($7, s, "="); sys[$1, $2, $3] = s[2]
    modes[$2] = 1; rounds[$1] = 1 }
  function stat(v, n,   i, j, t, med) {
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
    med = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
    return sprintf("%.2f (%.2f-%.2f)", med, v[1], v[n])
  }
  END {
    for (m in modes) {
      for (p = 1; p <= 2; p++) {
        name = (p == 1) ? "recording" : "not-recording"
        n = 0; delete rc; delete rt
        for (r in rounds) { n++; rc[n] = cpu[r, m, name] / cpu[r, m, "pgbouncer"]; rt[n] = tps[r, m, name] / tps[r, m, "pgbouncer"] }
        printf "  %-16s %-14s CPU/tx vs PgBouncer %s   tps vs PgBouncer %s\n", m, name, stat(rc, n), stat(rt, n)
      }
      for (q = 1; q <= 3; q++) {
        name = (q == 1) ? "pgbouncer" : (q == 2) ? "recording" : "not-recording"
        n = 0; delete uu; delete ss
        for (r in rounds) { n++; uu[n] = usr[r, m, name]; ss[n] = sys[r, m, name] }
        printf "  %-16s %-14s user us/tx %s   system us/tx %s\n", m, name, stat(uu, n), stat(ss, n)
      }
    }
  }' "$results"
