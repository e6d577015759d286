package pgcluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestSettingsValidation(t *testing.T) {
	for _, s := range []map[string]string{
		{"port": "5432"},
		{"log_directory": "/tmp"},
		{"unix_socket_directories": "/tmp"},
		{"bad name": "x"},
		{"work_mem": "1MB\nfsync = on"},
	} {
		if c, err := Start(context.Background(), Options{Settings: s}); err == nil {
			c.Stop()
			t.Errorf("Start with %v: want an error", s)
		}
	}
}

func TestMissingBinaries(t *testing.T) {
	_, err := Start(context.Background(), Options{BinDir: "/nonexistent/bin"})
	if !errors.Is(err, ErrNoBinaries) {
		t.Fatalf("Start with a bad BinDir: %v, want ErrNoBinaries", err)
	}
	for _, want := range []string{"/nonexistent/bin", InstallHint, "PG_BIN"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}

	t.Setenv("PG_BIN", "/nonexistent/pgbin")
	if _, err := FindBinDir("", serverPrograms...); !errors.Is(err, ErrNoBinaries) {
		t.Errorf("PG_BIN set to a bad directory: %v, want ErrNoBinaries rather than a guess", err)
	}
}

func TestVersionOrder(t *testing.T) {
	if !(versionOf("/usr/lib/postgresql/9.6/bin") < versionOf("/usr/lib/postgresql/10/bin") &&
		versionOf("/usr/lib/postgresql/10/bin") < versionOf("/usr/lib/postgresql/15/bin")) {
		t.Errorf("versionOf does not order 9.6 < 10 < 15")
	}
}

// TestWatchdogStopsOrphanedCluster kills a process that started a cluster
// without stopping it, and checks that the cluster goes away anyway.
func TestWatchdogStopsOrphanedCluster(t *testing.T) {
	t.Parallel()
	if os.Getenv("PGCLUSTER_CHILD") == "1" {
		t.Skip("runs only as the parent")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperOrphan$", "-test.v")
	cmd.Env = append(os.Environ(), "PGCLUSTER_CHILD=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var dir string
	var port int
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if _, err := fmt.Sscanf(sc.Text(), "cluster %s %d", &dir, &port); err == nil {
			break
		}
	}
	if dir == "" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child did not report its cluster")
	}
	// SIGKILL: no deferred function, no cleanup runs in the child.
	cmd.Process.Kill()
	cmd.Wait()

	// The watchdog gives no signal to this process when it is done, so
	// poll for its effect, with a deadline.
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, err := os.Stat(dir)
		if errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster directory %s still there 60s after its owner died", dir)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
		conn.Close()
		t.Errorf("orphaned cluster still accepts connections on port %d", port)
	}
}

// TestHelperOrphan is the child of TestWatchdogStopsOrphanedCluster: it
// starts a cluster, reports it and waits to be killed.
func TestHelperOrphan(t *testing.T) {
	if os.Getenv("PGCLUSTER_CHILD") != "1" {
		t.Skip("runs only as a child of TestWatchdogStopsOrphanedCluster")
	}
	c, err := Start(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("cluster %s %d\n", c.Dir(), c.Port())
	// Not synchronization: the parent kills this process long before.
	time.Sleep(5 * time.Minute)
}

// TestStartFailureCleansUp checks that a server that refuses to start
// leaves nothing behind and says why.
func TestStartFailureCleansUp(t *testing.T) {
	// A private TMPDIR shows whether the cluster directory was removed.
	// Not t.TempDir: its parent is not enterable by the postgres user.
	tmp, err := os.MkdirTemp("", "pgcluster-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	if err := os.Chmod(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", tmp)

	_, err = Start(context.Background(), Options{Settings: map[string]string{"work_mem": "lots"}})
	if err == nil {
		t.Fatal("Start with work_mem = 'lots': want an error")
	}
	if !strings.Contains(err.Error(), `invalid value for parameter "work_mem"`) {
		t.Errorf("error does not quote the server's complaint: %v", err)
	}
	left, _ := os.ReadDir(tmp)
	if len(left) != 0 {
		t.Errorf("failed Start left %v in TMPDIR", left)
	}
}
