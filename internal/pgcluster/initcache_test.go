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

// TestInitCache: with PGREHEARSE_INITDB_CACHE set, initdb runs once per
// binaries, into the cache, and each cluster starts from a copy of its
// own: two clusters with other settings, each what its options say, one's
// table absent from the other, the template untouched by either.
func TestInitCache(t *testing.T) {
	cache, err := os.MkdirTemp("/tmp", "initcache-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(cache) })
	if err := os.Chmod(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(pgcluster.InitCacheEnv, cache)
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
