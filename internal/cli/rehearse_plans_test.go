package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/explain"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/rehearse"
	"github.com/pgrehearse/pgrehearse/internal/reset"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// A rehearsal of a log that creates its own table (issue 35): one round
// a side, template resets, onto two servers without pg_stat_statements;
// the candidate plans without index scans, so that the lookups on the
// table the log creates add time there and are explained.

// createdTableLog is the log: a session creates and fills jobs, looks
// rows up by id (an index scan on the control) and by id with an
// interval (whose normalized text, "interval $2", does not parse), and
// reads pg_stat_statements, which the targets do not have.
func createdTableLog(t *testing.T, user string) string {
	t.Helper()
	steps := []logStep{
		{q: "CREATE TABLE jobs (id int PRIMARY KEY, state text NOT NULL, created timestamptz NOT NULL)"},
		{q: "INSERT INTO jobs SELECT g, 'new', now() FROM generate_series(1, 50000) g"},
		// Failed in the original too, with an error of ordering's
		// SQLSTATE: no divergence.
		{q: "INSERT INTO jobs VALUES (1, 'new', now())", err: `duplicate key value violates unique constraint "jobs_pkey"`},
		{q: "copy (select count(*) from pg_stat_statements) to stdout"},
	}
	for i := range 12 {
		steps = append(steps, logStep{q: "SELECT state FROM jobs WHERE id = " + strconv.Itoa(100+i)},
			logStep{q: "SELECT count(*) FROM jobs WHERE id < " + strconv.Itoa(20+i) + " AND created > now() - interval '1 day'"})
	}
	return writeStepsLog(t, []logSession{{user, "app"}}, steps)
}

// createdTableTargets are the two targets, each with an empty database
// app; the candidate's app plans without index scans.
func createdTableTargets(t *testing.T) (ctl, cand *pgcluster.Cluster) {
	t.Helper()
	ctl, cand = pgclustertest.StartT(t, pgcluster.Options{}), pgclustertest.StartT(t, pgcluster.Options{})
	for _, c := range []*pgcluster.Cluster{ctl, cand} {
		mustExec(t, c, "postgres", "CREATE DATABASE app")
	}
	mustExec(t, cand, "postgres", "ALTER DATABASE app SET enable_indexscan = off; ALTER DATABASE app SET enable_bitmapscan = off; ALTER DATABASE app SET enable_indexonlyscan = off")
	return ctl, cand
}

type createdTableRun struct {
	code           int
	stdout, stderr string
	out            string
	plans          *explain.Report
	back           *rehearse.Outcome
	targets        []*pgcluster.Cluster
	json           string
}

func rehearseCreatedTable(t *testing.T) createdTableRun {
	t.Helper()
	ctl, cand := createdTableTargets(t)
	log := createdTableLog(t, ctl.User())
	dir := t.TempDir()
	r := createdTableRun{out: filepath.Join(dir, "rounds"), targets: []*pgcluster.Cluster{ctl, cand}, json: filepath.Join(dir, "rehearsal.json")}
	r.code, r.stdout, r.stderr = runRehearse(t, "",
		"--control", ctl.DSN("postgres"), "--candidate", cand.DSN("postgres"), "--rounds", "1", "--speed", "0",
		"--min-calls", "1", "--prefix", replayTestPrefix, "--observe=false", "--findings=false",
		"--out", r.out, "--json", r.json, log)
	t.Logf("stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	var doc struct {
		Plans *explain.Report `json:"plans"`
	}
	if b, err := os.ReadFile(r.json); err == nil {
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
	}
	r.plans = doc.Plans
	back, err := rehearse.ReadOutcome(r.out)
	if err != nil {
		t.Fatal(err)
	}
	r.back = back
	return r
}

// TestRehearseCreatedTable: the plans of a log that creates its table
// are explained where the last rounds' replays left it, and their copies
// are dropped after.
func TestRehearseCreatedTable(t *testing.T) {
	longCase(t)
	r := rehearseCreatedTable(t)
	if r.code != ExitOK || r.plans == nil {
		t.Fatalf("exit %d, plans %v", r.code, r.plans != nil)
	}
	t.Run("explained on the last round's copy", func(t *testing.T) {
		o := planOutcome(r.plans, "SELECT state FROM jobs WHERE id = $1")
		if o == nil || len(o.Problems) > 0 || o.Verdict != explain.PlanChanged {
			t.Errorf("the lookup on jobs: %+v, want its plan changed (index scan, then none)", o)
		}
		for _, c := range r.targets {
			if left := queryLines(t, c, "postgres", "SELECT datname FROM pg_database WHERE starts_with(datname, '"+reset.NamePrefix+"')"); len(left) != 0 {
				t.Errorf("databases of the reset left: %v", left)
			}
		}
	})
	t.Run("explained from an execution in the log", func(t *testing.T) {
		// Normalized, "interval $2" does not parse on the servers.
		o := planOutcome(r.plans, "SELECT count(*) FROM jobs WHERE id < $1 AND created > now() - interval $2")
		if o == nil || len(o.Problems) > 0 || o.Verdict != explain.PlanChanged || len(o.Explained) == 0 ||
			o.Explained[0].Sample != explain.SampleExample || o.Generic {
			t.Fatalf("the lookup with an interval: %+v, want its plan changed, explained with an example", o)
		}
		if sp := o.Explained[0].Candidate; sp.Plan.Analyzed || sp.NotAnalyzed != explain.SkipExample {
			t.Errorf("the example was analyzed (%v, %q): its values were not asked to be kept", sp.Plan.Analyzed, sp.NotAnalyzed)
		}
		// Its values are not written.
		if b := readFile(t, r.json); bytes.Contains(b, []byte("1 day")) {
			t.Errorf("the JSON holds the example's values")
		}
		if !strings.Contains(r.stdout, "(an execution from the log: its normalized text cannot be planned)") {
			t.Errorf("the summary does not say the plan is an example's")
		}
	})
	t.Run("the rounds table agrees with the rounds' files", func(t *testing.T) {
		// pg_stat_statements is not on the targets: the log's COPY of
		// it failed only there, in every round, and no error of
		// ordering did.
		res := map[string]*results.Result{}
		for _, rs := range append(r.back.Control, r.back.Candidate...) {
			res[fmt.Sprintf("%s %d", rs.Part.Side, rs.Part.Round)] = rs
		}
		lines := strings.Split(r.stdout, "\n")
		for i, line := range lines {
			f := strings.Fields(line)
			if len(f) < 9 || f[3] != string(rehearse.StatusDone) {
				continue
			}
			rs := res[f[1]+" "+f[2]]
			if rs == nil {
				continue
			}
			if got := f[7]; got != strconv.FormatInt(rs.Statements.Failed, 10) || rs.Statements.Failed != 2 || rs.Outcomes.FailedOnlyOnTarget != 1 {
				t.Errorf("%s: the table says %s failed, its file %d (%d only on the target, want 1)", f[1]+" "+f[2], got, rs.Statements.Failed, rs.Outcomes.FailedOnlyOnTarget)
			}
			// The failed column's failure that the original did not
			// have is noted as the file counts it, without blaming the
			// replay's order.
			want := "note: 1 statements that succeeded in the original failed only on the target (SQLSTATE 42P01 1)"
			if i+1 >= len(lines) || strings.TrimSpace(lines[i+1]) != want {
				t.Errorf("%s: the line after the round is %q, want %q; its file: %+v", f[1]+" "+f[2], lines[min(i+1, len(lines)-1)], want, rs.Outcomes)
			}
			delete(res, f[1]+" "+f[2])
		}
		if len(res) != 0 {
			t.Errorf("rounds not in the table: %v", res)
		}
	})
}

func planOutcome(rep *explain.Report, query string) *explain.Outcome {
	for i := range rep.Outcomes {
		if rep.Outcomes[i].Query == query {
			return &rep.Outcomes[i]
		}
	}
	return nil
}
