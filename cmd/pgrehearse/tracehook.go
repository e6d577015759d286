//go:build tracehook

package main

import (
	"fmt"
	"os"
	"runtime/trace"
	"strconv"
	"strings"
	"time"
)

// PGREHEARSE_TRACE=FILE,START,SECONDS writes an execution trace of
// SECONDS, START seconds after the process starts (go build -tags
// tracehook): a diagnostic build for bench/ctlinflate.sh. A malformed
// value or a trace that cannot be written is said on standard error and
// leaves the run untraced.
func init() {
	v := os.Getenv("PGREHEARSE_TRACE")
	if v == "" {
		return
	}
	p := strings.Split(v, ",")
	if len(p) != 3 {
		fmt.Fprintf(os.Stderr, "pgrehearse: PGREHEARSE_TRACE=%q: want FILE,START,SECONDS; no trace\n", v)
		return
	}
	start, err1 := strconv.ParseFloat(p[1], 64)
	secs, err2 := strconv.ParseFloat(p[2], 64)
	if err1 != nil || err2 != nil || start < 0 || secs <= 0 {
		fmt.Fprintf(os.Stderr, "pgrehearse: PGREHEARSE_TRACE=%q: START and SECONDS must be numbers, SECONDS above 0; no trace\n", v)
		return
	}
	go func() {
		time.Sleep(time.Duration(start * float64(time.Second)))
		f, err := os.Create(p[0])
		if err == nil {
			err = trace.Start(f)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "pgrehearse: PGREHEARSE_TRACE: %v; no trace\n", err)
			return
		}
		time.Sleep(time.Duration(secs * float64(time.Second)))
		trace.Stop()
		if err := f.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "pgrehearse: PGREHEARSE_TRACE: %v\n", err)
		}
	}()
}
