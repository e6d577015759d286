package targetlog

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Expand expands a target's server log patterns into files, sorted
// per pattern, each once. A path that is no pattern stays as given when
// no file has it yet (the server may not have written it); a pattern
// that matches no file is an error: the round's server-side durations
// would silently be missing. A path that names a file is that file,
// whatever characters it holds ("pg[1].log"), so that a list Expand gave
// is its own expansion: rounds expands a round's logs and
// replayrun.Run expands what it is given again.
func Expand(patterns []string) ([]string, error) {
	var files []string
	for _, p := range patterns {
		if _, err := os.Stat(p); err == nil {
			if !slices.Contains(files, p) {
				files = append(files, p)
			}
			continue
		}
		found, err := filepath.Glob(p)
		if err != nil {
			return nil, fmt.Errorf("target log %q: %w", p, err)
		}
		if len(found) == 0 {
			if strings.ContainsAny(p, "*?[") {
				return nil, fmt.Errorf("target log %q matches no file", p)
			}
			// A file the server has not written yet is still the
			// place to read from.
			found = []string{p}
		}
		slices.Sort(found)
		for _, f := range found {
			if !slices.Contains(files, f) {
				files = append(files, f)
			}
		}
	}
	return files, nil
}
