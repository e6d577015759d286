package querystats

import (
	"fmt"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// NewHistogram returns an empty latency histogram in µs with the geometry
// every histogram of pgrehearse has (1 µs to 24 hours, 3 significant
// digits), so that any two merge bucket for bucket. Values above 24 hours
// must be recorded as 24 hours.
func NewHistogram() *hdrhistogram.PackedHistogram { return newHist() }

// MaxHistogramValue is the largest value a histogram of NewHistogram
// holds, in µs.
const MaxHistogramValue = histHighest

// EncodeHistogram returns h in the HdrHistogram V2 compressed form,
// base64 encoded, as results carry histograms.
func EncodeHistogram(h *hdrhistogram.PackedHistogram) (string, error) {
	b, err := h.Encode()
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// DecodeHistogram reads a histogram written by EncodeHistogram (or by
// HdrHistogram in any language) into the geometry of NewHistogram, so
// that a foreign geometry cannot change how later values are bucketed.
func DecodeHistogram(s string) (*hdrhistogram.PackedHistogram, error) {
	h, err := hdrhistogram.DecodePacked([]byte(s))
	if err != nil {
		return nil, err
	}
	own := newHist()
	if dropped := own.Merge(h); dropped != 0 {
		return nil, fmt.Errorf("%d values out of range", dropped)
	}
	return own, nil
}
