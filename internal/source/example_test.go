package source_test

import (
	"fmt"
	"maps"
	"slices"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/logread"
	"github.com/pgrehearse/pgrehearse/internal/source"
)

// A log opened as every command opens its input: its events, then the
// counts that account for every line (parsed or skipped, by reason).
// A capture's path opens the same way, and its counts are messages.
func ExampleOpen() {
	set, err := source.Paths{"../logread/testdata/stderr/log_statement.log"}.Open(source.Options{
		Log:    logread.Options{Prefix: "%m [%p] %q%u@%d/%a "},
		Select: &source.Selection{},
	})
	if err != nil {
		panic(err)
	}
	defer set.Close()
	kinds := map[event.Kind]int{}
	for _, src := range set.Sources() {
		for ev, err := range event.All(src) {
			if err != nil {
				panic(err)
			}
			kinds[ev.Kind]++
		}
	}
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		fmt.Printf("%s: %d\n", k, kinds[k])
	}
	lines := set.Counts().Lines
	fmt.Printf("lines: %d, parsed %d, skipped %d\n", lines.Total, lines.Parsed, lines.SkippedTotal())
	// Output:
	// connect: 3
	// disconnect: 1
	// statement: 8
	// error: 2
	// lines: 37, parsed 26, skipped 11
}
