package results

import (
	"fmt"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/pgrehearse/pgrehearse/internal/querystats"
)

// Distribution summarizes a distribution of durations (a replay's lag,
// its sync waits), in milliseconds, with the histogram it comes from so
// that two merge exactly.
type Distribution struct {
	Count int64   `json:"count"`
	P50   float64 `json:"p50"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
	// TotalMS is the sum of every duration.
	TotalMS float64 `json:"total_ms"`
	// Hist is the histogram in µs, HdrHistogram V2 compressed and base64
	// encoded; absent in files of version 1.
	Hist string `json:"hist,omitempty"`
}

// Recorder builds a Distribution. It is not safe for concurrent use.
type Recorder struct {
	h       *hdrhistogram.PackedHistogram
	n       int64
	totalUS int64
	maxUS   int64
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder { return &Recorder{} }

// Record adds one duration in µs; a negative one counts as 0.
func (r *Recorder) Record(us int64) {
	us = max(us, 0)
	if r.h == nil {
		r.h = querystats.NewHistogram()
	}
	_ = r.h.RecordValue(min(us, querystats.MaxHistogramValue))
	r.n++
	r.totalUS += us
	r.maxUS = max(r.maxUS, us)
}

// Merge adds every duration of o.
func (r *Recorder) Merge(o *Recorder) {
	if o == nil || o.n == 0 {
		return
	}
	if r.h == nil {
		r.h = querystats.NewHistogram()
	}
	r.h.Merge(o.h)
	r.n += o.n
	r.totalUS += o.totalUS
	r.maxUS = max(r.maxUS, o.maxUS)
}

// Count is the number of durations recorded.
func (r *Recorder) Count() int64 { return r.n }

// Distribution returns the summary, histogram included. It is never nil:
// an empty Recorder gives a Distribution of no durations.
func (r *Recorder) Distribution() (*Distribution, error) {
	d := &Distribution{Count: r.n, TotalMS: float64(r.totalUS) / 1000}
	if r.n == 0 {
		return d, nil
	}
	d.P50 = ms(r.Percentile(50))
	d.P99 = ms(r.Percentile(99))
	d.Max = ms(r.maxUS)
	s, err := querystats.EncodeHistogram(r.h)
	if err != nil {
		return nil, err
	}
	d.Hist = s
	return d, nil
}

// Percentile is the duration in µs at percentile p (0..100), never above
// the exact maximum (the histogram answers with the top of a bucket); 0
// without durations.
func (r *Recorder) Percentile(p float64) int64 {
	if r.n == 0 {
		return 0
	}
	return min(r.h.ValueAtPercentile(p), r.maxUS)
}

// Recorder rebuilds the Recorder of d, to merge it; it fails for a
// Distribution without its histogram (version 1).
func (d *Distribution) Recorder() (*Recorder, error) {
	r := &Recorder{}
	if d == nil || d.Count == 0 {
		return r, nil
	}
	if d.Hist == "" {
		return nil, errNoHist
	}
	h, err := querystats.DecodeHistogram(d.Hist)
	if err != nil {
		return nil, err
	}
	if h.TotalCount() != d.Count {
		return nil, fmt.Errorf("the histogram holds %d values for a count of %d", h.TotalCount(), d.Count)
	}
	r.h, r.n = h, d.Count
	r.totalUS = us(d.TotalMS)
	r.maxUS = us(d.Max)
	return r, nil
}

func ms(us int64) float64 { return float64(us) / 1000 }

func us(ms float64) int64 {
	if ms < 0 {
		return 0
	}
	return int64(ms*1000 + 0.5)
}
