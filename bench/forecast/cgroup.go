package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// Changes of the machine (issue 76): the candidate's server runs in a
// cgroup of its own, with a CPU quota (half-cpu) or a memory limit that
// includes its page cache (mem-limit), while the control runs as it is.
// The server's binaries are wrapped (wrappedBinaries) so that the
// postmaster moves itself into the cgroup before it execs postgres: every
// backend it forks later inherits it, and so does every start by
// rehearse's datadir reset, which restarts a cluster with the binaries it
// was started with. cgroup v1 only (the cpu and memory controllers
// mounted apart); where they are not, the change fails saying so.

// cgroupRoot is where the cgroup v1 hierarchies are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// cfsPeriodUS is the CPU quota's period (cpu.cfs_period_us), µs.
const cfsPeriodUS = 100000

// serverCgroup is the candidate's cgroup: one directory a controller.
type serverCgroup struct {
	dirs   []string
	memory string // the memory controller's directory; empty: none
	cpu    string // the cpu controller's directory; empty: none
}

// limitMemory sets the cgroup's memory limit (page cache included):
// with its server stopped, so that what the server held is no longer
// charged.
func (g *serverCgroup) limitMemory(bytes int64) error {
	if g.memory == "" {
		return errors.New("the cgroup has no memory controller")
	}
	if err := os.WriteFile(filepath.Join(g.memory, "memory.limit_in_bytes"), []byte(strconv.FormatInt(bytes, 10)), 0o644); err != nil {
		return err
	}
	// The peak and the hits from here on: the data's build, without the
	// limit, had charged about 1 GB to the peak that bound() reported as
	// the limited server's (a 256 MB limit, "peak 1088 MB"). Writing 0
	// resets both counters (cgroup v1).
	for _, f := range []string{"memory.max_usage_in_bytes", "memory.failcnt"} {
		if err := os.WriteFile(filepath.Join(g.memory, f), []byte("0"), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// newServerCgroup makes the cgroup name below this process's own in each
// controller the limits need: cpu when cpus > 0 (a quota of that many
// CPUs), memory when memory (its limit set later, by limitMemory). Below
// its own, so that whatever accounts for this process still accounts for
// the server.
func newServerCgroup(name string, cpus float64, memory bool) (*serverCgroup, error) {
	g := &serverCgroup{}
	type limit struct {
		controller string
		files      [][2]string
	}
	var limits []limit
	if cpus > 0 {
		limits = append(limits, limit{"cpu", [][2]string{
			{"cpu.cfs_period_us", strconv.Itoa(cfsPeriodUS)},
			{"cpu.cfs_quota_us", strconv.FormatInt(int64(cpus*cfsPeriodUS), 10)}}})
	}
	if memory {
		limits = append(limits, limit{"memory", nil})
	}
	for _, l := range limits {
		own, err := ownCgroup(l.controller)
		if err != nil {
			return nil, errors.Join(err, g.remove())
		}
		dir := filepath.Join(cgroupRoot, l.controller, own, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return nil, errors.Join(fmt.Errorf("cgroup v1 %s controller: %w (the change needs root and cgroup v1's %s controller at %s)",
				l.controller, err, l.controller, filepath.Join(cgroupRoot, l.controller)), g.remove())
		}
		g.dirs = append(g.dirs, dir)
		switch l.controller {
		case "memory":
			g.memory = dir
		case "cpu":
			g.cpu = dir
		}
		for _, f := range l.files {
			if err := os.WriteFile(filepath.Join(dir, f[0]), []byte(f[1]), 0o644); err != nil {
				return nil, errors.Join(fmt.Errorf("cgroup %s: %w", dir, err), g.remove())
			}
		}
		// The server runs as its own user, and moves itself in.
		if err := os.Chmod(filepath.Join(dir, "cgroup.procs"), 0o666); err != nil {
			return nil, errors.Join(err, g.remove())
		}
	}
	return g, nil
}

// ownCgroup returns this process's cgroup path in the v1 hierarchy of
// controller, checking that the hierarchy is mounted where
// newServerCgroup looks.
func ownCgroup(controller string) (string, error) {
	if _, err := os.Stat(filepath.Join(cgroupRoot, controller, "cgroup.procs")); err != nil {
		return "", fmt.Errorf("no cgroup v1 %s controller at %s: %w", controller, filepath.Join(cgroupRoot, controller), err)
	}
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	defer f.Close()
	return ownCgroupIn(bufio.NewScanner(f), controller)
}

// ownCgroupIn reads /proc/self/cgroup's lines (ID:CONTROLLERS:PATH) and
// returns the path of the hierarchy whose controllers include controller.
func ownCgroupIn(sc *bufio.Scanner, controller string) (string, error) {
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == controller {
				return parts[2], nil
			}
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("this process is in no cgroup v1 hierarchy of the %s controller (/proc/self/cgroup)", controller)
}

// shellLines are the wrapper's lines that move the shell into the cgroup
// ($$ stays the postmaster's pid through exec).
func (g *serverCgroup) shellLines() string {
	var b strings.Builder
	for _, d := range g.dirs {
		p := shellQuote(filepath.Join(d, "cgroup.procs"))
		fmt.Fprintf(&b, "echo $$ > %s || { echo \"cannot join the cgroup %s\" >&2; exit 1; }\n", p, d)
	}
	return b.String()
}

// bound says how much the limits bit over the cgroup's life (the
// change's truth rounds and rehearsal together): the CPU quota's
// throttled periods (cpu.stat) and the memory limit's hits
// (memory.failcnt) with the peak charged. A change of the machine that
// never bound measured nothing of it, whatever its table says.
func (g *serverCgroup) bound() string {
	var parts []string
	if g.cpu != "" {
		if b, err := os.ReadFile(filepath.Join(g.cpu, "cpu.stat")); err == nil {
			st := cpuStat(string(b))
			parts = append(parts, fmt.Sprintf("CPU quota throttled %d of %d periods (%.1f s)",
				st["nr_throttled"], st["nr_periods"], float64(st["throttled_time"])/1e9))
		}
	}
	if g.memory != "" {
		hits, err1 := os.ReadFile(filepath.Join(g.memory, "memory.failcnt"))
		peak, err2 := os.ReadFile(filepath.Join(g.memory, "memory.max_usage_in_bytes"))
		if err1 == nil && err2 == nil {
			p, _ := strconv.ParseInt(strings.TrimSpace(string(peak)), 10, 64)
			parts = append(parts, fmt.Sprintf("memory limit hit %s times, peak %d MB", strings.TrimSpace(string(hits)), p>>20))
		}
	}
	if len(parts) == 0 {
		return "its limits could not be read"
	}
	return strings.Join(parts, "; ")
}

// cpuStat reads cpu.stat's "name value" lines.
func cpuStat(text string) map[string]int64 {
	st := map[string]int64{}
	for line := range strings.Lines(text) {
		name, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			continue
		}
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			st[name] = n
		}
	}
	return st
}

// remove removes the cgroup's directories (once its processes are gone).
func (g *serverCgroup) remove() error {
	var errs []error
	for _, d := range g.dirs {
		if err := os.Remove(d); err != nil && !os.IsNotExist(err) {
			errs = append(errs, err)
		}
	}
	g.dirs = nil
	return errors.Join(errs...)
}

// dropCacheLines are the wrapper's lines that drop the page cache of the
// data directory's files before the server starts: the restore that
// precedes every start copies them, and the copy's pages, charged to the
// copier's cgroup, would serve the limited server's reads for free.
// sync first: only clean pages are dropped.
const dropCacheLines = `d=; prev=
for a in "$@"; do [ "$prev" = -D ] && d=$a; prev=$a; done
if [ -n "$d" ] && [ -d "$d/base" ]; then
	find "$d/base" "$d/global" -type f -exec sync {} +
	find "$d/base" "$d/global" -type f -exec sh -c 'for f; do dd if="$f" iflag=nocache count=0 status=none; done' sh {} +
fi
`

// cpuCount is how many CPUs the control's server has: those of the
// taskset list cpus (-server-cpus), or all of them.
func cpuCount(cpus string) (int, error) {
	if cpus == "" {
		return runtime.NumCPU(), nil
	}
	n := 0
	for _, part := range strings.Split(cpus, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return 0, fmt.Errorf("CPU list %q: %w", cpus, err)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				return 0, fmt.Errorf("CPU list %q: %w", cpus, err)
			}
		}
		if b < a {
			return 0, fmt.Errorf("CPU list %q: range %s backwards", cpus, part)
		}
		n += b - a + 1
	}
	return n, nil
}
