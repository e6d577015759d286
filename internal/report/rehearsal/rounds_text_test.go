package rehearsal

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
	WriteThrottled(&b, out)
	want := "THROTTLED: the candidate's rounds were throttled by the replay itself: stretched 1.60x against the control's 1.01x, sync waits 120.0 s a round against 11.0 s (medians); " +
		"its sessions waited for each other's commits where the application's did not, so it received less load than the application gave it, and the forecast under-states its slowdown (--sync object ordered reads too; --sync load waits only where the order prevents an error)\n\n"
	if b.String() != want {
		t.Errorf("throttled:\n%q\nwant\n%q", b.String(), want)
	}
	b.Reset()
	WriteRounds(&b, out, nil)
	for _, w := range []string{"sessions synchronized by object (--sync object", "load given (medians; stretch: replay wall time over the log's span at its speed): control stretched 1.01x, sync waits 11.0 s a round; candidate stretched 1.60x, sync waits 120.0 s a round"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("rounds lack %q:\n%s", w, b.String())
		}
	}
	// Stretched without waits (load mode, a slow session of its own).
	out.Sync, out.Throttle.WaitsDominate, out.Throttle.Candidate.SyncWaitMedian, out.Throttle.Control.SyncWaitMedian = results.SyncLoad, false, 0, 0
	b.Reset()
	WriteThrottled(&b, out)
	want = "THROTTLED: the candidate's rounds were throttled by the replay itself: stretched 1.60x against the control's 1.01x (medians); its sessions fell behind the log's pace, each statement waiting for its session's previous one, " +
		"so it received less load than an application whose requests kept arriving would have given it, and the forecast may under-state its slowdown\n\n"
	if b.String() != want {
		t.Errorf("stretched:\n%q\nwant\n%q", b.String(), want)
	}
	// Its rounds measured within their schedule window.
	out.Throttle.Candidate.WindowRounds, out.Throttle.Candidate.WindowMedian, out.Throttle.Candidate.AfterMedian = 3, 20, 14.5
	out.Throttle.Candidate.SyncWaitSeconds = []float64{0, 0, 0}
	b.Reset()
	WriteThrottled(&b, out)
	want = "THROTTLED: the candidate's rounds were throttled by the replay itself: stretched 1.60x against the control's 1.01x (medians); its sessions fell behind the log's pace, each statement waiting for its session's previous one, " +
		"so it received less load than an application whose requests kept arriving would have given it; its times per call and its rate are measured within the schedule's 20.0 s, while every session that fell behind still had statements to run, " +
		"as an application's clients do until they are stopped, leaving out the 14.5 s after it in which its sessions finished one by one with fewer neighbours (medians, 3 of 3 rounds)\n\n"
	if b.String() != want {
		t.Errorf("stretched, within the window:\n%q\nwant\n%q", b.String(), want)
	}
	out.Throttle.Throttled = false
	b.Reset()
	WriteThrottled(&b, out)
	if b.Len() != 0 {
		t.Errorf("not throttled, yet: %s", b.String())
	}
	WriteRounds(&b, out, nil)
	if !strings.Contains(b.String(), "sessions synchronized for load (--sync load") {
		t.Errorf("rounds:\n%s", b.String())
	}
}
