package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
)

// Pinning keeps the servers and the clients on cores of their own
// (-server-cpus, -client-cpus), as in production, where the application
// and the rehearsal's replayer run on other machines than the database.
// Without it, a candidate that drives a small host to its CPU limit
// makes the server share its cores with pgbench in the truth and with
// the replayer in the forecast: two clients the kernel schedules
// differently (bench/results/2026-11-28-forecast-runs.md, "Servers and
// clients on cores of their own").

// pinnedEnv marks the bench's own process as already moved onto
// -client-cpus by reexecPinned.
const pinnedEnv = "PGREHEARSE_FORECAST_PINNED"

// reexecPinned runs the bench again under taskset on cpus, so that it
// and every client it starts (pgbench, rehearse and its replayer) run
// there: a Go program cannot move all of its threads itself. It returns
// only on error, or at once when the process is already pinned.
func reexecPinned(cpus string) error {
	if cpus == "" || os.Getenv(pinnedEnv) != "" {
		return nil
	}
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		return fmt.Errorf("-client-cpus needs taskset (util-linux): %w", err)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	args := append([]string{taskset, "-c", cpus, self}, os.Args[1:]...)
	return syscall.Exec(taskset, args, append(os.Environ(), pinnedEnv+"="+cpus))
}

// pinnedBinaries makes, under dir, a copy of the installation of the
// server binaries in bin whose postgres runs under taskset on cpus, and
// returns its bin directory. Every server started from it (by pgcluster,
// and by rehearse's datadir reset, which restarts a cluster with the
// binaries it was started with) runs there, backends included: they
// inherit the postmaster's CPUs. pg_ctl is copied, not linked, because
// it finds postgres beside its own resolved path; the other programs
// and the installation's other directories (lib, share) are links, so
// that relative library and share paths still resolve.
func pinnedBinaries(bin, dir, cpus string) (string, error) {
	return wrappedBinaries(bin, dir, "", cpus)
}

// wrappedBinaries is pinnedBinaries whose postgres also runs the shell
// lines prelude (with the server's arguments in "$@") before it execs
// the server: under taskset on cpus, or alone for no cpus.
func wrappedBinaries(bin, dir, prelude, cpus string) (string, error) {
	var taskset string
	var err error
	if cpus != "" {
		if taskset, err = exec.LookPath("taskset"); err != nil {
			return "", fmt.Errorf("-server-cpus needs taskset (util-linux): %w", err)
		}
	}
	bin, err = pgcluster.FindBinDir(bin, "pg_ctl", "postgres")
	if err != nil {
		return "", err
	}
	if bin, err = filepath.Abs(bin); err != nil {
		return "", err
	}
	if bin, err = filepath.EvalSymlinks(bin); err != nil {
		return "", err
	}
	root := filepath.Dir(bin)
	entries, err := os.ReadDir(root)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	for _, e := range entries {
		if e.Name() == filepath.Base(bin) {
			continue
		}
		if err := os.Symlink(filepath.Join(root, e.Name()), filepath.Join(dir, e.Name())); err != nil && !os.IsExist(err) {
			return "", err
		}
	}
	pinned := filepath.Join(dir, filepath.Base(bin))
	if err := os.MkdirAll(pinned, 0o755); err != nil {
		return "", err
	}
	programs, err := os.ReadDir(bin)
	if err != nil {
		return "", err
	}
	for _, p := range programs {
		from, to := filepath.Join(bin, p.Name()), filepath.Join(pinned, p.Name())
		switch p.Name() {
		case "postgres":
			pin := ""
			if cpus != "" {
				pin = shellQuote(taskset) + " -c " + shellQuote(cpus) + " "
			}
			script := fmt.Sprintf("#!/bin/sh\n%sexec %s%s \"$@\"\n", prelude, pin, shellQuote(from))
			err = os.WriteFile(to, []byte(script), 0o755)
		case "pg_ctl":
			if err = copyFile(from, to); err == nil {
				err = os.Chmod(to, 0o755)
			}
		default:
			err = os.Symlink(from, to)
		}
		if err != nil && !os.IsExist(err) {
			return "", err
		}
	}
	// The servers run as their own user, which must reach the copy:
	// the directories up to the bench's output directory (dir is two
	// below it) are opened to it, and one above that is an error.
	top := filepath.Dir(filepath.Dir(dir))
	for d := pinned; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return "", err
		}
		if fi.Mode().Perm()&0o001 == 0 {
			if len(d) < len(top) {
				return "", fmt.Errorf("%s: the servers' user cannot enter it (mode %v), so it cannot run the pinned binaries below it: choose an -out it can reach", d, fi.Mode().Perm())
			}
			if err := os.Chmod(d, fi.Mode().Perm()|0o005); err != nil {
				return "", err
			}
		}
		if d == "/" || d == "." {
			break
		}
	}
	return pinned, nil
}

// shellQuote quotes s for sh: a path with a space or a quote in it
// stays one word.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
