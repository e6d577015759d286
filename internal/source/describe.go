package source

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pgrehearse/pgrehearse/internal/capture"
	"github.com/pgrehearse/pgrehearse/internal/shard"
)

// Describe names the input at path by its size and a content hash, as a
// shard plan and a result record it, so that the shards of one replay and
// its plan can tell that they read the same input: a log file (or one
// segment file of a capture) by shard.FileHash; a capture directory by
// its segment files together, in order, their sizes added up and the
// hash taken over each one's. A capture's manifest is left out: it is
// written when the capture is closed, and says nothing of its records.
func Describe(path string) (shard.File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return shard.File{}, err
	}
	if !st.IsDir() {
		return shard.FileHash(path)
	}
	if ok, err := capture.Detect(path); err != nil || !ok {
		if err == nil {
			err = fmt.Errorf("%s is a directory, and not a capture: it holds no capture segment", path)
		}
		return shard.File{}, err
	}
	segs, err := capture.Segments(path)
	if err != nil {
		return shard.File{}, err
	}
	h := sha256.New()
	out := shard.File{Name: path}
	for _, seg := range segs {
		fh, err := shard.FileHash(seg)
		if err != nil {
			return shard.File{}, err
		}
		fmt.Fprintf(h, "%s %d %s\n", filepath.Base(seg), fh.Size, fh.Hash)
		out.Size += fh.Size
	}
	out.Hash = hex.EncodeToString(h.Sum(nil))
	return out, nil
}
