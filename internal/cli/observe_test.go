package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/pgrehearse/pgrehearse/internal/observe"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// observe --duration against a server running pgbench writes the summary,
// the evidence JSON (which observe.FromResult reads, as report does from a
// replay's JSON) and the HTML page.
func TestObserveCommand(t *testing.T) {
	parallelCase(t)
	c := pgclustertest.StartT(t, pgcluster.Options{Settings: map[string]string{
		"shared_preload_libraries": "pg_stat_statements", "pg_stat_statements.track_planning": "on"}})
	ctx := context.Background()
	if out, err := c.Pgbench(ctx, "-i", "-q", "-s", "1", "postgres"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	mustExec(t, c, "postgres", "CREATE EXTENSION pg_stat_statements")
	done := make(chan error, 1)
	go func() {
		_, err := c.Pgbench(ctx, "-n", "-c", "4", "-T", "4", "postgres")
		done <- err
	}()
	dir := t.TempDir()
	jsonPath, htmlPath := filepath.Join(dir, "evidence.json"), filepath.Join(dir, "evidence.html")
	var stdout, stderr bytes.Buffer
	code := Run(ctx, IO{Stdout: &stdout, Stderr: &stderr}, []string{"observe", "--target", c.DSN("postgres"), "--duration", "3s",
		"--observe-interval", "1s", "--json", jsonPath, "--html", htmlPath})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	if code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"Server-side evidence", "transactions/s", "Lock/", "UPDATE pgbench_branches", "HTML report: " + htmlPath} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("summary lacks %q", want)
		}
	}
	data := readFile(t, jsonPath)
	ev, err := observe.FromResult(data)
	if err != nil || ev == nil {
		t.Fatalf("evidence %v: %v", ev, err)
	}
	if ev.Statements == nil || len(ev.Statements.Queries) < 5 || ev.Statements.Snapshots < 3 || ev.Throughput.MeanTPS <= 0 {
		t.Errorf("evidence: %+v", ev)
	}
	page, err := os.ReadFile(htmlPath)
	if err != nil || !bytes.Contains(page, []byte(`id="observe-waits"`)) {
		t.Errorf("HTML page: %v", err)
	}
}

func TestObserveUsage(t *testing.T) {
	for _, args := range [][]string{
		{"observe"},
		{"observe", "--target", "host=/nonexistent", "--sample-interval", "1ms"},
		{"observe", "--target", "host=/nonexistent", "--observe-interval", "10ms"},
		{"observe", "--target", "host=/nonexistent", "--json", "-", "--html", "-"},
		{"observe", "--target", "host=/nonexistent", "extra"},
	} {
		var stderr bytes.Buffer
		if code := Run(context.Background(), IO{Stdout: &stderr, Stderr: &stderr}, args); code != ExitUsage {
			t.Errorf("%v: exit %d, want %d\n%s", args, code, ExitUsage, stderr.String())
		}
	}
	var stderr bytes.Buffer
	if code := Run(context.Background(), IO{Stdout: &stderr, Stderr: &stderr}, []string{"observe", "--target", "host=/nonexistent port=1", "--duration", "1s"}); code != ExitFailure {
		t.Errorf("unreachable server: exit %d, want %d", code, ExitFailure)
	}
}

// For replay, observing is on by default (replayrun.Run warns about a
// target that cannot be observed and goes on); --observe=false turns it
// off.
func TestObserveFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		on   bool
	}{{nil, true}, {[]string{"--observe=false"}, false}} {
		var f observeFlags
		fs := pflag.NewFlagSet("replay", pflag.ContinueOnError)
		addObserveFlags(fs, &f)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if f.enabled != tc.on || f.interval != 10*time.Second || f.sampleInterval != 100*time.Millisecond {
			t.Errorf("%v: %+v", tc.args, f)
		}
	}
}
