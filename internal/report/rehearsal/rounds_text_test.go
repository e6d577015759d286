package rehearsal

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/judge"
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
	// A pooled replay's rounds wait for its connections, as the
	// application's would have.
	out.Throttle.Candidate.Pooled, out.Throttle.Throttled = true, false // as rehearse.Throttling has it
	b.Reset()
	WriteThrottled(&b, out)
	want = "BEHIND: the candidate could not keep up with the log's pace: its rounds stretched 1.60x against the control's 1.01x (medians), each transaction waiting for a free connection of its application's pool, as the application's would have\n\n"
	if b.String() != want {
		t.Errorf("stretched, pooled:\n%q\nwant\n%q", b.String(), want)
	}
	out.Throttle.Stretched = false
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

// TestRoundsAddedText: the rounds' heading says how many rounds were
// added and why (undecided, too wide, or both), a budget that ended
// with a mean still too wide is said, and the line said as rounds are
// added names the first regression too wide, or the undecided rule.
func TestRoundsAddedText(t *testing.T) {
	for _, tc := range []struct {
		added, widened int
		unmet          rehearse.Need
		want, wide     string
	}{
		{0, 0, rehearse.NeedNone, "REHEARSAL: 3 rounds per side, reset", ""},
		{2, 0, rehearse.NeedDecision, "REHEARSAL: 3 rounds per side and 2 added while a query was undecided on a --fail-on rule, reset", ""},
		{5, 5, rehearse.NeedWidth, "REHEARSAL: 3 rounds per side and 5 added while a regression's mean was wider than --max-width, reset",
			"  WIDE: --max-rounds reached with a regression's mean still wider than --max-width"},
		{3, 2, rehearse.NeedNone, "REHEARSAL: 3 rounds per side and 3 added, 1 while a query was undecided on a --fail-on rule and 2 while a regression's mean was wider than --max-width, reset", ""},
	} {
		out := &rehearse.Outcome{Rounds: 3, Added: tc.added, Widened: tc.widened, Unmet: tc.unmet}
		if tc.unmet != rehearse.NeedNone {
			out.BudgetEnded = rehearse.BudgetRounds
		}
		var b bytes.Buffer
		WriteRounds(&b, out, nil)
		if !strings.HasPrefix(b.String(), tc.want) || strings.Contains(b.String(), "WIDE:") != (tc.wide != "") || tc.wide != "" && !strings.Contains(b.String(), tc.wide) {
			t.Errorf("added %d, widened %d, unmet %v:\n%s\nwant %q and %q", tc.added, tc.widened, tc.unmet, b.String(), tc.want, tc.wide)
		}
	}
	var b bytes.Buffer
	WriteAdding(&b, 3, 8, judge.More{Wide: []compare.WideMean{{Fingerprint: "4db56df8b195d1b8", Ratio: 1.513, Low: 0.533, High: 4.296}, {Fingerprint: "x"}}})
	if want := "rehearse: after 3 rounds a side the mean of 4db56df8b195d1b8 reads 1.51x (0.53-4.30), an interval wider than --max-width, and another regression's mean: rounds are added, one a side at a time, up to 8 a side\n"; b.String() != want {
		t.Errorf("adding for width:\n%q\nwant\n%q", b.String(), want)
	}
	b.Reset()
	WriteAdding(&b, 4, 8, judge.More{Undecided: true, Wide: []compare.WideMean{{Fingerprint: "x"}}})
	if want := "rehearse: after 4 rounds a side a query may break a --fail-on rule and the rounds cannot tell yet: rounds are added, one a side at a time, up to 8 a side\n"; b.String() != want {
		t.Errorf("adding while undecided:\n%q\nwant\n%q", b.String(), want)
	}
	if got := DatabasesText([]string{"shop", ""}); got != `"shop", "(the DSN's own)"` {
		t.Errorf("databases: %s", got)
	}
}
