package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"hash/fnv"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/workload"
)

// TestMergeHalvesEqualsWhole is the results model's acceptance test: a log
// captured from a real server (pgbench in three protocols and an
// application with errors, transactions and connection churn), split by
// session into two files, analyzed half by half and merged, gives exactly
// the analysis of the whole log: per-query calls, errors and histograms,
// the timeline, the line and statement accounting, sessions and errors.
func TestMergeHalvesEqualsWhole(t *testing.T) {
	parallelCase(t)
	ctx := context.Background()
	c := pgclustertest.StartT(t, pgcluster.Options{Settings: workload.LogSettings()})
	if _, err := workload.Run(ctx, c, workload.Options{Duration: 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	jsonLog := pgclustertest.StoppedLogOf(t, c, "*.json")
	dir := t.TempDir()
	whole := filepath.Join(dir, "whole.json")
	halves := splitJSONLogBySession(t, jsonLog, dir)

	run := func(want int, args ...string) string {
		t.Helper()
		code, stdout, stderr := runCLI(ctx, "", args...)
		if code != want {
			t.Fatalf("%v: exit %d, want %d\n%s", args, code, want, stderr)
		}
		return stdout
	}
	run(ExitOK, "analyze", "--json", whole, jsonLog)
	var parts []string
	for i, h := range halves {
		out := filepath.Join(dir, "half"+string(rune('a'+i))+".json")
		run(ExitOK, "analyze", "--json", out, h)
		parts = append(parts, out)
	}
	merged := run(ExitOK, append([]string{"merge"}, parts...)...)

	w, err := results.ReadFile(whole)
	if err != nil {
		t.Fatal(err)
	}
	m, err := results.Decode([]byte(merged), "merged")
	if err != nil {
		t.Fatal(err)
	}
	a, _ := results.ReadFile(parts[0])
	b, _ := results.ReadFile(parts[1])
	if a.Statements.Total == 0 || b.Statements.Total == 0 || a.Sessions.Total == 0 || b.Sessions.Total == 0 {
		t.Fatalf("a half is empty: %+v / %+v", a.Statements, b.Statements)
	}
	if w.Statements.Failed == 0 || len(w.Queries) < 20 || w.Timeline == nil {
		t.Fatalf("the workload did not run: %+v, %d queries", w.Statements, len(w.Queries))
	}
	if got, want := comparable(t, m), comparable(t, w); got != want {
		t.Errorf("merged halves differ from the whole:\n%s", firstDiff(got, want))
	}
	// The same figures a reader looks at, spelled out.
	for _, q := range w.Queries {
		mq := m.Query(q.Fingerprint)
		if mq == nil || mq.Calls != q.Calls || mq.Errors != q.Errors || mq.P95MS != q.P95MS || mq.P99MS != q.P99MS {
			t.Errorf("%s: merged %+v, whole %+v", q.Fingerprint, mq, q)
		}
	}
}

// comparable is a result's JSON without where it came from.
func comparable(t *testing.T, r *results.Result) string {
	t.Helper()
	c := *r
	// The halves are other files than the whole: names and inputs differ.
	c.Source, c.Files, c.Input = "", nil, nil
	b, err := json.MarshalIndent(&c, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			lo := max(i-3, 0)
			return "line " + strconv.Itoa(i+1) + ":\ngot:\n" + strings.Join(g[lo:min(i+4, len(g))], "\n") +
				"\nwant:\n" + strings.Join(w[lo:min(i+4, len(w))], "\n")
		}
	}
	return "lengths differ"
}

// splitJSONLogBySession deals the records of a jsonlog file to two files by
// their session id; records of no session go to the first.
func splitJSONLogBySession(t *testing.T, path, dir string) []string {
	t.Helper()
	in, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var outs [2]bytes.Buffer
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var rec struct {
			Session string `json:"session_id"`
		}
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatalf("jsonlog line: %v", err)
		}
		i := 0
		if rec.Session != "" {
			h := fnv.New32a()
			h.Write([]byte(rec.Session))
			i = int(h.Sum32() % 2)
		}
		outs[i].Write(line)
		outs[i].WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for i := range outs {
		p := filepath.Join(dir, "half"+string(rune('a'+i))+".log.json")
		writeFile(t, p, outs[i].Bytes())
		paths = append(paths, p)
	}
	return paths
}
