package logread

import (
	"os"
	"strings"
)

// Tests read stderr logs in small chunks, so that every test's input, and
// every fuzzer's, goes through the reuse of chunks (lineReader.recycle)
// and the copies the interpreter makes of the text it keeps; and a chunk
// released is overwritten, so that text still referring to it shows in
// the events. Benchmarks read in chunks of the real size.
func init() {
	if benchmarking() {
		return
	}
	chunkSize = 256
	poisonChunks = true
}

// benchmarking reports whether the test binary was asked to run
// benchmarks: flags are not parsed yet when packages initialize.
func benchmarking() bool {
	for i, a := range os.Args[1:] {
		a = strings.TrimLeft(a, "-")
		if v, ok := strings.CutPrefix(a, "test.bench="); ok {
			return v != ""
		}
		if a == "test.bench" && i+2 < len(os.Args) {
			return os.Args[i+2] != ""
		}
	}
	return false
}
