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
	var stdout, stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, IO{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr},
			[]string{"headroom", "--control", ctl.DSN("postgres"), "--max-k", "8", "--json", jsonPath, logPath})
	}()
	// The 4th step is the first above 1x (three baseline rounds first);
	// the 5th is the search's next (2x, or a bisection below 1.5x).
	want := regexp.MustCompile(`headroom: step 5: control at [0-9.]+x \(round [0-9]+\): replaying`)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(5 * time.Minute)
wait:
	for {
		select {
		case code := <-done:
			t.Fatalf("exit %d before step 5 replayed:\n%s\n%s", code, stdout.String(), stderr.String())
		case <-deadline:
			t.Fatalf("step 5 did not start replaying in 5 minutes:\n%s", stderr.String())
		case <-tick.C:
			if want.MatchString(stderr.String()) {
				break wait
			}
		}
	}
	cancel()
	var code int
	select {
	case code = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the command did not end within 2 minutes of the interruption:\n%s", stderr.String())
	}
	out, errOut := stdout.String(), stderr.String()
	t.Logf("exit %d\n%s\n%s", code, out, errOut)
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
