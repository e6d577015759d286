#!/usr/bin/env bash
# bench/forecast.sh: the rehearsal's forecast checked against the
# application itself (issue 58; bench/forecast, figures in
# docs/forecast.md). It builds bin/pgrehearse from the working tree, then
# bench/forecast runs a small application (pgbench over customers and
# orders, 8 clients at half the control's capacity) directly on a control
# and on a candidate with one change, 3 rounds each in turn from restored
# data directories (the truth), rehearses a production log of the same
# application with bin/pgrehearse rehearse (the forecast), and prints per
# change the true ratio of each query beside the forecast with its
# interval, the verdict's agreement and the throughput.
#
#   bench/forecast.sh [FLAGS]     e.g. -changes dropped-index,none
#       -duration 20s -rounds 3 -rate 400 -out DIR
#       -rehearse-args '--fail-on mean>+50% --fixes=false --sync off'
#
# All six changes at the defaults took 54 minutes on a busy 2-core
# machine; the pg18 change needs `make pg-versions`. Timings: run it alone
# (it takes the shared timing lock when flock is there) and quote the load
# average it prints with its figures.
set -euo pipefail
cd "$(dirname "$0")/.."
make build >/dev/null
lock=()
if command -v flock >/dev/null; then lock=(flock /tmp/timing.lock); fi
exec "${lock[@]}" go run ./bench/forecast "$@"
