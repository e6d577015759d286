package rehearse

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pgrehearse/pgrehearse/internal/results"
)

// writeAtomic writes v's JSON form to path so that a reader, or a crash,
// sees either the old file or the new one whole: a temporary file in the
// same directory, synced, then renamed over path.
func writeAtomic(path string, v any) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			err = errors.Join(fmt.Errorf("write %s: %w", path, err), os.Remove(tmp))
		}
	}()
	if err := results.Encode(f, v); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
