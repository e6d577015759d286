// Command genlog writes a synthetic PostgreSQL stderr log of a given size
// to standard output, for bench/parse.sh: the benchmark log (-kind bench),
// or a log shaped like a busy production server's (-kind realistic; see
// synthlog.WriteRealistic).
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/pgrehearse/pgrehearse/internal/synthlog"
)

func main() {
	mb := flag.Int64("mb", 1024, "size of the log in MiB")
	kind := flag.String("kind", "bench", "bench or realistic")
	flag.Parse()
	write := synthlog.Write
	switch *kind {
	case "bench":
	case "realistic":
		write = synthlog.WriteRealistic
	default:
		fmt.Fprintln(os.Stderr, "genlog: -kind is bench or realistic")
		os.Exit(2)
	}
	if err := write(os.Stdout, *mb<<20); err != nil {
		fmt.Fprintln(os.Stderr, "genlog:", err)
		os.Exit(1)
	}
}
