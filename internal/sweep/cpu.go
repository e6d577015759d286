package sweep

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of the times in /proc/<pid>/stat. It is
// 100 on every Linux architecture Go supports (the kernel fixes it for
// user space whatever CONFIG_HZ is), and reading it with sysconf would need
// cgo.
const clockTicks = 100

// procStat is what serverCPU needs of /proc/<pid>/stat.
type procStat struct {
	ppid                         int
	utime, stime, cutime, cstime int64 // clock ticks
}

// readProcStat parses /proc/<pid>/stat. The command name, field 2, is in
// parentheses and may hold spaces and parentheses, so the fields are
// counted from the last ')'.
func readProcStat(procDir string, pid int) (procStat, error) {
	var s procStat
	b, err := os.ReadFile(filepath.Join(procDir, strconv.Itoa(pid), "stat"))
	if err != nil {
		return s, err
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return s, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	// Fields from 3 (state) on; utime is field 14.
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 15 {
		return s, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	num := func(k int) int64 { v, _ := strconv.ParseInt(f[k-3], 10, 64); return v }
	s.ppid = int(num(4))
	s.utime, s.stime, s.cutime, s.cstime = num(14), num(15), num(16), num(17)
	return s, nil
}

// serverCPU returns the CPU seconds used so far by the postmaster pid and
// its children: the children alive now, and through the postmaster's
// cutime and cstime every child that has exited and been reaped. The
// difference of two readings is the CPU used in between, even by backends
// that came and went. The postmaster's own cutime also holds its children
// from before, which the difference cancels.
func serverCPU(procDir string, pid int) (float64, error) {
	pm, err := readProcStat(procDir, pid)
	if err != nil {
		return 0, fmt.Errorf("postmaster %d: %w", pid, err)
	}
	ticks := pm.utime + pm.stime + pm.cutime + pm.cstime
	entries, err := os.ReadDir(procDir)
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil || child == pid {
			continue
		}
		s, err := readProcStat(procDir, child)
		if err != nil || s.ppid != pid {
			continue // gone meanwhile, or not ours
		}
		// A child's own children (none in PostgreSQL) would be in its
		// cutime once reaped.
		ticks += s.utime + s.stime + s.cutime + s.cstime
	}
	return float64(ticks) / clockTicks, nil
}

// postmasterPID reads the postmaster's pid and port from postmaster.pid in
// dataDir: its first line is the pid, its fourth the port.
func postmasterPID(dataDir string) (pid, port int, err error) {
	f, err := os.Open(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var lines []string
	for sc.Scan() && len(lines) < 4 {
		lines = append(lines, strings.TrimSpace(sc.Text()))
	}
	if len(lines) < 1 {
		return 0, 0, errors.New("postmaster.pid is empty")
	}
	pid, err = strconv.Atoi(lines[0])
	if err != nil {
		return 0, 0, fmt.Errorf("postmaster.pid: pid %q: %w", lines[0], err)
	}
	if len(lines) >= 4 {
		port, _ = strconv.Atoi(lines[3])
	}
	return pid, port, nil
}
