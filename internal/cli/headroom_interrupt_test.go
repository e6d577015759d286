package cli

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/headroom"
)

// TestHeadroomInterrupted: Ctrl-C (the command's context cancelled) in
// the middle of a search, once the step after the first above 1x is
// replaying: the
// steps finished are kept, in the text and the JSON, the step under way
// is marked interrupted and does not count, the answer rests on the steps
// finished and is marked partial, and the exit code is ExitIncomplete.
// The test polls the progress lines for the step it waits for; it never
// sleeps to synchronize.
func TestHeadroomInterrupted(t *testing.T) {
	slowCase(t, 19*time.Second)
	logPath := shopLog(t)
	ctl := shopHeadroomTarget(t, nil)
	jsonPath := filepath.Join(t.TempDir(), "headroom.json")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h := startHeadroom(ctx, "--control", ctl.DSN("postgres"), "--max-k", "8", "--json", jsonPath, logPath)
	// The 4th step is the first above 1x (three baseline rounds first);
	// the 5th is the search's next (2x, or a bisection below 1.5x).
	want := regexp.MustCompile(`headroom: step 5: control at [0-9.]+x \(round [0-9]+\): replaying`)
	h.await(t, "step 5 replayed", 5*time.Minute, func() bool { return want.MatchString(h.stderr.String()) })
	cancel()
	code, out, errOut := h.exit(t, 2*time.Minute, "the interruption")
	if code != ExitIncomplete {
		t.Errorf("exit %d, want %d (ExitIncomplete)", code, ExitIncomplete)
	}
	if !strings.Contains(out, "PARTIAL: interrupted during step 5") || !strings.Contains(errOut, "PARTIAL: interrupted during step 5") {
		t.Errorf("the answer is not marked partial, or the error does not say why")
	}
	o := readJSON[headroom.Outcome](t, jsonPath)
	if !o.Partial || !o.Interrupted || len(o.Sides) != 1 {
		t.Fatalf("partial %v, interrupted %v, %d sides", o.Partial, o.Interrupted, len(o.Sides))
	}
	so := o.Sides[0]
	done4 := 0
	for _, st := range so.Steps {
		switch {
		case st.Status == headroom.StatusDone && st.Measurement != nil:
			done4++
		case st.Status == headroom.StatusInterrupted:
			if st.Seq != len(so.Steps) {
				t.Errorf("step %d interrupted, not the last of %d", st.Seq, len(so.Steps))
			}
		default:
			t.Errorf("step %d: %s %s", st.Seq, st.Status, st.Error)
		}
	}
	if done4 < 4 || so.Baseline == nil || so.Answer == nil || so.Answer.Steps != done4 {
		t.Errorf("%d steps done, baseline %v, answer %+v: the steps finished are not kept and answered", done4, so.Baseline != nil, so.Answer)
	}
}
