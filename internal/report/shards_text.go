package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/results"
)

// WriteShards writes what each shard of a merged replay did, one line a
// shard (statements, time, CPU, memory, lag, clock), then the spread of
// their clocks and which shard's replayer was the bottleneck, if any.
// Nothing for a result that is not a merge of shards.
func WriteShards(w io.Writer, res *results.Result) error {
	if res.Replay == nil || len(res.Shards) == 0 {
		return nil
	}
	var b strings.Builder
	for _, s := range res.Shards {
		fmt.Fprintf(&b, "  shard %d", s.Shard)
		if s.Host != "" {
			fmt.Fprintf(&b, " (%s)", s.Host)
		}
		fmt.Fprintf(&b, ": %d statements in %.1f s", s.Statements, s.WallSeconds)
		if s.CPUSeconds > 0 && s.WallSeconds > 0 {
			fmt.Fprintf(&b, ", CPU %.1f s (%.2f of %d cores)", s.CPUSeconds, s.CPUSeconds/s.WallSeconds, s.Cores)
		}
		if s.MaxRSSBytes > 0 {
			fmt.Fprintf(&b, ", max RSS %.0f MB", float64(s.MaxRSSBytes)/(1<<20))
		}
		if s.LagP99MS != nil {
			fmt.Fprintf(&b, ", lag p99 %.2f ms", *s.LagP99MS)
		}
		if c := s.Clock; c != nil {
			fmt.Fprintf(&b, ", clock %+.2f ms (±%.2f)", c.OffsetMS, c.RTTMS/2)
		}
		if s.ReplayerBound {
			b.WriteString("; ITS REPLAYER WAS THE BOTTLENECK (CPU saturated while behind its schedule)")
		}
		if len(s.Incomplete) > 0 {
			fmt.Fprintf(&b, "; incomplete: %s", joinReasons(s.Incomplete))
		}
		b.WriteString("\n")
	}
	if spread, within, ok := res.ClockSpreadMS(); ok {
		fmt.Fprintf(&b, "  clocks:     the shards' offsets against the coordination server spread over %.2f ms (each known to ±%.2f ms); their schedules started at the same instant on that clock\n", spread, within)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// ShardFailureText says why a shard is missing from a merge or failed.
func ShardFailureText(f results.ShardFailure) string {
	var parts []string
	if f.Missing {
		parts = append(parts, "no result")
	}
	if len(f.LostBy) > 0 {
		parts = append(parts, fmt.Sprintf("shards %v saw it lost during the replay (failed or killed)", f.LostBy))
	}
	if len(f.Incomplete) > 0 {
		parts = append(parts, "its result is incomplete: "+joinReasons(f.Incomplete))
	}
	return fmt.Sprintf("shard %d: %s", f.Shard, strings.Join(parts, "; "))
}

func joinReasons(rs []results.IncompleteReason) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = string(r)
	}
	return strings.Join(s, ", ")
}

// WriteShardStarted says that shard k of n of the round label names
// ("headroom: step 3") is process pid, and which slice of a fold it
// replays (slice: its start, µs since the epoch; 0: not a slice).
func WriteShardStarted(w io.Writer, label string, k, n, pid int, slice int64) {
	at := ""
	if slice != 0 {
		at = ", the slice from " + time.UnixMicro(slice).UTC().Format(time.RFC3339Nano)
	}
	fmt.Fprintf(w, "%s: shard %d of %d is process %d%s\n", label, k, n, pid, at)
}

// WriteShardFailed says that shard k of n (process pid) of the round
// label names failed, with the end of its output.
func WriteShardFailed(w io.Writer, label string, k, n, pid int, output string) {
	fmt.Fprintf(w, "%s: shard %d of %d (process %d) failed; the end of its output:\n%s", label, k, n, pid, indent(output, "    "))
}

// indent prefixes each of the last 20 non-empty lines of s with p, each
// ending in a newline.
func indent(s, p string) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	lines = lines[max(0, len(lines)-20):]
	var b strings.Builder
	for _, l := range lines {
		if strings.TrimSpace(l) != "" {
			b.WriteString(p + l + "\n")
		}
	}
	return b.String()
}
