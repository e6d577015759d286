package pgcluster

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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

// Freeze stops every process of the server with SIGSTOP (the postmaster
// and all its children), as a hung host or a network partition without
// a reset looks to its clients: connections stay open, the kernel still
// accepts new ones, and nothing answers. Thaw resumes them.
func (c *Cluster) Freeze() error {
	return c.signalAll(syscall.SIGSTOP)
}

// Thaw resumes a server stopped by Freeze.
func (c *Cluster) Thaw() error {
	return c.signalAll(syscall.SIGCONT)
}

// signalAll sends sig to the postmaster and then to each of its children.
func (c *Cluster) signalAll(sig syscall.Signal) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	pid, err := c.postmasterPID()
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, sig); err != nil {
		return fmt.Errorf("signal the postmaster (pid %d): %w", pid, err)
	}
	children, err := childPIDs(pid)
	if err != nil {
		return err
	}
	for _, ch := range children {
		// A child that exited meanwhile is no matter.
		_ = syscall.Kill(ch, sig)
	}
	return nil
}

// childPIDs lists the processes whose parent is pid, from /proc.
func childPIDs(pid int) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	var out []int
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) >= 2 {
			if pp, err := strconv.Atoi(f[1]); err == nil && pp == pid {
				out = append(out, p)
			}
		}
	}
	return out, nil
}
