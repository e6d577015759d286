package sweep

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/pgrehearse/pgrehearse/internal/connstr"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
)

// Pgbench drives a step with pgbench.
type Pgbench struct {
	// Path is the pgbench binary; empty means FindPgbench's choice.
	Path string
	// Builtin is a built-in script (select-only, tpcb-like,
	// simple-update); Script a script file. Exactly one is set.
	Builtin string
	Script  string
	// Mode is the query mode: simple, extended or prepared.
	Mode string
}

// Modes are pgbench's query modes.
var Modes = []string{"simple", "extended", "prepared"}

// Check validates the driver's settings.
func (p *Pgbench) Check() error {
	if (p.Builtin == "") == (p.Script == "") {
		return errors.New("a pgbench workload needs either a built-in script or a script file, not both")
	}
	if !slices.Contains(Modes, p.Mode) {
		return fmt.Errorf("query mode %q: want one of %s", p.Mode, strings.Join(Modes, ", "))
	}
	if p.Script != "" {
		if _, err := os.Stat(p.Script); err != nil {
			return fmt.Errorf("script: %w", err)
		}
	}
	return nil
}

// Info implements Driver.
func (p *Pgbench) Info() WorkloadInfo {
	return WorkloadInfo{Kind: "pgbench", Builtin: p.Builtin, Script: p.Script, Mode: p.Mode}
}

// FindPgbench returns the pgbench to use: the one in binDir if given,
// else where pgcluster.FindBinDir finds it ($PG_BIN, the newest
// /usr/lib/postgresql/*/bin, $PATH).
func FindPgbench(binDir string) (string, error) {
	dir, err := pgcluster.FindBinDir(binDir, "pgbench")
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "pgbench"), nil
}

func (p *Pgbench) path() (string, error) {
	if p.Path != "" {
		return p.Path, nil
	}
	return FindPgbench("")
}

// Init implements Driver: pgbench -i at the given scale, quietly.
func (p *Pgbench) Init(ctx context.Context, dsn string, scale int) error {
	bin, err := p.path()
	if err != nil {
		return err
	}
	dsn, env, err := pgbenchConn(dsn)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, bin, "-i", "-q", "-s", strconv.Itoa(scale), dsn)
	cmd.Dir = os.TempDir()
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pgbench -i: %w\n%s", err, tailLines(out, 20))
	}
	return nil
}

// pgbenchConn is how pgbench is told to connect to dsn: the connection
// string without its password, for its command line, and this process's
// environment with the password as PGPASSWORD, which libpq reads. A
// command line is readable by every user of the machine (ps); a
// process's environment only by its own user.
func pgbenchConn(dsn string) (arg string, env []string, err error) {
	arg, password, err := connstr.WithoutPassword(dsn)
	if err != nil {
		return "", nil, fmt.Errorf("pgbench: %w", err)
	}
	env = os.Environ()
	if password != "" {
		env = append(env, "PGPASSWORD="+password)
	}
	return arg, env, nil
}

// args returns pgbench's command line for a step, the connection string
// last, as pgbench's database name (which pgbench expands as a connection
// string).
func (p *Pgbench) args(spec RunSpec, logPrefix string) []string {
	total := spec.Warmup + spec.Duration + Tail
	a := []string{
		"-c", strconv.Itoa(spec.Clients),
		"-j", strconv.Itoa(spec.Threads),
		"-T", strconv.Itoa(int(total / time.Second)),
		"-P", "1",
		"-M", p.Mode,
		"-l", "--log-prefix", logPrefix,
	}
	if spec.SamplingRate > 0 && spec.SamplingRate < 1 {
		a = append(a, "--sampling-rate", strconv.FormatFloat(spec.SamplingRate, 'g', 6, 64))
	}
	if p.Builtin != "" {
		a = append(a, "-b", p.Builtin)
	} else {
		// A script's tables are not pgbench's: do not vacuum them.
		a = append(a, "-n", "-f", p.Script)
	}
	return append(a, spec.DSN)
}

// Run implements Driver. The window starts when pgbench reports the
// progress interval that ends the warm-up, and lasts spec.Duration. TPS
// and the mean latency come from the progress reports inside the window,
// the percentiles from the per-transaction log lines completed inside it.
func (p *Pgbench) Run(ctx context.Context, spec RunSpec) (Load, error) {
	var load Load
	bin, err := p.path()
	if err != nil {
		return load, err
	}
	dir, err := os.MkdirTemp("", "pgrehearse-sweep-")
	if err != nil {
		return load, err
	}
	defer os.RemoveAll(dir)

	dsn, env, err := pgbenchConn(spec.DSN)
	if err != nil {
		return load, err
	}
	spec.DSN = dsn
	cmd := exec.CommandContext(ctx, bin, p.args(spec, filepath.Join(dir, "tx"))...)
	cmd.Dir = dir
	cmd.Env = env
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return load, err
	}
	if err := cmd.Start(); err != nil {
		return load, fmt.Errorf("start pgbench: %w", err)
	}

	warmup := spec.Warmup.Seconds()
	var (
		reports []Progress
		other   []string
		start   time.Time
		started bool
		once    sync.Once
	)
	open := func() {
		once.Do(func() {
			start, started = time.Now(), true
			if spec.OnWindow != nil {
				spec.OnWindow(start)
			}
		})
	}
	if warmup == 0 {
		open()
	}
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		line := sc.Text()
		if pr, ok := ParseProgress(line); ok {
			reports = append(reports, pr)
			if pr.At >= warmup-1e-9 {
				open()
			}
			continue
		}
		other = append(other, line)
		if len(other) > 50 {
			other = other[1:]
		}
	}
	waitErr := cmd.Wait()
	if ctx.Err() != nil {
		return load, ctx.Err()
	}
	if waitErr != nil {
		return load, fmt.Errorf("pgbench %s: %w\n%s%s", strings.Join(cmd.Args[1:len(cmd.Args)-1], " "), waitErr,
			tailLines(stdout.Bytes(), 5), strings.Join(other, "\n"))
	}
	sum, err := ParseSummary(stdout.Bytes())
	if err != nil {
		return load, fmt.Errorf("%w\n%s", err, strings.Join(other, "\n"))
	}
	if !started {
		return load, fmt.Errorf("pgbench never reported the end of its %v warm-up (progress lines: %d)", spec.Warmup, len(reports))
	}
	load.SummaryTPS = sum.TPS
	load.WindowStart = start
	load.TPS, load.Transactions, load.Failed, load.Latency.Mean, load.WindowS =
		windowStats(reports, warmup, warmup+spec.Duration.Seconds())
	if load.WindowS == 0 {
		return load, fmt.Errorf("pgbench reported no progress inside the measured window (%d reports)", len(reports))
	}

	h, err := latencies(dir, start, start.Add(spec.Duration))
	if err != nil {
		return load, err
	}
	load.LatencySamples = h.TotalCount()
	if load.LatencySamples > 0 {
		ms := func(q float64) float64 { return float64(h.ValueAtQuantile(q)) / 1000 }
		load.Latency.P50, load.Latency.P95, load.Latency.P99 = ms(50), ms(95), ms(99)
		load.Latency.Max = float64(h.Max()) / 1000
	}
	return load, nil
}

// latencies reads every per-transaction log in dir (one per pgbench
// thread) into a histogram of microseconds, keeping the transactions
// completed in [from, to).
func latencies(dir string, from, to time.Time) (*hdrhistogram.Histogram, error) {
	// 1 µs to 1 hour at 3 significant digits.
	h := hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 3)
	files, err := filepath.Glob(filepath.Join(dir, "tx.*"))
	if err != nil {
		return nil, err
	}
	lo, hi := from.UnixMicro(), to.UnixMicro()
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		err = readTxLog(f, func(r TxRecord) {
			if r.Failed || r.Skipped || r.EndUS < lo || r.EndUS >= hi {
				return
			}
			_ = h.RecordValue(max(r.LatencyUS, 1)) // above an hour: dropped
		})
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	return h, nil
}

func tailLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	s := strings.Join(lines, "\n")
	if s != "" {
		s += "\n"
	}
	return s
}
