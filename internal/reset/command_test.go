package reset

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

const secret = "s3cr3t-pw"

// TestCommandEnvironment: the command finds the target in libpq's
// variables and the rehearsal's own, never the password.
func TestCommandEnvironment(t *testing.T) {
	c := pgclustertest.StartT(t, pgcluster.Options{})
	t.Setenv("PGHOST", "elsewhere.example") // replaced, not mixed in
	out := filepath.Join(t.TempDir(), "env")
	var shown strings.Builder
	cmd := &Command{Command: "env > " + out + "; echo reset done; echo to stderr >&2", DSN: c.DSN("postgres") + " password=" + secret,
		Name: "control", Output: &shown}
	if err := cmd.Prepare(context.Background()); err != nil {
		t.Fatal(err)
	}
	st, err := cmd.Reset(context.Background(), 2)
	if err != nil {
		t.Fatalf("Reset: %v", err)
	}
	if st.Mode != ModeCommand || st.Round != 2 || st.Drifted || st.Seconds <= 0 {
		t.Errorf("state = %+v", st)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	env := string(b)
	for _, want := range []string{"PGHOST=" + c.SocketDir() + "\n", "PGUSER=" + c.User() + "\n", "PGDATABASE=postgres\n",
		EnvTarget + "=control\n", EnvRound + "=2\n", EnvDSN + "=host=" + c.SocketDir() + " port="} {
		if !strings.Contains(env, want) {
			t.Errorf("the command's environment lacks %q", want)
		}
	}
	if strings.Contains(env, secret) || strings.Contains(env, "elsewhere.example") {
		t.Errorf("the command's environment has the password or the old PGHOST:\n%s", env)
	}
	if !strings.Contains(shown.String(), "reset done") || !strings.Contains(shown.String(), "to stderr") {
		t.Errorf("Output got %q, want both streams", shown.String())
	}
}

// TestCommandFails: a failing command is an error with its exit status
// and the end of its standard error, the password hidden.
func TestCommandFails(t *testing.T) {
	c := pgclustertest.StartT(t, pgcluster.Options{})
	script := `for i in $(seq 1 500); do echo "noise line $i" >&2; done
echo "cannot rollback to 'tank/pg@base': dataset is busy (password ` + secret + `)" >&2
exit 3`
	cmd := &Command{Command: script, DSN: c.DSN("postgres") + " password=" + secret, Name: "candidate"}
	_, err := cmd.Reset(context.Background(), 2)
	var ce *CommandError
	if !errors.As(err, &ce) {
		t.Fatalf("Reset: %v, want a CommandError", err)
	}
	if ce.Status != 3 || ce.Round != 2 || ce.Name != "candidate" {
		t.Errorf("CommandError = %+v", ce)
	}
	msg := err.Error()
	for _, want := range []string{"exit status 3", "candidate target", "dataset is busy", "********"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, secret) || strings.Contains(msg, "noise line 1\n") || len(ce.Stderr) > tailBytes {
		t.Errorf("error holds the password, or more than the tail (%d bytes):\n%s", len(ce.Stderr), msg)
	}
}

// TestCommandWaitsForTarget: the reset returns once the target accepts
// connections again (a snapshot rolled back means a restart), and fails
// saying so when it does not come back.
func TestCommandWaitsForTarget(t *testing.T) {
	c := pgclustertest.StartT(t, pgcluster.Options{})
	ctx := context.Background()
	if err := c.StopServer(); err != nil {
		t.Fatal(err)
	}
	cmd := &Command{Command: "true", DSN: c.DSN("postgres"), Name: "control", ReadyTimeout: 500 * time.Millisecond}
	if _, err := cmd.Reset(ctx, 1); err == nil || !strings.Contains(err.Error(), "did not accept connections within") {
		t.Errorf("Reset with the target down: %v, want it to say the target did not come back", err)
	}

	started := make(chan error, 1)
	go func() { started <- c.StartServer(ctx) }()
	cmd.ReadyTimeout = 2 * time.Minute
	if _, err := cmd.Reset(ctx, 1); err != nil {
		t.Errorf("Reset while the target starts: %v", err)
	}
	if err := <-started; err != nil {
		t.Fatal(err)
	}
}

// TestCommandCancelled: cancelling ends the command and what it started.
func TestCommandCancelled(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	cmd := &Command{Command: "sleep 60 & echo $! > " + pidFile + "; wait", DSN: "host=/nonexistent dbname=x", Name: "control"}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := cmd.Reset(ctx, 1); done <- err }()
	// Wait until the child is running, then cancel.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(pidFile); err == nil && strings.TrimSpace(string(b)) != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	err := <-done
	var ce *CommandError
	if !errors.As(err, &ce) || !errors.Is(err, context.Canceled) || ce.Status != -1 {
		t.Fatalf("Reset cancelled: %v, want a CommandError wrapping context.Canceled", err)
	}
	b, _ := os.ReadFile(pidFile)
	proc := filepath.Join("/proc", strings.TrimSpace(string(b)))
	for deadline := time.Now().Add(10 * time.Second); ; {
		st, err := os.ReadFile(filepath.Join(proc, "stat"))
		if err != nil || strings.Contains(string(st), ") Z ") {
			break // gone, or a zombie
		}
		if time.Now().After(deadline) {
			t.Fatalf("the command's child %s still runs after the cancellation", proc)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestNone(t *testing.T) {
	for round, drifted := range map[int]bool{1: false, 2: true, 5: true} {
		st, err := None{}.Reset(context.Background(), round)
		if err != nil || st.Drifted != drifted || st.Mode != ModeNone {
			t.Errorf("None.Reset(%d) = %+v, %v; want drifted %v", round, st, err, drifted)
		}
	}
}

func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{"template": ModeTemplate, "none": ModeNone, "datadir": ModeDataDir, "command": "", "": "", "Template": ""} {
		got, err := ParseMode(in)
		if got != want || (err == nil) != (want != "") {
			t.Errorf("ParseMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
