// Command samereplay checks that a change left a replay's results as they
// were: it captures the mixed workload (internal/workload: pgbench in three
// protocols, an application with transactions, errors and connection
// churn) on a throwaway server, then replays that log with a reference
// binary and with a new one, each onto a fresh throwaway server at speed
// 0, and compares what the two results measured: the statement, session,
// line and filtered accounting, the outcomes against the original, the
// errors by SQLSTATE, and per query fingerprint the calls, errors and
// rows. Timings (latencies, wall clock) are not compared: they are the
// target's, not the replayer's.
//
// Usage: go run ./hack/samereplay REFERENCE_BINARY NEW_BINARY [runs]
//
// The reference binary is built from an earlier commit, outside the
// repository. Exit status 0 when every run of the new binary equals the
// reference's, 1 otherwise.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/workload"
)

// measured is what a replay measured, without its timings.
type measured struct {
	Statements results.StatementCounts
	Sessions   int64
	Failed     int64
	Lines      *results.LineCounts
	Filtered   results.Filtered
	Outcomes   results.Outcomes
	Errors     map[string]int64
	Events     int64
	Queries    map[string][4]int64 // calls, errors, rows_calls, rows
}

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: go run ./hack/samereplay REFERENCE_BINARY NEW_BINARY [runs]")
		os.Exit(2)
	}
	ref, new := os.Args[1], os.Args[2]
	runs := 1
	if len(os.Args) > 3 {
		runs, _ = strconv.Atoi(os.Args[3])
	}
	if err := run(ref, new, runs); err != nil {
		fmt.Fprintln(os.Stderr, "samereplay:", err)
		os.Exit(1)
	}
}

func run(ref, new string, runs int) error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "samereplay-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	a, err := pgcluster.Start(ctx, pgcluster.Options{Settings: workload.LogSettings()})
	if err != nil {
		return err
	}
	if _, err := workload.Run(ctx, a, workload.Options{Duration: 3 * time.Second}); err != nil {
		a.Stop()
		return err
	}
	if err := a.StopServer(); err != nil {
		a.Stop()
		return err
	}
	logs, err := a.LogFiles("*.log")
	if err != nil || len(logs) != 1 {
		a.Stop()
		return fmt.Errorf("capture's logs %v: %v", logs, err)
	}
	log := filepath.Join(dir, "capture.log")
	b, err := os.ReadFile(logs[0])
	a.Stop()
	if err != nil {
		return err
	}
	if err := os.WriteFile(log, b, 0o644); err != nil {
		return err
	}
	fmt.Printf("capture: %d bytes of log\n", len(b))
	var base *measured
	differ := 0
	for r := range runs {
		for _, bin := range []string{ref, new} {
			m, err := replay(ctx, bin, log, filepath.Join(dir, fmt.Sprintf("r%d.json", r)))
			if err != nil {
				return fmt.Errorf("%s: %w", bin, err)
			}
			if base == nil {
				base = m
				fmt.Printf("reference: %d statements (%d executed, %d failed, skipped %v), %d sessions, %d queries\n",
					m.Statements.Total, m.Statements.Executed, m.Statements.Failed, m.Statements.Skipped, m.Sessions, len(m.Queries))
				continue
			}
			if d := diff(base, m); d != "" {
				differ++
				fmt.Printf("run %d, %s: DIFFERS from the reference's first run: %s\n", r+1, filepath.Base(bin), d)
			} else {
				fmt.Printf("run %d, %s: the same as the reference's first run\n", r+1, filepath.Base(bin))
			}
		}
	}
	if differ > 0 {
		return fmt.Errorf("%d replays differ", differ)
	}
	return nil
}

// replay replays log with bin onto a fresh server and returns what it
// measured.
func replay(ctx context.Context, bin, log, out string) (*measured, error) {
	c, err := pgcluster.Start(ctx, pgcluster.Options{})
	if err != nil {
		return nil, err
	}
	defer c.Stop()
	cmd := exec.CommandContext(ctx, bin, "replay", "--target", c.DSN("postgres"), "--speed", "0", "--observe=false", "--findings=false", "--json", out, log)
	if o, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%v:\n%s", err, o)
	}
	res, err := results.ReadFile(out)
	if err != nil {
		return nil, err
	}
	m := &measured{Statements: res.Statements, Sessions: res.Sessions.Total, Failed: res.Sessions.ConnectFailed, Lines: res.Lines,
		Filtered: res.Filtered, Outcomes: res.Outcomes, Errors: res.ErrorsBySQLState, Events: res.Reader.Events,
		Queries: map[string][4]int64{}}
	for _, q := range res.Queries {
		m.Queries[q.Fingerprint] = [4]int64{q.Calls, q.Errors, q.RowsCalls, q.Rows}
	}
	return m, nil
}

// diff names the first fields that differ.
func diff(a, b *measured) string {
	var out []string
	va, vb := reflect.ValueOf(*a), reflect.ValueOf(*b)
	for i := range va.NumField() {
		name := va.Type().Field(i).Name
		if name == "Queries" {
			continue
		}
		if !reflect.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			x, _ := json.Marshal(va.Field(i).Interface())
			y, _ := json.Marshal(vb.Field(i).Interface())
			out = append(out, fmt.Sprintf("%s %s != %s", name, x, y))
		}
	}
	var fps []string
	for fp := range a.Queries {
		fps = append(fps, fp)
	}
	for fp := range b.Queries {
		if _, ok := a.Queries[fp]; !ok {
			fps = append(fps, fp)
		}
	}
	sort.Strings(fps)
	for _, fp := range fps {
		if a.Queries[fp] != b.Queries[fp] {
			out = append(out, fmt.Sprintf("query %s %v != %v", fp, a.Queries[fp], b.Queries[fp]))
		}
	}
	if len(out) == 0 {
		return ""
	}
	return fmt.Sprint(out)
}
