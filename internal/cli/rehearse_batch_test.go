package cli

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// TestRehearseBatchInserts: rehearse --batch-inserts 50 replays an events
// table with partial indexes, written row by row, onto the candidate in
// rounds of its own with the rows in batches, and says what that saved
// per row, time and WAL, with the interval, in the summary, in the
// JSON's batch-inserts finding (the text's findings come before the
// batched rounds) and on the HTML page; the candidate's own table is left as it was.
func TestRehearseBatchInserts(t *testing.T) {
	parallelCase(t)
	var schema strings.Builder
	schema.WriteString("CREATE TABLE events (id bigint PRIMARY KEY, kind int NOT NULL, body text);\n")
	for i := range 20 {
		fmt.Fprintf(&schema, "CREATE INDEX events_kind_%d ON events (id) WHERE kind = %d;\n", i, i)
	}
	var cs []*pgcluster.Cluster
	for range 2 {
		c := pgclustertest.StartT(t, pgcluster.Options{})
		mustExec(t, c, "postgres", "CREATE DATABASE app")
		mustExec(t, c, "app", schema.String())
		cs = append(cs, c)
	}
	ctl, cand := cs[0], cs[1]
	var steps []logStep
	for i := range 600 {
		steps = append(steps, logStep{q: fmt.Sprintf("INSERT INTO events (id, kind, body) VALUES (%d, %d, 'event %d')", i, i%20, i)})
	}
	log := writeStepsLog(t, []logSession{{ctl.User(), "app"}}, steps)
	type measured struct {
		BatchInserts *struct {
			Max  int `json:"max"`
			Time struct {
				Ratio, Low, High float64
			} `json:"time"`
			WAL *struct{ Ratio float64 } `json:"wal"`
		} `json:"batch_inserts"`
		Findings struct {
			Findings []struct {
				ID, Summary string
			} `json:"findings"`
		} `json:"findings"`
	}
	// The time per row is timed: on a busy machine its interval over
	// three rounds each way may hold 1 although batching cuts it about
	// 5x here, and the words then rightly say "no more than noise".
	// That is the machine's race, which the test cannot force: it tries
	// again, up to three times, and asserts the words of the attempt
	// whose interval is above 1 (the WAL per row is not timed).
	var (
		stdout, jsonPath, htmlPath string
		doc                        measured
	)
	for attempt := 1; ; attempt++ {
		dir := t.TempDir()
		jsonPath, htmlPath = filepath.Join(dir, "rehearsal.json"), filepath.Join(dir, "rehearsal.html")
		stdout, _ = rehearseOK(t,
			"--control", ctl.DSN("postgres"), "--candidate", cand.DSN("postgres"), "--rounds", "3", "--speed", "0",
			"--prefix", replayTestPrefix, "--observe=false", "--plans=false", "--min-calls", "5",
			"--batch-inserts", "50", "--fix-rounds", "3", "--out", filepath.Join(dir, "rounds"), "--json", jsonPath, "--html", htmlPath, log)
		doc = measured{}
		if err := json.Unmarshal(readFile(t, jsonPath), &doc); err != nil {
			t.Fatal(err)
		}
		if m := doc.BatchInserts; m == nil || m.Time.Low > 1 || attempt == 3 {
			break
		}
		t.Logf("attempt %d: the time per row's interval %.2f-%.2f holds 1 on this machine; trying again", attempt, doc.BatchInserts.Time.Low, doc.BatchInserts.Time.High)
	}
	for _, want := range []string{
		"Batched INSERTs (--batch-inserts 50), 3 rounds each way, into events:\n  time per row: batches of 50 cut it by ",
		"  WAL per row:  batches of 50 cut it by ",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("standard output lacks %q", want)
		}
	}
	if m := doc.BatchInserts; m == nil || m.Max != 50 || m.Time.Ratio <= 1 || m.WAL == nil || m.Time.Low > m.Time.Ratio || m.Time.High < m.Time.Ratio {
		t.Errorf("batch_inserts in the JSON: %+v", m)
	}
	// The page says it as the text does (issue 48).
	page := string(readFile(t, htmlPath))
	for _, want := range []string{`<section id="batch-inserts">`, "time per row: batches of 50 would cut it by ", "WAL per row: batches of 50 would cut it by "} {
		if !strings.Contains(page, want) {
			t.Errorf("the HTML page lacks %q", want)
		}
	}
	said := false
	for _, f := range doc.Findings.Findings {
		said = said || f.ID == "batch-inserts" && strings.Contains(f.Summary, "batches of 50 cut the target's time per row into events")
	}
	if !said {
		t.Errorf("no batch-inserts finding says what batching saved: %+v", doc.Findings.Findings)
	}
	if got := queryLines(t, cand, "app", "SELECT count(*) FROM events"); strings.Join(got, "") != "0" {
		t.Errorf("the candidate's own events hold %v rows, want none", got)
	}
}

// TestReplayBatchInserts: replay --batch-inserts 3 merges a session's
// consecutive single-row INSERTs within its autocommit run and within its
// transaction, never across the COMMIT, leaves the RETURNING alone and
// says so in its summary and its JSON; the rows are the log's.
func TestReplayBatchInserts(t *testing.T) {
	parallelCase(t)
	c := pgclustertest.StartT(t, pgcluster.Options{})
	mustExec(t, c, "postgres", "CREATE TABLE events (id int PRIMARY KEY, body text)")
	ins := func(i int) string { return fmt.Sprintf("INSERT INTO events (id, body) VALUES (%d, 'e''%d')", i, i) }
	log := writeSessionsLog(t, [][]string{
		{c.User(), "postgres", ins(1), ins(2), ins(3), ins(4), "BEGIN", ins(5), ins(6), "COMMIT", ins(7),
			"INSERT INTO events (id, body) VALUES (8, 'r') RETURNING id", ins(9)},
	})
	code, out, res := runReplay(t, "--target", c.DSN("postgres"), "--speed", "0", "--prefix", replayTestPrefix, "--batch-inserts", "3", log)
	if code != ExitOK || res == nil {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	b := res.BatchInserts
	// (1, 2, 3), (4), (5, 6), (7), (9); the RETURNING apart.
	if b == nil || b.Max != 3 || b.Statements != 8 || b.Batches != 5 || b.Rows != 8 || b.NotBatched["RETURNING"] != 1 || b.WALBytes <= 0 {
		t.Errorf("batch_inserts %+v", b)
	}
	if s := res.Statements; s.Executed != 8 {
		t.Errorf("statements %+v, want the 5 batches, the RETURNING, BEGIN and COMMIT", s)
	}
	for _, want := range []string{
		"  batched:    8 single-row INSERTs sent as 5 INSERTs of up to 3 rows",
		"    not batched, RETURNING: 1\n",
		"    per row:  ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	got := queryLines(t, c, "postgres", "SELECT string_agg(id || ':' || body, ' ' ORDER BY id) FROM events")
	if want := "1:e'1 2:e'2 3:e'3 4:e'4 5:e'5 6:e'6 7:e'7 8:r 9:e'9"; strings.Join(got, "") != want {
		t.Errorf("rows %q, want %q", got, want)
	}
}
