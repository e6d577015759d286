package logread

import (
	"bytes"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/synthlog"
)

func syntheticLog(size int) []byte {
	var b bytes.Buffer
	if err := synthlog.Write(&b, int64(size)); err != nil {
		panic(err)
	}
	return b.Bytes()
}

const benchPrefix = synthlog.Prefix

func BenchmarkStderrReader(b *testing.B) {
	data := syntheticLog(64 << 20)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		r, err := NewReader(bytes.NewReader(data), "bench", Options{Format: FormatStderr, Prefix: benchPrefix})
		if err != nil {
			b.Fatal(err)
		}
		n := countEvents(b, r)
		if n == 0 {
			b.Fatal("no events")
		}
	}
}
