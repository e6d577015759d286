package versionsdoc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
)

var (
	update  = flag.Bool("update", false, "write docs/versions.md from -results")
	results = flag.String("results", "", "go test -json output of the per-version tests (make test-versions writes .cache/test-versions.json)")
)

// VersionPackages hold the per-version tests; the Makefile's
// VERSION_PKGS must list the same.
var VersionPackages = []string{"internal/pgcluster", "internal/observe", "internal/catalog", "internal/explain", "internal/cli"}

// cell is one capability on one version: the test (or subtest) that
// checks it and its outcome.
type cell struct {
	row    string
	major  int
	action string // pass, fail, skip
}

// known are the per-version tests rowOf maps.
var known = map[string]bool{
	"TestVersionsStart": true, "TestVersionsStartState": true, "TestVersionsDigests": true, "TestVersionsPGSS": true, "TestVersionsObserve": true,
	"TestVersionsObserve18StartingBackend": true, "TestVersionsExplain": true,
	"TestVersionsAnalyzeMatchesPgStatStatements": true, "TestVersionsDemoUpgrade": true,
	"TestVersionsReplaySync": true, "TestVersionsRehearseTemplate": true, "TestVersionsFindings": true,
	"TestVersionsSweep": true, "TestVersionsShardCoordination": true, "TestVersionsCaptureProxy": true,
}

// rowOf maps a per-version (sub)test's name to the capability it checks
// and the major version it ran on; ok is false for a parent test that
// only groups subtests.
func rowOf(name string) (row string, major int, ok bool) {
	parts := strings.Split(name, "/")
	atoi := func(i int) int {
		if i >= len(parts) {
			return 0
		}
		n, _ := strconv.Atoi(parts[i])
		return n
	}
	switch parts[0] {
	case "TestVersionsStart":
		return "server starts; pg_stat_statements preloaded; the installed pgbench drives it", atoi(1), len(parts) == 2
	case "TestVersionsPGSS":
		if len(parts) == 3 {
			return "catalog reads pg_stat_statements created at " + strings.TrimPrefix(parts[2], "pgss-") + " (as pg_upgrade leaves it)", atoi(1), true
		}
		return "catalog reads pg_stat_statements", atoi(1), len(parts) == 2
	case "TestVersionsStartState":
		return "catalog reads a capture's start state as pg_monitor (reltuples never analyzed: unknown) and checks a copy against it", atoi(1), len(parts) == 2
	case "TestVersionsDigests":
		return "table digests equal to the first version's, range by range, on servers writing values otherwise (an upgrade's candidate matches its source)", atoi(1), len(parts) == 2
	case "TestVersionsObserve":
		if len(parts) == 3 {
			return "observe with pg_stat_statements " + strings.TrimPrefix(parts[2], "pgss-") + ": exact calls, wait events", atoi(1), true
		}
		return "observe: pg_stat_statements calls exact, wait events sampled", atoi(1), len(parts) == 2
	case "TestVersionsObserve18StartingBackend":
		return "observe while connections log in (shown from 18, datid null)", 18, len(parts) == 1
	case "TestVersionsExplain":
		return pairRow(parts, "explain: generic and analyzed custom plans, same plan on the same data",
			"explain: control on %d, candidate on this version: same plan")
	case "TestVersionsDemoUpgrade":
		return pairRow(parts, "demo workload rehearsed A/A, control and candidate on this version: PASS (or undecided over its 3 rounds), no regression",
			"demo workload rehearsed from %d to this version: no divergence, no plan change, any slowdown the version's")
	case "TestVersionsReplaySync":
		if len(parts) != 3 {
			return "", 0, false
		}
		return "replay with --sync at " + strings.Replace(parts[2], "speed", "speed ", 1) + ": nothing fails only on it, the original's final tables", atoi(1), true
	case "TestVersionsRehearseTemplate":
		return "rehearse with --reset template (STRATEGY FILE_COPY from 15): every round from the same tables, no copy left", atoi(1), len(parts) == 2
	case "TestVersionsFindings":
		return "findings on its csvlog with its catalog (--dsn)", atoi(1), len(parts) == 2
	case "TestVersionsSweep":
		return "sweep on it (--target): every step measured, the sampler without an error", atoi(1), len(parts) == 2
	case "TestVersionsShardCoordination":
		return "sharded replay (3 shards, --sync across them) with its coordination database on it", atoi(1), len(parts) == 2
	case "TestVersionsCaptureProxy":
		return "capture proxy (a client asking protocol 3.2; 18's 32-byte cancel key): the capture replays, answers and pg_stat_statements calls the original's", atoi(1), len(parts) == 2
	case "TestVersionsAnalyzeMatchesPgStatStatements":
		if len(parts) != 3 {
			return "", 0, false
		}
		format := map[string]string{"*.log": "stderr", "*.csv": "csvlog", "*.json": "jsonlog"}[parts[2]]
		return "log reader (" + format + "): calls per query equal pg_stat_statements'", atoi(1), true
	}
	return "", 0, false
}

// pairRow is the row of a subtest named CONTROL-CANDIDATE (two majors)
// under parts[0]: same when both are one version, else from, given the
// control's; its major is the candidate's.
func pairRow(parts []string, same, from string) (row string, major int, ok bool) {
	if len(parts) != 2 {
		return "", 0, false
	}
	ctl, cand, _ := strings.Cut(parts[1], "-")
	c, _ := strconv.Atoi(ctl)
	d, _ := strconv.Atoi(cand)
	if c == d {
		return same, d, true
	}
	return fmt.Sprintf(from, c), d, true
}

// readResults reads go test -json output and returns the outcome of
// every (sub)test rowOf knows, and the top-level tests seen.
func readResults(t *testing.T, path string) ([]cell, map[string]bool) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cells []cell
	tests := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev struct{ Action, Test string }
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Test == "" {
			continue
		}
		if ev.Action != "pass" && ev.Action != "fail" && ev.Action != "skip" {
			continue
		}
		top, _, _ := strings.Cut(ev.Test, "/")
		tests[top] = true
		if row, major, ok := rowOf(ev.Test); ok {
			cells = append(cells, cell{row, major, ev.Action})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cells, tests
}

// pinned returns hack/pg-versions.txt's lines, "13 13.23.0-beta.16".
func pinned(t *testing.T, root string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "hack", "pg-versions.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, strings.Join(strings.Fields(l), " "))
		}
	}
	return out
}

var testFunc = regexp.MustCompile(`(?m)^func (TestVersions\w*)\(`)

// versionTests returns the per-version tests the packages define.
func versionTests(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	for _, pkg := range VersionPackages {
		files, _ := filepath.Glob(filepath.Join(root, pkg, "*_test.go"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range testFunc.FindAllSubmatch(b, -1) {
				if known[string(m[1])] {
					out = append(out, pkg+"."+string(m[1]))
				} else {
					t.Errorf("%s: %s is a per-version test that rowOf does not map to a row of docs/versions.md", pkg, m[1])
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

func render(pins, tests []string, cells []cell) []byte {
	var b bytes.Buffer
	b.WriteString(`# PostgreSQL versions

<!-- Generated by ` + "`make test-versions`" + ` (internal/versionsdoc) from the results
of the run: do not edit. -->

pgrehearse is tested on PostgreSQL 13 to 18 with real servers: the builds that
` + "`make pg-versions`" + ` fetches (hack/pg-versions.txt pins them) run from
` + "`.cache/pg/<major>`" + ` through ` + "`pgcluster.Options{Version: major}`" + `. They have no
pgbench or psql; the installed pgbench (Debian's 15) drives every version.

Each cell is the outcome of the test that checks that capability on that
version in the last ` + "`make test-versions`" + ` run: **pass**, **FAIL**, or – where
nothing ran (the capability does not exist on that version, or the test does
not cover it). ` + "`make test`" + ` runs the same tests with one case per capability.

`)
	b.WriteString("Versions: ")
	for i, p := range pins {
		if i > 0 {
			b.WriteString(", ")
		}
		major, full, _ := strings.Cut(p, " ")
		fmt.Fprintf(&b, "%s (`%s`)", major, full)
	}
	b.WriteString("\n\n| capability |")
	for _, m := range pgcluster.Majors {
		fmt.Fprintf(&b, " %d |", m)
	}
	b.WriteString("\n| --- |")
	for range pgcluster.Majors {
		b.WriteString(" --- |")
	}
	b.WriteString("\n")
	var rows []string
	outcome := map[string]map[int]string{}
	for _, c := range cells {
		if outcome[c.row] == nil {
			outcome[c.row] = map[int]string{}
			rows = append(rows, c.row)
		}
		// A failure anywhere in the cell wins.
		if outcome[c.row][c.major] != "fail" {
			outcome[c.row][c.major] = c.action
		}
	}
	slices.Sort(rows)
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s |", r)
		for _, m := range pgcluster.Majors {
			s := map[string]string{"pass": "pass", "fail": "**FAIL**", "skip": "skipped", "": "–"}[outcome[r][m]]
			fmt.Fprintf(&b, " %s |", s)
		}
		b.WriteString("\n")
	}
	b.WriteString("\nThe tests, by package:\n\n")
	for _, tt := range tests {
		fmt.Fprintf(&b, "- `%s`\n", tt)
	}
	return b.Bytes()
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(filepath.Dir(wd))
}

// TestVersionsDoc writes docs/versions.md from a run's results with
// -update, and otherwise checks that it names the pinned versions and
// every per-version test.
func TestVersionsDoc(t *testing.T) {
	root := moduleRoot(t)
	doc := filepath.Join(root, "docs", "versions.md")
	pins := pinned(t, root)
	tests := versionTests(t, root)
	if len(pins) != len(pgcluster.Majors) {
		t.Errorf("hack/pg-versions.txt pins %d versions, pgcluster.Majors has %d", len(pins), len(pgcluster.Majors))
	}
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, p := range VersionPackages {
		want = append(want, "./"+p)
	}
	if line := "VERSION_PKGS := " + strings.Join(want, " "); !bytes.Contains(mk, []byte(line+"\n")) {
		t.Errorf("the Makefile does not say %q", line)
	}
	if *update {
		if *results == "" {
			t.Fatal("-update needs -results, the go test -json output of the per-version tests")
		}
		cells, ran := readResults(t, *results)
		// A test that did not run (its package failed to build) has no
		// row and is not listed: the check without -update then fails
		// until a run reports it.
		var reported []string
		for _, tt := range tests {
			if _, name, _ := strings.Cut(tt, "."); ran[name] {
				reported = append(reported, tt)
			} else {
				t.Errorf("%s did not run: docs/versions.md has nothing of it", tt)
			}
		}
		if len(cells) == 0 {
			t.Fatal("no per-version results in " + *results)
		}
		out := render(pins, reported, cells)
		if err := os.WriteFile(doc, out, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s:\n%s", doc, out)
		return
	}
	b, err := os.ReadFile(doc)
	if err != nil {
		t.Fatalf("%v: run `make test-versions`", err)
	}
	for _, p := range pins {
		major, full, _ := strings.Cut(p, " ")
		if !bytes.Contains(b, []byte(fmt.Sprintf("%s (`%s`)", major, full))) {
			t.Errorf("docs/versions.md is not of %s as pinned: run `make test-versions`", p)
		}
	}
	for _, tt := range tests {
		if !bytes.Contains(b, []byte("- `"+tt+"`\n")) {
			t.Errorf("docs/versions.md has no results of %s: run `make test-versions`", tt)
		}
	}
	for _, m := range regexp.MustCompile("(?m)^- `(internal/[^`]+)`$").FindAllSubmatch(b, -1) {
		if !slices.Contains(tests, string(m[1])) {
			t.Errorf("docs/versions.md reports %s, which no longer exists: run `make test-versions`", m[1])
		}
	}
}
