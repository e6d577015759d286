// Command genlog writes a synthetic PostgreSQL stderr log of a given size
// to standard output, for bench/parse.sh.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/pgrehearse/pgrehearse/internal/synthlog"
)

func main() {
	mb := flag.Int64("mb", 1024, "size of the log in MiB")
	flag.Parse()
	if err := synthlog.Write(os.Stdout, *mb<<20); err != nil {
		fmt.Fprintln(os.Stderr, "genlog:", err)
		os.Exit(1)
	}
}
