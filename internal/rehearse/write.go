package rehearse

import (
	"fmt"
	"io"

	"github.com/pgrehearse/pgrehearse/internal/outfile"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// writeAtomic writes v's JSON form to path so that a reader, or a crash,
// sees either the old file or the new one whole (outfile.Write).
func writeAtomic(path string, v any) error {
	if err := outfile.Write(path, func(w io.Writer) error { return results.Encode(w, v) }); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
