package pgcluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// waitLeftovers waits until no live process has dataDir as its working
// directory, which every server process has.
//
// pg_ctl stop returns when the postmaster has exited, but the logging
// collector outlives it: it exits only once it has drained the pipe the
// other processes logged into, so the last lines of the log may still be
// on their way when pg_ctl returns. The server gives no signal for the
// collector's exit, so this polls /proc, with a deadline. Without /proc
// (not Linux) it returns at once.
func waitLeftovers(dataDir string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	// The kernel reports resolved paths; $TMPDIR may hold a symlink.
	if resolved, err := filepath.EvalSymlinks(dataDir); err == nil {
		dataDir = resolved
	}
	for {
		pids := processesIn(dataDir)
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("server processes %v still running in %s %v after shutdown", pids, dataDir, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// processesIn lists the live processes whose working directory is dir.
// Zombies, whose working directory is unreadable, do not count: they no
// longer write anything.
func processesIn(dir string) []string {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []string
	for _, e := range entries {
		name := e.Name()
		if name == "" || strings.Trim(name, "0123456789") != "" {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", name, "cwd"))
		if err != nil || cwd != dir {
			continue
		}
		pids = append(pids, name)
	}
	return pids
}
