package cli

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// TestReplaySyncFlags: --sync and --sync-timeout are checked, and the
// summary and the JSON say what synchronization did.
func TestReplaySyncFlags(t *testing.T) {
	log := writeSessionsLog(t, [][]string{{"u1", "db1", "SELECT 1"}})
	checkUsage(t, []usageCase{
		{[]string{"--sync", "rows"}, "unknown synchronization mode"},
		{[]string{"--sync-timeout", "0s"}, "--sync-timeout must be positive"},
	}, func(args []string) (int, string) {
		code, out, _ := runReplay(t, append(append([]string{"--dry-run", "--prefix", replayTestPrefix}, args...), log)...)
		return code, out
	})
	// A dry run sends nothing to wait for: off, and says why.
	code, out, res := runReplay(t, "--dry-run", "--sync", "commit", "--prefix", replayTestPrefix, log)
	if code != ExitOK || res == nil || res.Sync == nil || res.Sync.Mode != "off" || len(res.Sync.Notes) != 1 || !strings.Contains(out, "sync:       not exercised: a dry run sends nothing to wait for") {
		t.Errorf("dry run: exit %d, sync %+v:\n%s", code, res.Sync, out)
	}

	c := pgclustertest.StartT(t, pgcluster.Options{})
	mustExec(t, c, "postgres", "CREATE ROLE u1 LOGIN", "CREATE DATABASE db1 OWNER u1")
	mustExec(t, c, "db1", "CREATE TABLE t (id int); ALTER TABLE t OWNER TO u1")
	log = writeSessionsLog(t, [][]string{
		{"u1", "db1", "INSERT INTO t VALUES (1)"},
		{"u1", "db1", "SELECT count(*) FROM t"},
	})
	code, out, res = runReplay(t, "--target", c.DSN("postgres"), "--speed", "0", "--sync", "commit", "--sync-timeout", "3s", "--prefix", replayTestPrefix, log)
	if code != ExitOK || res == nil || res.Sync == nil {
		t.Fatalf("exit %d, result %+v:\n%s", code, res, out)
	}
	if s := res.Sync; s.Mode != "commit" || s.TimeoutSeconds != 3 || s.Timeouts != 0 || len(s.Notes) != 0 {
		t.Errorf("sync %+v", s)
	}
	if !strings.Contains(out, "sync:       commit; ") || !strings.Contains(out, "gave up after 3s without progress") {
		t.Errorf("summary:\n%s", out)
	}
	// replay's default is answers (issue 59 item 1), named in the text
	// and the JSON; a log of whole seconds (%t) says once that it
	// orders only a second apart, one of milliseconds does not.
	b := readFile(t, log)
	seconds := filepath.Join(t.TempDir(), "seconds.log")
	writeFile(t, seconds, regexp.MustCompile(`(\d\d:\d\d:\d\d)\.\d{3}`).ReplaceAll(b, []byte("$1")))
	for _, tc := range []struct {
		log, prefix string
		coarse      bool
	}{{log, replayTestPrefix, false}, {seconds, "%t [%p] %q%u@%d/%a %c ", true}} {
		mustExec(t, c, "db1", "TRUNCATE t")
		code, out, res = runReplay(t, "--target", c.DSN("postgres"), "--speed", "0", "--prefix", tc.prefix, tc.log)
		if code != ExitOK || res == nil || res.Sync == nil || res.Sync.Mode != results.SyncAnswers || !strings.Contains(out, "sync:       answers; ") {
			t.Errorf("default, %s: exit %d, sync %+v, want answers named:\n%s", tc.prefix, code, res.Sync, out)
			continue
		}
		if n := strings.Count(out, "the log's times are whole seconds"); n != map[bool]int{true: 1, false: 0}[tc.coarse] || len(res.Sync.Notes) != n {
			t.Errorf("default, %s: the note on whole seconds is said %d times, notes %q:\n%s", tc.prefix, n, res.Sync.Notes, out)
		}
	}
	// On the same cluster: --sync load (issue 58).
	testSyncLoad(t, c)
}
