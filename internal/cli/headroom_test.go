package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/headroom"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/workload"
)

// shopHeadroomTarget is a target with the shop's data, logging nothing:
// headroom's steps are timed by the replayer.
func shopHeadroomTarget(t *testing.T, settings map[string]string) *pgcluster.Cluster {
	t.Helper()
	c := pgclustertest.StartT(t, pgcluster.Options{Settings: settings})
	if err := workload.SetupShop(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestHeadroomAA: the shop's traffic searched on two identical targets
// (A/A), each step from fresh template copies, the targets alternating:
// both answer, their intervals overlap, every step's figures are there,
// and the JSON and the page are written.
func TestHeadroomAA(t *testing.T) {
	logPath := shopLog(t)
	ctl, cand := shopHeadroomTarget(t, nil), shopHeadroomTarget(t, nil)
	dir := t.TempDir()
	jsonPath, htmlPath := filepath.Join(dir, "headroom.json"), filepath.Join(dir, "headroom.html")
	start := time.Now()
	code, stdout, stderr := runHeadroom(t, "--control", ctl.DSN("postgres"), "--candidate", cand.DSN("postgres"),
		"--max-k", "2", "--json", jsonPath, "--html", htmlPath, logPath)
	t.Logf("exit %d in %v\n%s\n%s", code, time.Since(start).Round(time.Second), stdout, stderr)
	if code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var out headroom.Outcome
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Sides) != 2 || out.Partial {
		t.Fatalf("%d sides, partial %v", len(out.Sides), out.Partial)
	}
	var ans []*headroom.Answer
	for _, so := range out.Sides {
		if so.Answer == nil || so.Baseline == nil || len(so.Steps) < 4 {
			t.Fatalf("%s: answer %+v, %d steps", so.Side, so.Answer, len(so.Steps))
		}
		ans = append(ans, so.Answer)
		for _, st := range so.Steps {
			m := st.Measurement
			if st.Status != headroom.StatusDone || m == nil || m.Statements == 0 || m.StatementsPerS <= 0 || len(m.Queries) == 0 {
				t.Errorf("%s step %d: %+v", so.Side, st.Seq, st)
			}
		}
	}
	// Intervals overlap: an open one ("at least") reaches up forever.
	top := func(a *headroom.Answer) float64 {
		if a.AtLeast {
			return 1e9
		}
		return a.Hi
	}
	if top(ans[0]) < ans[1].Lo || top(ans[1]) < ans[0].Lo {
		t.Errorf("A/A intervals apart: control %+v, candidate %+v", ans[0], ans[1])
	}
	if !strings.Contains(stdout, "control holds") || !strings.Contains(stdout, "candidate") {
		t.Errorf("no answer line:\n%s", stdout)
	}
	if !strings.Contains(stderr, "headroom: step 1: control at 1x") || !strings.Contains(stderr, "left (ETA") {
		t.Errorf("no progress lines:\n%s", stderr)
	}
	if page, err := os.ReadFile(htmlPath); err != nil || !strings.Contains(string(page), "headroom-throughput") {
		t.Errorf("page: %v", err)
	}
}

func runHeadroom(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	return runCLI(ctx, "", append([]string{"headroom"}, args...)...)
}
