package pgcluster

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// Faults a replay must survive, on a cluster that keeps its port so that
// clients can reconnect: a restart and a crash.

// Restart stops the server in mode ("fast": sessions are terminated;
// "immediate": as after a crash, with recovery at start) and starts it
// again on the same port, as pg_ctl restart does.
func (c *Cluster) Restart(ctx context.Context, mode string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	out, err := c.server(ctx, "pg_ctl", "restart", "-w", "-t", "120", "-m", mode, "-D", c.DataDir(),
		"-l", c.ServerLog(), "-o", "-p "+strconv.Itoa(c.port)).CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctl restart: %w\n%s", err, out)
	}
	c.serverDown = false
	return nil
}

// Kill kills the postmaster with SIGKILL, as a crash or the OOM killer
// would, and waits until its children have noticed and exited. StartServer
// brings it back, through crash recovery.
func (c *Cluster) Kill() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	pid, err := c.postmasterPID()
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill the postmaster (pid %d): %w", pid, err)
	}
	c.serverDown = true
	return waitLeftovers(c.DataDir(), 60*time.Second)
}

// StartServer starts a stopped or killed server again, on its port.
func (c *Cluster) StartServer(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return fmt.Errorf("pgcluster: the cluster was removed")
	}
	return c.startLocked(ctx)
}

// postmasterPID reads the postmaster's pid from postmaster.pid.
func (c *Cluster) postmasterPID() (int, error) {
	f, err := os.Open(filepath.Join(c.DataDir(), "postmaster.pid"))
	if err != nil {
		return 0, fmt.Errorf("the server is not running: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return 0, fmt.Errorf("postmaster.pid is empty")
	}
	return strconv.Atoi(sc.Text())
}
