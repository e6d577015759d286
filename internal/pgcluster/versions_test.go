package pgcluster_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// TestVersionsStart starts each major of pgcluster.Majors (13, 14, 15,
// 16, 17, 18) from the version cache, with pg_stat_statements preloaded,
// checks that the server is that version, creates the extension, and
// drives it with the installed pgbench, which the cache's builds lack.
// A version missing from the cache fails, naming `make pg-versions`.
func TestVersionsStart(t *testing.T) {
	if !pgclustertest.LongVersions() {
		// make test starts a server of every version in each of the
		// per-version tests of the other packages (TestVersionsPGSS,
		// TestVersionsExplain, TestVersionsObserve, pgbench included).
		t.Skip("every version's start is also in the other per-version tests; make test-versions runs this one")
	}
	for _, major := range pgcluster.Majors {
		t.Run(strconv.Itoa(major), func(t *testing.T) {
			// Each version on servers of its own: the versions run side by side.
			t.Parallel()
			c := pgclustertest.StartVersion(t, major, map[string]string{
				"shared_preload_libraries": "pg_stat_statements",
			})
			num, err := strconv.Atoi(query(t, c, "postgres", "SHOW server_version_num"))
			if err != nil || num/10000 != major {
				t.Fatalf("server_version_num = %d, %v; want %d", num, err, major)
			}
			ctx := context.Background()
			pgclustertest.Exec(t, c, "postgres", "CREATE EXTENSION pg_stat_statements")
			if out, err := c.Pgbench(ctx, "-i", "-s", "1", "-q", "postgres"); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if out, err := c.Pgbench(ctx, "-n", "-S", "-t", "20", "postgres"); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			conn := pgclustertest.Connect(ctx, t, c.DSN("postgres"))
			defer conn.Close(ctx)
			var calls int64
			if err := conn.QueryRow(ctx, `SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_statements
				WHERE query LIKE 'SELECT abalance FROM pgbench_accounts%'`).Scan(&calls); err != nil {
				t.Fatal(err)
			}
			if calls != 20 {
				t.Errorf("pg_stat_statements counts %d calls of pgbench's select, want 20", calls)
			}
		})
	}
}

// TestMissingVersion: a version absent from the cache is an error that
// names the command installing it, and Version excludes BinDir.
func TestMissingVersion(t *testing.T) {
	t.Setenv("PGREHEARSE_PG_CACHE", t.TempDir())
	_, err := pgcluster.Start(context.Background(), pgcluster.Options{Version: 18})
	if !errors.Is(err, pgcluster.ErrNoVersion) || !strings.Contains(err.Error(), "make pg-versions") {
		t.Errorf("Start(Version: 18) with an empty cache = %v; want ErrNoVersion naming make pg-versions", err)
	}
	_, err = pgcluster.Start(context.Background(), pgcluster.Options{Version: 18, BinDir: "/usr/bin"})
	if err == nil || !strings.Contains(err.Error(), "both set") {
		t.Errorf("Start with Version and BinDir = %v; want an error", err)
	}
}

// TestMajorOf: the major version of the installed binaries and of each
// cached one, from postgres --version.
func TestMajorOf(t *testing.T) {
	if _, err := pgcluster.MajorOf(""); err != nil {
		t.Errorf("the installed binaries: %v", err)
	}
	for _, major := range pgcluster.Majors {
		dir, err := pgcluster.BinDirFor(major)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := pgcluster.MajorOf(dir); got != major || err != nil {
			t.Errorf("MajorOf(%s) = %d, %v; want %d", dir, got, err, major)
		}
	}
}
