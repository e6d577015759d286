package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/rehearse"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// TestRehearseThrottledText: a candidate throttled by the replay itself
// is said with the verdict, with its figures and the mode's advice, and
// the rounds' heading says how they were synchronized; nothing is said of
// a candidate that was not throttled.
func TestRehearseThrottledText(t *testing.T) {
	out := &rehearse.Outcome{Rounds: 3, Sync: results.SyncObject, Throttle: &rehearse.Throttle{
		Control:   rehearse.SideThrottle{StretchMedian: 1.01, SyncWaitMedian: 11},
		Candidate: rehearse.SideThrottle{StretchMedian: 1.6, SyncWaitMedian: 120},
		Stretched: true, WaitsDominate: true, Throttled: true}}
	var b bytes.Buffer
	writeThrottled(&b, out)
	want := "THROTTLED: the candidate's rounds were throttled by the replay itself: stretched 1.60x against the control's 1.01x, sync waits 120.0 s a round against 11.0 s (medians); " +
		"it received less load than the application gave it, so the forecast under-states its slowdown (--sync object ordered reads too; --sync load waits only where the order prevents an error)\n\n"
	if b.String() != want {
		t.Errorf("throttled:\n%q\nwant\n%q", b.String(), want)
	}
	b.Reset()
	writeRounds(&b, out, nil)
	for _, w := range []string{"sessions synchronized by object (--sync object", "load given (medians; stretch: replay wall time over the log's span at its speed): control stretched 1.01x, sync waits 11.0 s a round; candidate stretched 1.60x, sync waits 120.0 s a round"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("rounds lack %q:\n%s", w, b.String())
		}
	}
	out.Sync, out.Throttle.Throttled = results.SyncLoad, false
	b.Reset()
	writeThrottled(&b, out)
	if b.Len() != 0 {
		t.Errorf("not throttled, yet: %s", b.String())
	}
	writeRounds(&b, out, nil)
	if !strings.Contains(b.String(), "sessions synchronized for load (--sync load") {
		t.Errorf("rounds:\n%s", b.String())
	}
}
