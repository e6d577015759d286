package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"

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
	if err := writeOutput(stdout, path, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}); err != nil {
		return fmt.Errorf("write JSON: %w", err)
	}
	return nil
}

// writeOutput writes what render makes to path, replaced atomically
// (outfile.Write: a failed render or a full disk leaves the previous file
// whole), or to stdout for "-", rendered into memory first so that a
// failed render writes nothing there either.
func writeOutput(stdout io.Writer, path string, render func(io.Writer) error) error {
	if path != "-" {
		return outfile.Write(path, render)
	}
	var buf bytes.Buffer
	if err := render(&buf); err != nil {
		return err
	}
	_, err := stdout.Write(buf.Bytes())
	return err
}

// summaryWriter is where a command's summary goes: standard error when one
// of paths is standard output ("-"), which then carries that file alone
// (JSON that must stay parseable).
func summaryWriter(stdio IO, paths ...string) io.Writer {
	if slices.Contains(paths, "-") {
		return stdio.Stderr
	}
	return stdio.Stdout
}
