package report

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/goldentest"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// withSetup gives run 40 connections whose setup took from us µs up, by
// a tenth of it each.
func withSetup(t *testing.T, run *compare.Run, us int64) *compare.Run {
	t.Helper()
	rec := results.NewRecorder()
	for i := range int64(40) {
		rec.Record(us + i*us/10/40)
	}
	c, err := results.ConnectionsOf(rec, 0)
	if err != nil {
		t.Fatal(err)
	}
	run.Connections = c
	return run
}

// TestConnectionSetupText: three rounds a side whose connections took
// 2 ms on the control and about 12 ms on the candidate: the text shows
// the connection setup in a section of its own after the regressions,
// saying it is not a query and not in the verdict, with the calls, the
// mean and the p95 on each side and their changes' intervals over the
// rounds; see testdata/connection_setup.golden (go test -update rewrites
// it). The page has the row in a section of its own, and the JSON names
// the row's kind.
func TestConnectionSetupText(t *testing.T) {
	var base, cand []*compare.Run
	for i, f := range []float64{1, 1.04, 0.97} {
		rows := []map[string]any{row("q", 200, 10*f, 14*f)}
		base = append(base, withSetup(t, replayRun(t, "base"+string(rune('1'+i))+".json", nil, rows, nil), int64(2000*f)))
		cand = append(cand, withSetup(t, replayRun(t, "cand"+string(rune('1'+i))+".json", nil, rows, nil), int64(12000*f)))
	}
	rep, err := compare.Runs(base, cand, compare.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := WriteComparisonDetails(&b, rep, 10); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	i := strings.Index(out, ConnectionSetupTitle)
	if i < 0 {
		t.Fatalf("no connection setup in:\n%s", out)
	}
	section := out[i:]
	if j := strings.Index(section, "\n\n"); j >= 0 {
		section = section[:j+1]
	}
	goldentest.Check(t, filepath.Join("testdata", "connection_setup.golden"), section)

	page := ComparisonPage(rep, ComparisonOptions{})
	found := false
	for _, s := range page.Sections {
		if s.ID == "connection-setup" && len(s.Tables) == 1 && len(s.Tables[0].Rows) == 1 && s.Tables[0].Rows[0].Cells[8].Text == "regressed" {
			found = true
		}
	}
	if !found {
		t.Error("the page has no connection setup section with its row")
	}

	js, err := json.Marshal(ComparisonDocument(rep))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Setup *struct {
			Kind    compare.RowKind `json:"kind"`
			Status  compare.Status  `json:"status"`
			Effects struct {
				Mean struct{ Ratio, Low, High float64 } `json:"mean"`
			} `json:"effects"`
		} `json:"connection_setup"`
	}
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatal(err)
	}
	if s := doc.Setup; s == nil || s.Kind != compare.RowConnectionSetup || s.Status != compare.StatusRegressed || s.Effects.Mean.Low <= 1 {
		t.Errorf("connection_setup in the JSON: %+v", doc.Setup)
	}
}

// TestReplayConnectingLine: a replay's text says how many connections it
// made and what their setup took; one from before says nothing of it.
func TestReplayConnectingLine(t *testing.T) {
	res := withSetup(t, replayRun(t, "r.json", nil, []map[string]any{row("q", 200, 10, 14)}, nil), 2000)
	res.Connections.Failed = 2
	var b strings.Builder
	if err := WriteReplay(&b, res, Hints{}); err != nil {
		t.Fatal(err)
	}
	if want := "  connecting: 40 connections, setup mean 2.10 ms, p95 2.19 ms (from the connect call to a session ready for its first statement); 2 attempts failed\n"; !strings.Contains(b.String(), want) {
		t.Errorf("no %q in:\n%s", want, b.String())
	}
	res.Connections = nil
	b.Reset()
	if err := WriteReplay(&b, res, Hints{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "connecting:") {
		t.Errorf("a replay without connections timed says:\n%s", b.String())
	}
}
