package replay

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"syscall"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/syncdep"
	"github.com/pgrehearse/pgrehearse/internal/workload"
)

// An engine against another build of itself, in the same run: with
// BENCH_BASELINE set to a test binary of this package built from another
// commit (this file copied into its tree), BenchmarkSpeed0Experiment
// runs in each round, besides its own replay, that binary's
// BenchmarkReplayOnce on the same capture and server, and prints both
// against pgbench. The other build replays in a process of its own; what
// it reports is measured around its replay only, as here.

// BenchmarkReplayOnce replays BENCH_REPLAY_LOG against BENCH_REPLAY_DSN
// at speed 0 (BENCH_SYNC) and prints one line that baselineReplay reads:
// the statements run, the wall seconds and the process's CPU seconds
// during the replay. It is not a benchmark of its own: without those
// variables it skips.
func BenchmarkReplayOnce(b *testing.B) {
	log, dsn := os.Getenv("BENCH_REPLAY_LOG"), os.Getenv("BENCH_REPLAY_DSN")
	if log == "" || dsn == "" {
		b.Skip("BENCH_REPLAY_LOG and BENCH_REPLAY_DSN not set: run by BenchmarkSpeed0Experiment's BENCH_BASELINE")
	}
	for b.Loop() {
		self0 := cpuTime(syscall.RUSAGE_SELF)
		res := replayLog(b, log, workload.LogLinePrefix, Options{Target: dsn, Speed: 0, Sync: benchSync(b)})
		cpu := cpuTime(syscall.RUSAGE_SELF) - self0
		fmt.Printf("replay-once: ran %d wall %.6f cpu %.6f\n", res.Statements.Executed+res.Statements.Failed, res.WallSeconds, cpu)
	}
}

var replayOnceRe = regexp.MustCompile(`replay-once: ran (\d+) wall ([0-9.]+) cpu ([0-9.]+)`)

// baselineReplay runs bin's BenchmarkReplayOnce on log against dsn and
// returns its statements/s and CPU seconds per statement. The child
// inherits this process's CPU affinity, and so the layout.
func baselineReplay(b *testing.B, bin, log, dsn string) (rate, cpuPerStmt float64) {
	cmd := exec.Command(bin, "-test.run", "^$", "-test.bench", "^BenchmarkReplayOnce$", "-test.benchtime", "1x")
	cmd.Env = append(os.Environ(), "BENCH_REPLAY_LOG="+log, "BENCH_REPLAY_DSN="+dsn, "BENCH_PROFILE=")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		b.Fatalf("baseline %s: %v\n%s", bin, err, out.Bytes())
	}
	m := replayOnceRe.FindSubmatch(out.Bytes())
	if m == nil {
		b.Fatalf("baseline %s printed no result:\n%s", bin, out.Bytes())
	}
	ran, wall, cpu := atof(string(m[1])), atof(string(m[2])), atof(string(m[3]))
	return ran / wall, cpu / ran
}

// benchSync is the synchronization of the benchmarks' replays:
// BENCH_SYNC (object, as the CLI's default; commit or off).
func benchSync(b *testing.B) syncdep.Mode {
	m, err := syncdep.ParseMode(envString("BENCH_SYNC", "object"))
	if err != nil {
		b.Fatal(err)
	}
	return m
}
