package sweep_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/proctest"
	"github.com/pgrehearse/pgrehearse/internal/sweep"
	"github.com/pgrehearse/pgrehearse/internal/sweep/sweeptest"
)

// TestPgbenchPasswordNotOnCommandLine: a sweep of a target whose
// connection string holds a password starts pgbench (its -i and its
// steps) without the password on its command line, where every user of
// the machine reads it (ps); pgbench gets it as PGPASSWORD in its
// environment, which only its own user reads. /proc/PID/cmdline of every
// pgbench is read while it runs.
func TestPgbenchPasswordNotOnCommandLine(t *testing.T) {
	functionalCase(t)
	const planted = "PlantedPgbench-5e1"
	c := pgclustertest.StartT(t, pgcluster.Options{Settings: map[string]string{"shared_preload_libraries": "pg_stat_statements"}})
	opts := sweeptest.Options(t, 1)
	opts.Target = c.DSN("postgres") + " password=" + planted
	opts.Init = true
	opts.Warmup, opts.Duration = 0, time.Second
	port := "port=" + strconv.Itoa(c.Port())
	stop := make(chan struct{})
	seen := proctest.WatchChildren(stop, func(cmdline string) bool {
		return strings.Contains(cmdline, "pgbench") && strings.Contains(cmdline, port)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := sweep.Run(ctx, opts)
	close(stop)
	children := <-seen
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Configs) != 1 || len(res.Configs[0].Steps) != 1 || res.Configs[0].Steps[0].TPS <= 0 {
		t.Fatalf("the sweep did not run its step: %+v", res.Configs)
	}
	steps := 0
	for _, ch := range children {
		args := strings.ReplaceAll(ch.Cmdline, "\x00", " ")
		if strings.Contains(ch.Cmdline, planted) {
			t.Errorf("pgbench %d has the password on its command line: %s", ch.PID, args)
		}
		if !strings.Contains("\x00"+ch.Env+"\x00", "\x00PGPASSWORD="+planted+"\x00") {
			t.Errorf("pgbench %d was not given the password in its environment: %s", ch.PID, args)
		}
		if strings.Contains(args, " -P 1 ") {
			steps++
		}
	}
	// The step runs for over a second: a poll every few milliseconds
	// sees it. pgbench -i at scale 1 may be over before one does.
	if steps == 0 {
		t.Errorf("no step's pgbench seen among %d readings", len(children))
	}
	t.Logf("%d readings of pgbench processes, %d of the step's", len(children), steps)
}
