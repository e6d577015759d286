package report

import (
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/proxy"
)

// TestRelayQuantiles: the quantiles are said as the bucket bounds they
// are, "over" past the last, "none" without chunks.
func TestRelayQuantiles(t *testing.T) {
	var some, over proxy.RelayTimes
	some.Buckets[1] = 98 // at most 25µs
	some.Buckets[6] = 2  // at most 1ms
	over.Buckets[0] = 1
	over.Over = 1
	for _, c := range []struct {
		t    proxy.RelayTimes
		want string
	}{
		{proxy.RelayTimes{}, "none"},
		{some, "p50 at most 25µs, p99 at most 1ms"},
		{over, "p50 at most 10µs, p99 over 100ms"},
	} {
		if got := relayQuantiles(c.t.Quantile); got != c.want {
			t.Errorf("%+v: %q, want %q", c.t, got, c.want)
		}
	}
}
