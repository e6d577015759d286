//go:build linux

package replay

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
)

// pinApart puts the server's processes on the first CPU and this process
// (and so the clients it starts: pgbench, the replay) on the others, as if
// the client ran on a machine of its own: then the server is what limits
// the rate, and a client's own cost shows only if it cannot keep up. Later
// backends inherit the postmaster's CPU. GOMAXPROCS follows the CPUs left
// to this process, as on a machine of that size. The returned function
// gives the server and this process every CPU back.
func pinApart(b *testing.B, c *pgcluster.Cluster) func() {
	n := runtime.NumCPU()
	if n < 2 || n > 64 {
		b.Skipf("%d CPUs: cannot keep the server apart", n)
	}
	pidFile, err := os.ReadFile(filepath.Join(c.DataDir(), "postmaster.pid"))
	if err != nil {
		b.Fatal(err)
	}
	postmaster, _, _ := strings.Cut(string(pidFile), "\n")
	server := []string{postmaster}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold ") " itself.
		i := strings.LastIndexByte(string(data), ')')
		if fields := strings.Fields(string(data[i+1:])); i >= 0 && len(fields) > 1 && fields[1] == postmaster {
			server = append(server, filepath.Base(filepath.Dir(f)))
		}
	}
	all := uint64(1)<<n - 1
	for _, pid := range server {
		setAffinity(b, pid, 1)
	}
	setSelf := func(mask uint64) {
		tasks, _ := filepath.Glob("/proc/self/task/[0-9]*")
		for _, t := range tasks {
			setAffinity(b, filepath.Base(t), mask)
		}
	}
	setSelf(all &^ 1)
	procs := runtime.GOMAXPROCS(envInt("BENCH_APART_PROCS", n-1))
	return func() {
		for _, pid := range server {
			setAffinity(b, pid, all)
		}
		setSelf(all)
		runtime.GOMAXPROCS(procs)
	}
}

func setAffinity(b *testing.B, pid string, mask uint64) {
	id, err := strconv.Atoi(pid)
	if err != nil {
		b.Fatal(err)
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_SCHED_SETAFFINITY, uintptr(id), unsafe.Sizeof(mask), uintptr(unsafe.Pointer(&mask))); e != 0 && e != syscall.ESRCH {
		b.Fatalf("sched_setaffinity %s: %v", pid, e)
	}
}
