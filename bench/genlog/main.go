// Command genlog writes a synthetic PostgreSQL stderr log of a given size
// to standard output, for bench/parse.sh: the benchmark log (-kind bench),
// or a log shaped like a busy production server's (-kind realistic; see
// synthlog.WriteRealistic). With -span, a realistic log covers that much
// log time instead of a size, its lines -gap apart on average, its
// sessions running 10 to 10+N statements (-per-session; bench/memcap.sh).
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/synthlog"
)

func main() {
	mb := flag.Int64("mb", 1024, "size of the log in MiB")
	kind := flag.String("kind", "bench", "bench or realistic")
	span := flag.Duration("span", 0, "with -kind realistic: the log time the log covers, instead of -mb")
	gap := flag.Duration("gap", 200*time.Microsecond, "with -span: the mean time between two lines")
	perSession := flag.Int("per-session", 60, "with -span: a session runs 10 to 10+N statements")
	flag.Parse()
	write := func(w io.Writer) error { return synthlog.Write(w, *mb<<20) }
	switch {
	case *kind == "realistic" && *span > 0:
		write = func(w io.Writer) error { return synthlog.WriteRealisticFor(w, *span, *gap, *perSession) }
	case *kind == "realistic":
		write = func(w io.Writer) error { return synthlog.WriteRealistic(w, *mb<<20) }
	case *kind != "bench" || *span > 0:
		fmt.Fprintln(os.Stderr, "genlog: -kind is bench or realistic; -span is for realistic")
		os.Exit(2)
	}
	if err := write(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "genlog:", err)
		os.Exit(1)
	}
}
