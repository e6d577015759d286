package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/headroom"
	"github.com/pgrehearse/pgrehearse/internal/workload"
)

// TestHeadroomTry: headroom --try searches the one target again with the
// user's SQL applied to its reset copy after every reset: a target
// without the email lookup's index is searched again with a try that
// creates it, and the JSON has the try with its k beside the k without
// it; a try whose SQL fails is not tried, with the server's error, and
// the exit code stays 0. --require says it judged the search without
// the tries. The search is kept short (up to 1.5x, one round
// at each place): what is tested is the try's run, not its k, so it is
// a functional case, run beside the others (issue 44): the search's
// reference, 1x, holds by definition (stepcurve.Bracket), whatever the
// machine's load.
func TestHeadroomTry(t *testing.T) {
	slowCase(t, 18*time.Second)
	logPath := shopLog(t)
	tg := shopHeadroomTarget(t, nil)
	mustExec(t, tg, workload.ShopDatabase, "DROP INDEX "+workload.ShopEmailIndex)
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "headroom.json")
	stdout, stderr := headroomOK(t, "--control", tg.DSN("postgres"), "--max-k", "1.5",
		"--base-rounds", "1", "--boundary-rounds", "1", "--out", filepath.Join(dir, "steps"), "--json", jsonPath, "--require", "0.5",
		"--try", "email_idx:CREATE INDEX "+workload.ShopEmailIndex+" ON customers (email)",
		"--try", "broken:CREATE INDEX ON no_such_table (a)", logPath)
	out := readJSON[headroom.Outcome](t, jsonPath)
	if out.Partial || len(out.Tries) != 2 {
		t.Fatalf("partial %v, %d tries", out.Partial, len(out.Tries))
	}
	ok, bad := out.Tries[0], out.Tries[1]
	if ok.Name != "email_idx" || ok.Side != headroom.Control || ok.NotTried != "" || ok.Without == nil ||
		ok.With == nil || ok.With.Answer == nil || ok.With.Answer.Holds < 1 || len(ok.With.Steps) < 2 {
		t.Fatalf("the index's try: %+v", ok)
	}
	// With the index in the copy, its rounds' files are there.
	for _, st := range ok.With.Steps {
		if st.Status != headroom.StatusDone || !strings.Contains(st.File, "try-email_idx") {
			t.Errorf("try step %+v", st)
		}
	}
	if bad.Name != "broken" || !strings.Contains(bad.NotTried, "no_such_table") || (bad.With != nil && bad.With.Answer != nil) {
		t.Errorf("the broken try: %+v", bad)
	}
	if !strings.Contains(stdout, "k held: ") || !strings.Contains(stdout, "with email_idx") || !strings.Contains(stdout, "try broken on the control: not tried") {
		t.Errorf("no try lines:\n%s", stdout)
	}
	// --require judges the search without the tries, and says so.
	if !strings.Contains(stdout, "--require 0.5x: met (the control holds ") || !strings.Contains(stdout, "; judged on the searches without the tries: a try's k is not judged") {
		t.Errorf("no --require line saying what it judged:\n%s", stdout)
	}
	if !strings.Contains(stderr, "control with email_idx at 1x") {
		t.Errorf("no progress line of the try:\n%s", stderr)
	}
	// The index, named, was made in every step's fresh copy of the
	// shop's database (customers is there only; a second CREATE in the
	// same database would fail), and the target's own is left without.
	if err := tg.Exec(context.Background(), workload.ShopDatabase, "CREATE INDEX "+workload.ShopEmailIndex+" ON customers (email)"); err != nil {
		t.Errorf("the try reached the target's own database: %v", err)
	}
}
