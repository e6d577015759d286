// Package proctest watches this process's children through /proc, for
// tests that check what a child process was given: that a connection
// secret reaches it through its environment, never its command line,
// where anyone on the machine reads it in ps. Linux only; tests only.
package proctest

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Child is a child process of this one as a poll of /proc saw it: its
// command line and environment, NUL-separated.
type Child struct {
	PID          int
	Cmdline, Env string
}

// WatchChildren polls /proc for this process's children until stop is
// closed, and sends every reading of those match accepts.
func WatchChildren(stop <-chan struct{}, match func(cmdline string) bool) <-chan []Child {
	out := make(chan []Child, 1)
	self := strconv.Itoa(os.Getpid())
	go func() {
		var seen []Child
		for {
			select {
			case <-stop:
				out <- seen
				return
			default:
			}
			entries, _ := os.ReadDir("/proc")
			for _, e := range entries {
				if _, err := strconv.Atoi(e.Name()); err != nil {
					continue
				}
				dir := filepath.Join("/proc", e.Name())
				stat, err := os.ReadFile(filepath.Join(dir, "stat"))
				if err != nil {
					continue
				}
				// pid (comm) state ppid ...: comm may hold spaces.
				fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
				if len(fields) < 2 || fields[1] != self {
					continue
				}
				cmdline, err1 := os.ReadFile(filepath.Join(dir, "cmdline"))
				env, err2 := os.ReadFile(filepath.Join(dir, "environ"))
				if err1 != nil || err2 != nil || len(cmdline) == 0 || !match(string(cmdline)) {
					continue
				}
				pid, _ := strconv.Atoi(e.Name())
				seen = append(seen, Child{PID: pid, Cmdline: string(cmdline), Env: string(env)})
			}
			time.Sleep(2 * time.Millisecond) // a poll interval, not a synchronization
		}
	}()
	return out
}
