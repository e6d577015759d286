package analyze

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/logread"
	"github.com/pgrehearse/pgrehearse/internal/synthlog"
)

// synthEvents reads a synthetic log of size bytes (bench/genlog's) into
// events held in memory, with the log's size, so that a benchmark can
// time the analysis apart from reading. The strings alias the reader's
// buffers, as they do in a real run.
func synthEvents(tb testing.TB, size int64) ([]*event.Event, int64) {
	tb.Helper()
	var log bytes.Buffer
	if err := synthlog.Write(&log, size); err != nil {
		tb.Fatal(err)
	}
	n := int64(log.Len())
	r, err := logread.NewReader(&log, "synthetic.log", logread.Options{Format: logread.FormatStderr, Prefix: synthlog.Prefix})
	if err != nil {
		tb.Fatal(err)
	}
	var evs []*event.Event
	for ev, err := range event.All(r) {
		if err != nil {
			tb.Fatal(err)
		}
		evs = append(evs, ev)
	}
	return evs, n
}

// BenchmarkAnalyzeLog measures everything after the reader on the events
// of bench/genlog's synthetic log: fingerprint lookups, statistics,
// timeline and bookkeeping. The fingerprint cache is warm, as it is for
// all but the first moments of a large log. ns/event is the figure to
// hold against the reader's own cost per event; MB/s is of the log the
// events came from, so that both add up to analyze's speed:
// 1/analyze = 1/reader + 1/this.
func BenchmarkAnalyzeLog(b *testing.B) {
	evs, size := synthEvents(b, 16<<20)
	for _, jobs := range []int{1, 2} {
		b.Run(fmt.Sprintf("j%d", jobs), func(b *testing.B) {
			opts := Options{Jobs: jobs, Cache: fingerprint.NewCache(0)}
			if _, err := Analyze(context.Background(), []event.Source{&sliceSource{events: evs}}, opts); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.SetBytes(size)
			for b.Loop() {
				if _, err := Analyze(context.Background(), []event.Source{&sliceSource{events: evs}}, opts); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(b.N)/float64(len(evs)), "ns/event")
		})
	}
}
