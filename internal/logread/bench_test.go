package logread

import (
	"bytes"
	"os"
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

// BenchmarkReadLogFile reads the log file named by $PGREHEARSE_BENCH_LOG
// as the events command does (detecting everything): a way to measure the
// reader on any log, or to count its instructions under callgrind, which
// a binary with cgo (the pgrehearse command) trips up:
//
//	go test -c -o lr.test ./internal/logread
//	PGREHEARSE_BENCH_LOG=real.log GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind \
//	    ./lr.test -test.run '^$' -test.bench ReadLogFile -test.benchtime 1x
func BenchmarkReadLogFile(b *testing.B) {
	path := os.Getenv("PGREHEARSE_BENCH_LOG")
	if path == "" {
		b.Skip("PGREHEARSE_BENCH_LOG names no log")
	}
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(fi.Size())
	for b.Loop() {
		r, err := Open(path, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if countEvents(b, r) == 0 {
			b.Fatal("no events")
		}
		r.Close()
	}
}
