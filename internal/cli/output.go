package cli

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/pgrehearse/pgrehearse/internal/outfile"
)

// checkOutputs fails, before any work, when a file the command will write
// cannot be written: pairs of a flag and its path ("" and "-" are fine).
// A replay that could not write its result would have run for nothing,
// its writes to the target done.
func checkOutputs(flagPaths ...string) error {
	for i := 0; i+1 < len(flagPaths); i += 2 {
		if err := outfile.Check(flagPaths[i+1]); err != nil {
			return fmt.Errorf("%s %s: %w; nothing was done", flagPaths[i], flagPaths[i+1], err)
		}
	}
	return nil
}

// writeJSON writes v as indented JSON to path, or to stdout for "-";
// a file is replaced atomically (outfile.Write).
func writeJSON(stdout io.Writer, path string, v any) error {
	render := func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	if path == "-" {
		if err := render(stdout); err != nil {
			return fmt.Errorf("write JSON: %w", err)
		}
		return nil
	}
	if err := outfile.Write(path, render); err != nil {
		return fmt.Errorf("write JSON: %w", err)
	}
	return nil
}
