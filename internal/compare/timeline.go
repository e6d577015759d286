package compare

import (
	"github.com/pgrehearse/pgrehearse/internal/timeline"
)

// Gap is a stretch of a run's timeline in which no statement started.
type Gap struct {
	// FromS and ToS are seconds from the timeline's start.
	FromS float64 `json:"from_s"`
	ToS   float64 `json:"to_s"`
	// Stall: a statement that started before the gap was still running
	// when it began (sessions waiting on the server: a lock, a stalled
	// I/O, a checkpoint); otherwise the gap is idle (no traffic).
	Stall bool `json:"stall"`
}

// gaps finds a timeline's gaps. Whether a statement was running is told
// from the longest duration each earlier bucket's latency bins show: one
// that started in a bucket at its start at the earliest and lasted that
// long ended after the gap began.
func gaps(tl *Timeline) []Gap {
	if tl == nil || tl.BucketMS <= 0 {
		return nil
	}
	width := float64(tl.BucketMS) / 1000
	var out []Gap
	// busyUntil is the latest time (s) a statement started so far is
	// known to have run until.
	busyUntil := 0.0
	for i := 0; i < len(tl.Calls); {
		if tl.Calls[i] > 0 {
			if i < len(tl.Bins) {
				bins := tl.Bins[i]
				var longest float64
				for k := 0; k+1 < len(bins); k += 2 {
					longest = max(longest, timeline.BinLowUS(bins[k])/1e6)
				}
				busyUntil = max(busyUntil, float64(i)*width+longest)
			}
			i++
			continue
		}
		j := i
		for j < len(tl.Calls) && tl.Calls[j] == 0 {
			j++
		}
		from := float64(i) * width
		out = append(out, Gap{FromS: from, ToS: float64(j) * width, Stall: busyUntil > from})
		i = j
	}
	return out
}
