package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/capturerun"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

var adminRE = regexp.MustCompile(`admin interface on http://(\S+)/recordings`)

// TestCaptureAdminCommands: "capture --admin" without --out relays and
// records nothing; "capture start", "status" and "stop" drive a
// recording through its admin interface; a second start is refused with
// the running recording's id; the pool's connection, open throughout,
// keeps its backend; the proxy's own summary lists the recording.
func TestCaptureAdminCommands(t *testing.T) {
	parallelCase(t)
	ctx := context.Background()
	src := pgclustertest.StartT(t, pgcluster.Options{})
	dsn := src.DSN("postgres")

	for _, args := range [][]string{
		{"capture", "--upstream", dsn},
		{"capture", "--upstream", dsn, "--admin", "127.0.0.1:0", "--duration", "1h"},
	} {
		if code, _, stderr := runCLI(ctx, "", args...); code != ExitUsage {
			t.Errorf("%q exited %d, want %d:\n%s", args, code, ExitUsage, stderr)
		}
	}

	capCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stdout, stderr := &lockedBuffer{}, &lockedBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- Run(capCtx, IO{Stdout: stdout, Stderr: stderr},
			[]string{"capture", "--listen", "127.0.0.1:0", "--upstream", dsn, "--admin", "127.0.0.1:0", "--drain", "0"})
	}()
	var listen, admin string
	deadline := time.Now().Add(30 * time.Second)
	for listen == "" || admin == "" {
		if m := listeningRE.FindStringSubmatch(stderr.String()); m != nil {
			listen = m[1]
		}
		if m := adminRE.FindStringSubmatch(stderr.String()); m != nil {
			admin = m[1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("capture did not listen within 30 s:\n%s", stderr)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(stderr.String(), "not recording until a recording starts") {
		t.Errorf("the proxy does not say it records nothing yet:\n%s", stderr)
	}
	host, port, _ := strings.Cut(listen, ":")
	proxyDSN := "host=" + host + " port=" + port + " user=" + src.User() + " dbname=postgres sslmode=disable"
	pool := pgclustertest.PgConn(ctx, t, proxyDSN)
	defer pool.Close(ctx)
	pid := pool.PID()

	dir := filepath.Join(t.TempDir(), "rec")
	code, out, errOut := runCLI(ctx, "", "capture", "start", "--admin", admin, "--out", dir)
	if code != ExitOK || !strings.Contains(out, "recording r1 started into "+dir+"; 1 sessions open already are recorded from the middle, with their state") {
		t.Fatalf("capture start exited %d:\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCLI(ctx, "", "capture", "start", "--admin", admin, "--out", filepath.Join(t.TempDir(), "other"))
	if code != ExitFailure || !strings.Contains(errOut, "recording r1 is under way") {
		t.Errorf("a second start exited %d, want %d naming r1:\n%s%s", code, ExitFailure, out, errOut)
	}
	conn := pgclustertest.PgConn(ctx, t, proxyDSN)
	if _, err := conn.Exec(ctx, "SELECT 'recorded'").ReadAll(); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)

	code, out, errOut = runCLI(ctx, "", "capture", "status", "--admin", admin, "--json", "-")
	var l capturerun.List
	if code != ExitOK || json.Unmarshal([]byte(out), &l) != nil || l.Current != "r1" || len(l.Recordings) != 1 || l.Recordings[0].NotRecorded != 0 || l.Recordings[0].Resumed != 1 {
		t.Errorf("capture status --json exited %d, want r1 under way with the pool's session taken up from the middle:\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCLI(ctx, "", "capture", "status", "--admin", admin)
	if code != ExitOK || !strings.Contains(out, "recording r1 into "+dir+": recording since") {
		t.Errorf("capture status exited %d:\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCLI(ctx, "", "capture", "stop", "--admin", admin)
	if code != ExitOK || !strings.Contains(out, "recording r1 into "+dir+": complete, stopped on request") {
		t.Errorf("capture stop exited %d:\n%s%s", code, out, errOut)
	}
	if _, err := pool.Exec(ctx, "SELECT 1").ReadAll(); err != nil || pool.PID() != pid {
		t.Errorf("the pool's connection after the recording: %v, backend %d (was %d)", err, pool.PID(), pid)
	}
	code, out, errOut = runCLI(ctx, "", "events", dir)
	if code != ExitOK || strings.Count(out, `"kind":"statement"`) != 1 || strings.Count(out, `"kind":"connect"`) != 2 {
		t.Errorf("events of the recording exited %d, want the recorded session, the pool's taken up from the middle, and the one statement only:\n%s%s", code, out, errOut)
	}

	cancel()
	if code := <-done; code != ExitOK || !strings.Contains(stdout.String(), "recording r1 into "+dir+": complete") {
		t.Errorf("capture exited %d:\n%s%s", code, stdout, stderr)
	}
}
