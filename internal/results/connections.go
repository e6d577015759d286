package results

import (
	"github.com/pgrehearse/pgrehearse/internal/querystats"
)

// Connections is how long a replay's connections took to set up on the
// target: each from its connect call's start until the session was ready
// for its first statement (the TCP or socket connection, the backend's
// start, authentication and the startup settings the session sends), the
// time waiting for its client's previous session or for its schedule
// left out. An application that connects per request (PHP, serverless)
// pays it on every request, and a change of authentication or of the
// server's start-up moves it (issue 76). Nil in a dry run and in results
// written before it was recorded.
type Connections struct {
	// Count is the connections made and timed (reconnections
	// included); Failed the attempts that failed (each retry one), not
	// timed.
	Count  int64 `json:"count"`
	Failed int64 `json:"failed"`
	// MeanMS and P95MS are the setup time's mean and p95 over Count.
	MeanMS float64 `json:"mean_ms"`
	P95MS  float64 `json:"p95_ms"`
	// Setup is the distribution of the setup times, with its histogram
	// (µs), so that shards merge exactly.
	Setup Distribution `json:"setup_ms"`
}

// ConnectionsOf summarizes the setup times rec recorded and the failed
// attempts.
func ConnectionsOf(rec *Recorder, failed int64) (*Connections, error) {
	d, err := rec.Distribution()
	if err != nil {
		return nil, err
	}
	c := &Connections{Count: rec.Count(), Failed: failed, Setup: *d}
	if c.Count > 0 {
		c.MeanMS = d.TotalMS / float64(c.Count)
		c.P95MS = ms(rec.Percentile(95))
	}
	return c, nil
}

// Row is the connections as a query's row (querystats.Row): the
// attempts as calls, the failed ones as errors, those made timed, with the setup time's figures and
// histogram; fingerprint and query empty. A comparison judges it as it
// judges a query's round trips, and says it is connection setup.
func (c *Connections) Row() (querystats.Row, error) {
	rec, err := c.Setup.Recorder()
	if err != nil {
		return querystats.Row{}, err
	}
	r := querystats.Row{Calls: c.Count + c.Failed, Errors: c.Failed, Hist: c.Setup.Hist,
		Latency: querystats.Latency{TimedCalls: c.Count, TotalMS: c.Setup.TotalMS, MeanMS: c.MeanMS,
			P50MS: ms(rec.Percentile(50)), P95MS: ms(rec.Percentile(95)), P99MS: ms(rec.Percentile(99))}}
	if c.Count > 0 {
		r.MinMS, r.MaxMS = ms(rec.Percentile(0)), c.Setup.Max
	}
	return r, nil
}

// mergeConnections adds two parts' connections; nil when neither has
// them (a result from before, a dry run).
func mergeConnections(a, b *Result, x, y *Connections) (*Connections, error) {
	if x == nil && y == nil {
		return nil, nil
	}
	var rec *Recorder
	var failed int64
	for i, c := range []*Connections{x, y} {
		if c == nil {
			continue
		}
		r, err := c.Setup.Recorder()
		if err != nil {
			return nil, tooOldDist([]*Result{a, b}[i], err)
		}
		if rec == nil {
			rec = r
		} else {
			rec.Merge(r)
		}
		failed += c.Failed
	}
	return ConnectionsOf(rec, failed)
}
