package compare

import "fmt"

// sharedCPUWarning says when a run's rate undersells the target: a replay
// as fast as possible (speed 0) on the target's own machine took CPU from
// the server it measured, so its statements/s is a lower bound of the
// target's, and its latencies carry that competition.
func sharedCPUWarning(r *Run) (string, bool) {
	if r.Replay == nil || !r.Unpaced() || !r.TargetLocal {
		return "", false
	}
	w, cpu := r.Name()+" replayed at speed 0 on the target's machine", "the replayer's CPU"
	if r.ClientCPUSeconds > 0 && r.WallSeconds > 0 {
		// A short run's CPU is a fraction of a second: 0.0 would read
		// as none.
		prec := 1
		if r.ClientCPUSeconds < 1 {
			prec = 2
		}
		w += fmt.Sprintf(", where the replayer itself used %.*f CPU-seconds (%.2f cores on average)",
			prec, r.ClientCPUSeconds, r.ClientCPUSeconds/r.WallSeconds)
		cpu = "that CPU"
	}
	rate := "its statements/s"
	if span := r.SpanSeconds(); span > 0 {
		rate = fmt.Sprintf("its %.1f statements/s", float64(r.Statements.Total)/span)
	}
	w += ": " + cpu + " was taken from the server, so " + rate + " is a lower bound of the target's own rate"
	if r.LatencySource == LatencyClient {
		w += " and its latencies (client round trips) include the competition"
	} else {
		w += " and its latencies may include waiting for CPU"
	}
	return w + "; replay from another machine to measure the target alone", true
}
