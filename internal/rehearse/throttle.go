package rehearse

import (
	"slices"

	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/stats"
)

// The thresholds by which a candidate's rounds were throttled by the
// replay itself (Throttle): stretched beyond the control's by more than
// noise, or waiting for other sessions' commits most of the time.
const (
	// ThrottleStretch: the candidate's median stretch is at least this
	// times the control's, and its least stretched round beyond the
	// control's most stretched (beyond the control's own spread).
	ThrottleStretch = 1.1
	// ThrottleWaitShare and ThrottleWaitRatio: the candidate's sessions
	// waited, summed, for at least this share of its median round's
	// wall time, at least this times the control's median, and in its
	// round that waited least longer than in the control's round that
	// waited most (beyond the control's spread).
	ThrottleWaitShare = 0.5
	ThrottleWaitRatio = 2.0
)

// Throttle is what the rounds' replays did to the load they gave the
// targets: how far each round stretched the log's span (its replay's
// wall time over the log's span at its speed: 1 kept the pace, 1.6 took
// 60% longer), and how long its statements waited, summed over its
// sessions, for other sessions' commits (synchronized replay). A replay
// whose statements wait where the application did not is a closed system
// where the application was open: on a slower candidate it gives less
// load than the application would have, and the forecast under-states
// the slowdown. Throttled says that the candidate's rounds were so
// throttled beyond the control's.
type Throttle struct {
	Control   SideThrottle `json:"control"`
	Candidate SideThrottle `json:"candidate"`
	// Stretched: the candidate's rounds stretched beyond the control's
	// by more than noise (ThrottleStretch); WaitsDominate: its sync
	// waits dominate (ThrottleWaitShare, ThrottleWaitRatio).
	Stretched     bool `json:"stretched"`
	WaitsDominate bool `json:"waits_dominate"`
	Throttled     bool `json:"throttled"`
}

// SideThrottle is one side's rounds, in the order they ran.
type SideThrottle struct {
	// Stretch per round; empty when a round's stretch is not known (at
	// speed 0, which has no pace, or without the log's span).
	Stretch       []float64 `json:"stretch,omitempty"`
	StretchMedian float64   `json:"stretch_median,omitempty"`
	// SyncWaitSeconds per round: its statements' sync waits summed.
	SyncWaitSeconds []float64 `json:"sync_wait_seconds"`
	SyncWaitMedian  float64   `json:"sync_wait_seconds_median"`
	WallMedian      float64   `json:"wall_seconds_median"`
	// WindowRounds counts the rounds that issued statements past their
	// schedule window, which the comparison measured within it
	// (results.Window); WindowMedian is their windows' median length,
	// AfterMedian how long they ran past it (s).
	WindowRounds int     `json:"window_rounds,omitempty"`
	WindowMedian float64 `json:"window_seconds_median,omitempty"`
	AfterMedian  float64 `json:"after_window_seconds_median,omitempty"`
	// Pooled: its rounds replayed the sessions as a pool (--pool).
	Pooled bool `json:"pooled,omitempty"`
}

// Stretch is a replay's wall time over its log's span at its speed; 0
// when not known (speed 0, a span or a wall time missing).
func Stretch(res *results.Result) float64 {
	if res == nil || res.Replay == nil || res.Speed <= 0 || res.WallSeconds <= 0 || res.LastTime <= res.FirstTime {
		return 0
	}
	span := float64(res.LastTime-res.FirstTime) / 1e6 / res.Speed
	return res.WallSeconds / span
}

func sideThrottle(rs []*results.Result) SideThrottle {
	var s SideThrottle
	var walls, windows, after []float64
	for _, res := range rs {
		if res == nil || res.Replay == nil {
			continue
		}
		if w := res.Window; w != nil {
			windows, after = append(windows, w.Seconds), append(after, w.AfterSeconds)
		}
		var wait float64
		if res.SyncWait != nil {
			wait = res.SyncWait.TotalMS / 1000
		}
		s.SyncWaitSeconds = append(s.SyncWaitSeconds, wait)
		walls = append(walls, res.WallSeconds)
		s.Pooled = s.Pooled || res.Pooled
		if x := Stretch(res); x > 0 && len(s.Stretch) == len(s.SyncWaitSeconds)-1 {
			s.Stretch = append(s.Stretch, x)
		} else {
			s.Stretch = nil // every round's or none
		}
	}
	if len(s.SyncWaitSeconds) > 0 {
		s.SyncWaitMedian, s.WallMedian = stats.Median(s.SyncWaitSeconds), stats.Median(walls)
	}
	if len(s.Stretch) > 0 {
		s.StretchMedian = stats.Median(s.Stretch)
	}
	if s.WindowRounds = len(windows); s.WindowRounds > 0 {
		s.WindowMedian, s.AfterMedian = stats.Median(windows), stats.Median(after)
	}
	return s
}

// Throttling measures the rounds of each side (see Throttle); nil when a
// side has no replayed round.
func Throttling(control, candidate []*results.Result) *Throttle {
	t := &Throttle{Control: sideThrottle(control), Candidate: sideThrottle(candidate)}
	c, k := &t.Control, &t.Candidate
	if len(c.SyncWaitSeconds) == 0 || len(k.SyncWaitSeconds) == 0 {
		return nil
	}
	if len(c.Stretch) > 0 && len(k.Stretch) > 0 {
		t.Stretched = k.StretchMedian >= ThrottleStretch*c.StretchMedian && slices.Min(k.Stretch) > slices.Max(c.Stretch)
	}
	t.WaitsDominate = k.WallMedian > 0 && k.SyncWaitMedian >= ThrottleWaitShare*k.WallMedian &&
		k.SyncWaitMedian >= ThrottleWaitRatio*c.SyncWaitMedian && slices.Min(k.SyncWaitSeconds) > slices.Max(c.SyncWaitSeconds)
	// A pooled replay's transactions wait for a free connection as the
	// application's would have: its stretch is the candidate's.
	t.Throttled = t.Stretched && !k.Pooled || t.WaitsDominate
	return t
}

// syncOf is how the rounds' replays synchronized their sessions: that of
// the first round that says; empty when none does.
func syncOf(rs ...[]*results.Result) results.SyncMode {
	for _, side := range rs {
		for _, res := range side {
			if res != nil && res.Replay != nil && res.Sync != nil {
				return res.Sync.Mode
			}
		}
	}
	return ""
}

// measureLoad sets what the index says of the rounds' load: their sync
// mode and Throttle.
func (o *Outcome) measureLoad() {
	o.Sync = syncOf(o.Control, o.Candidate)
	o.Throttle = Throttling(o.Control, o.Candidate)
}
