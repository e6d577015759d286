package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/demo"
	"github.com/pgrehearse/pgrehearse/internal/explain"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// TestRehearseChecksumsCause: a candidate initialized with data checksums
// against a control without them (what an 18 initdb makes by default
// beside an older one's) WAL-logs the hint bits its reads set: after
// each round's restore of the data directory, the first read of a page
// not hinted yet writes the whole page to WAL there (full_page_writes
// on), and nothing on the control. The rehearsal end to end (the log
// replayed in rounds, the work per call from pg_stat_statements, the
// plans explained) breaks the wal rule with the read, which keeps its
// plan and names data_checksums as its cause (issue 44's acceptance). The demo cannot show it: its
// shop's data is vacuumed, hinted, before the rounds, and its servers
// run without full_page_writes.
func TestRehearseChecksumsCause(t *testing.T) {
	parallelCase(t)
	ctx := context.Background()
	_, settings := demo.Settings(demo.NoChange)
	// As on a production server: the throwaway servers' default is
	// off, and without full-page images a hint bit costs a record of
	// a few dozen bytes (96 B a call here), under the work floors.
	settings["full_page_writes"] = "on"
	var clusters []*pgcluster.Cluster
	for _, sums := range []pgcluster.Checksums{pgcluster.ChecksumsOff, pgcluster.ChecksumsOn} {
		c := pgclustertest.StartT(t, pgcluster.Options{Settings: settings, Checksums: sums})
		// The rows are committed and never read before the rounds:
		// their pages are saved without hint bits.
		for _, x := range []struct{ db, sql string }{
			{"postgres", "CREATE DATABASE app"},
			{"app", "CREATE EXTENSION pg_stat_statements"},
			{"app", "CREATE TABLE items (id int PRIMARY KEY, qty int, note text) WITH (autovacuum_enabled = off)"},
			{"app", "INSERT INTO items SELECT i, i % 7, repeat('x', 100) FROM generate_series(1, 5000) i"},
		} {
			mustExec(t, c, x.db, x.sql)
		}
		if err := demo.EnableStatementLog(ctx, c); err != nil {
			t.Fatal(err)
		}
		clusters = append(clusters, c)
	}
	ctl, cand := clusters[0], clusters[1]
	if got := queryLines(t, cand, "postgres", "SHOW data_checksums"); len(got) != 1 || got[0] != "on" {
		t.Fatalf("the candidate's data_checksums: %v", got)
	}
	var steps []logStep
	for i := range 40 {
		steps = append(steps, logStep{q: "SELECT count(*) FROM items WHERE qty = " + strconv.Itoa(i%7)})
	}
	log := writeStepsLog(t, []logSession{{ctl.User(), "app"}}, steps)
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "rehearsal.json")
	code, stdout, stderr := runRehearse(t, "",
		"--reset", "datadir", "--control-cluster", ctl.Dir(), "--candidate-cluster", cand.Dir(), "--rounds", "3", "--speed", "0",
		"--control-log", filepath.Join(ctl.LogDir(), "*.log"), "--candidate-log", filepath.Join(cand.LogDir(), "*.log"),
		"--format", "stderr", "--prefix", replayTestPrefix, "--target-log-prefix", demo.Prefix,
		"--min-calls", "1", "--findings=false", "--fail-on", "wal>+50%",
		"--out", filepath.Join(dir, "rounds"), "--json", jsonPath, log)
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
	if code != ExitRegression {
		t.Fatalf("exit code %d, want %d (the wal rule broken)", code, ExitRegression)
	}
	var doc struct {
		Queries []struct {
			Fingerprint string `json:"fingerprint"`
			Query       string `json:"query"`
			Work        *struct {
				More string `json:"more"`
			} `json:"work"`
		} `json:"queries"`
		Plans *explain.Report `json:"plans"`
	}
	if err := json.Unmarshal(readFile(t, jsonPath), &doc); err != nil {
		t.Fatal(err)
	}
	read := "SELECT count(*) FROM items WHERE qty = $1"
	fp := ""
	for _, q := range doc.Queries {
		if q.Query == read {
			fp = q.Fingerprint
			if q.Work == nil || q.Work.More != "wal_bytes" {
				t.Errorf("the read's work: %+v, want more WAL", q.Work)
			}
		}
	}
	if fp == "" || doc.Plans == nil {
		t.Fatalf("the read (%q) or the plans are missing from the JSON", fp)
	}
	o := planOutcome(doc.Plans, read)
	if o == nil || o.Verdict != explain.SamePlan || len(o.Causes) == 0 ||
		o.Causes[0].Setting != "data_checksums" || o.Causes[0].Evidence != explain.EvidenceWAL {
		t.Fatalf("the read's plans: %+v, want the same plan with data_checksums first among its causes", o)
	}
	want := fp + "  same plan, more work; cause: data_checksums off -> on"
	if !strings.Contains(stdout, want) {
		t.Errorf("the summary lacks %q", want)
	}
}
