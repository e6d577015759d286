package pgcluster_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// newInitCache makes an initdb cache for t alone, removed after it, and
// sets PGREHEARSE_INITDB_CACHE to it.
func newInitCache(t *testing.T) string {
	t.Helper()
	cache, err := os.MkdirTemp("/tmp", "initcache-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(cache) })
	if err := os.Chmod(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(pgcluster.InitCacheEnv, cache)
	return cache
}

// TestInitCache: with PGREHEARSE_INITDB_CACHE set, initdb runs once per
// binaries, into the cache, and each cluster starts from a copy of its
// own: two clusters with other settings, each what its options say, one's
// table absent from the other, the template untouched by either.
func TestInitCache(t *testing.T) {
	cache := newInitCache(t)
	a := pgclustertest.StartT(t, pgcluster.Options{Settings: map[string]string{"work_mem": "7MB"}})
	b := pgclustertest.StartT(t, pgcluster.Options{Settings: map[string]string{"work_mem": "9MB"}})
	ready, _ := filepath.Glob(filepath.Join(cache, "*", "ready"))
	if len(ready) != 1 {
		t.Fatalf("%d templates made in the cache, want 1: %v", len(ready), ready)
	}
	if err := a.Exec(context.Background(), "postgres", "CREATE TABLE only_a (x int)"); err != nil {
		t.Fatal(err)
	}
	if got := query(t, a, "postgres", "SHOW work_mem"); got != "7MB" {
		t.Errorf("a: work_mem %s", got)
	}
	if got := query(t, b, "postgres", "SHOW work_mem"); got != "9MB" {
		t.Errorf("b: work_mem %s", got)
	}
	if got := query(t, b, "postgres", "SELECT count(*) FROM pg_class WHERE relname = 'only_a'"); got != "0" {
		t.Errorf("b sees a's table: %s", got)
	}
	conf, err := os.ReadFile(filepath.Join(filepath.Dir(ready[0]), "data", "postgresql.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if len(conf) == 0 || filepath.Dir(a.DataDir()) == filepath.Dir(ready[0]) {
		t.Fatalf("the template's configuration is empty, or a runs in the cache")
	}
	for _, s := range []string{"work_mem = '7MB'", "work_mem = '9MB'", "pgcluster defaults"} {
		if containsBytes(conf, s) {
			t.Errorf("the template's postgresql.conf holds %q: a cluster's settings went into it", s)
		}
	}
}

func containsBytes(b []byte, s string) bool { return strings.Contains(string(b), s) }

// TestChecksums: Options.Checksums gives the cluster the data-checksum
// setting asked for, on 18 (whose initdb turns them on by default, and
// has --no-data-checksums) and on 15 (off by default, no such option);
// the zero value keeps initdb's default (InitdbChecksums). With the initdb
// cache, each choice has a template of its own: a cluster never starts
// from a template made with the other setting.
func TestChecksums(t *testing.T) {
	cache := newInitCache(t)
	want := map[pgcluster.Checksums]string{pgcluster.ChecksumsOn: "on", pgcluster.ChecksumsOff: "off"}
	for _, major := range []int{15, 18} {
		want[pgcluster.ChecksumsDefault] = want[pgcluster.InitdbChecksums(major)]
		for _, sums := range []pgcluster.Checksums{pgcluster.ChecksumsDefault, pgcluster.ChecksumsOn, pgcluster.ChecksumsOff} {
			c := pgclustertest.StartT(t, pgcluster.Options{Version: major, Checksums: sums})
			if got := query(t, c, "postgres", "SHOW data_checksums"); got != want[sums] {
				t.Errorf("PostgreSQL %d, Checksums %q: data_checksums %s, want %s", major, sums, got, want[sums])
			}
		}
	}
	// A template per version and initdb options: 15's default and off
	// run initdb alike and share one; 18's default, on and off each
	// have theirs.
	ready, _ := filepath.Glob(filepath.Join(cache, "*", "ready"))
	if len(ready) != 5 {
		t.Errorf("%d templates made in the cache, want 5 (on and off of each version, and 18's default): %v", len(ready), ready)
	}
	if _, err := pgcluster.Start(context.Background(), pgcluster.Options{Checksums: "maybe"}); err == nil || !strings.Contains(err.Error(), "maybe") {
		t.Errorf("Checksums \"maybe\": %v, want an error naming it", err)
	}
}
