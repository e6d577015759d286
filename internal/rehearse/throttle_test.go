package rehearse

import (
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/judge"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// round is a replayed round of a 20 s log at speed 1 that took wall
// seconds, its sessions waiting wait seconds in all for other sessions'
// commits.
func timedRound(wall, wait float64) *results.Result {
	const t0 = 1_772_359_200_000_000
	return &results.Result{FirstTime: t0, LastTime: t0 + 20_000_000, Replay: &results.Replay{Speed: 1, WallSeconds: wall,
		Sync: &results.Sync{Mode: results.SyncObject}, SyncWait: &results.Distribution{TotalMS: wait * 1000}}}
}

func side(rs ...*results.Result) []*results.Result { return rs }

// TestThrottling: the candidate's rounds are throttled when they
// stretched the log beyond the control's by more than the control's
// spread, or when their sync waits dominate; not when the sides are
// alike, nor when the candidate stretched within the control's noise.
func TestThrottling(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		control, candidate      []*results.Result
		stretched, waits, throt bool
	}{
		{"alike", side(timedRound(20.2, 1), timedRound(20.4, 1.5), timedRound(20.1, 1)), side(timedRound(20.3, 1.2), timedRound(20.2, 1), timedRound(20.5, 1.1)), false, false, false},
		// The issue's: 20 s stretched to 33-71 s, waits 120-310 s
		// against 11-90 s.
		{"issue 58", side(timedRound(21, 11), timedRound(22, 40), timedRound(24, 90)), side(timedRound(33, 120), timedRound(50, 200), timedRound(71, 310)), true, true, true},
		// Stretched 1.3x, waits short on both sides.
		{"stretched only", side(timedRound(20, 0.1), timedRound(20.5, 0.1), timedRound(21, 0.2)), side(timedRound(26, 0.3), timedRound(27, 0.2), timedRound(26.5, 0.2)), true, false, true},
		// One control round as stretched as the candidate's: noise.
		{"within noise", side(timedRound(20, 0), timedRound(20.5, 0), timedRound(30, 0)), side(timedRound(26, 0), timedRound(27, 0), timedRound(26.5, 0)), false, false, false},
		// Waits dominate (summed waits past half a round) without a
		// stretch beyond the control's (speed 0 has none).
		{"waits", side(timedRound(20, 2), timedRound(20, 3), timedRound(20, 2)), side(timedRound(20.5, 15), timedRound(20.5, 12), timedRound(20, 20)), false, true, true},
	} {
		th := Throttling(tc.control, tc.candidate)
		if th == nil {
			t.Fatalf("%s: no throttle", tc.name)
		}
		if th.Stretched != tc.stretched || th.WaitsDominate != tc.waits || th.Throttled != tc.throt {
			t.Errorf("%s: stretched %v, waits dominate %v, throttled %v; want %v, %v, %v (%+v)", tc.name,
				th.Stretched, th.WaitsDominate, th.Throttled, tc.stretched, tc.waits, tc.throt, th)
		}
	}
	th := Throttling(side(timedRound(20, 11)), side(timedRound(33, 120)))
	if th.Candidate.StretchMedian != 1.65 || th.Control.SyncWaitMedian != 11 {
		t.Errorf("figures: %+v", th)
	}
	// Two of three candidate rounds issued statements past their
	// schedule window: the medians of those two.
	k := side(timedRound(33, 0), timedRound(40, 0), timedRound(20, 0))
	k[0].Window, k[1].Window = &results.Window{Seconds: 20, AfterSeconds: 13}, &results.Window{Seconds: 20, AfterSeconds: 20}
	if th := Throttling(side(timedRound(20, 0)), k); th.Candidate.WindowRounds != 2 || th.Candidate.WindowMedian != 20 || th.Candidate.AfterMedian != 16.5 || th.Control.WindowRounds != 0 {
		t.Errorf("windows: %+v", th)
	}
	// Pooled rounds that stretched are the candidate's own pace, not
	// throttled.
	pooled := func(wall float64) *results.Result {
		r := timedRound(wall, 0)
		r.Pooled = true
		return r
	}
	if th := Throttling(side(pooled(20), pooled(20.5), pooled(21)), side(pooled(26), pooled(27), pooled(26.5))); !th.Stretched || th.Throttled || !th.Candidate.Pooled {
		t.Errorf("pooled: stretched %v, throttled %v, pooled %v; want true, false, true", th.Stretched, th.Throttled, th.Candidate.Pooled)
	}
	// At speed 0 there is no pace: no stretch.
	fast := timedRound(5, 0)
	fast.Speed = 0
	if x := Stretch(fast); x != 0 {
		t.Errorf("speed 0: stretch %v", x)
	}
	if Throttling(nil, side(timedRound(20, 0))) != nil {
		t.Error("a side without rounds is measured")
	}
	if m := syncOf(nil, side(timedRound(20, 0))); m != results.SyncObject {
		t.Errorf("syncOf = %q", m)
	}
}

// TestThrottledUnjudgeable: a candidate whose sessions waited for each
// other's commits where the application's did not is no verdict on its
// own (its latencies are lower bounds: judge.UnjudgeableThrottled), and
// the comparison is made all the same (AllowIncomplete); one that only
// stretched (a slower target, measured within its window) is judged.
func TestThrottledUnjudgeable(t *testing.T) {
	for _, tc := range []struct {
		name               string
		control, candidate []*results.Result
		throttled          bool
	}{
		{"alike", side(timedRound(20.2, 1), timedRound(20.4, 1.5), timedRound(20.1, 1)), side(timedRound(20.3, 1.2), timedRound(20.2, 1), timedRound(20.5, 1.1)), false},
		{"stretched only", side(timedRound(20, 0.1), timedRound(20.5, 0.1), timedRound(21, 0.2)), side(timedRound(26, 0.3), timedRound(27, 0.2), timedRound(26.5, 0.2)), false},
		{"waits", side(timedRound(20, 2), timedRound(20, 3), timedRound(20, 2)), side(timedRound(20.5, 15), timedRound(20.5, 12), timedRound(20, 20)), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := &Outcome{Rounds: 3, Control: tc.control, Candidate: tc.candidate}
			out.measureLoad()
			why := out.Unjudgeable()
			got := len(why) == 1 && why[0].Kind == judge.UnjudgeableThrottled
			if got != tc.throttled || !tc.throttled && len(why) > 0 {
				t.Fatalf("unjudgeable %+v, want throttled %v", why, tc.throttled)
			}
			if o := (JudgeOptions{}).Options(out); o.AllowIncomplete != tc.throttled {
				t.Errorf("AllowIncomplete %v, want %v", o.AllowIncomplete, tc.throttled)
			}
			if tc.throttled && why[0].Detail != "sync waits 15.0 s a round against the control's 2.0 s, medians" {
				t.Errorf("detail %q", why[0].Detail)
			}
		})
	}
}
