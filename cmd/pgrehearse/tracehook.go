//go:build tracehook

package main

import (
	"os"
	"runtime/trace"
	"strconv"
	"strings"
	"time"
)

// PGREHEARSE_TRACE=FILE,START,SECONDS writes an execution trace of
// SECONDS, START seconds after the process starts (go build -tags
// tracehook): a diagnostic build for bench/ctlinflate.sh.
func init() {
	v := os.Getenv("PGREHEARSE_TRACE")
	if v == "" {
		return
	}
	p := strings.Split(v, ",")
	start, _ := strconv.ParseFloat(p[1], 64)
	secs, _ := strconv.ParseFloat(p[2], 64)
	go func() {
		time.Sleep(time.Duration(start * float64(time.Second)))
		f, err := os.Create(p[0])
		if err != nil {
			return
		}
		trace.Start(f)
		time.Sleep(time.Duration(secs * float64(time.Second)))
		trace.Stop()
		f.Close()
	}()
}
