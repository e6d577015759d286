package shard

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
)

// headTail is how much of each end of a file FileHash reads.
const headTail = 64 << 10

// FileHash describes a log file by its size and a SHA-256 of its first
// and last 64 KiB: two copies of one log agree, and two different logs
// (another day, another server, one that grew) almost surely do not.
func FileHash(path string) (File, error) {
	f, err := os.Open(path)
	if err != nil {
		return File{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return File{}, err
	}
	h := sha256.New()
	fmt.Fprintf(h, "%d\n", st.Size())
	if _, err := io.CopyN(h, f, min(headTail, st.Size())); err != nil {
		return File{}, err
	}
	if st.Size() > headTail {
		off := max(st.Size()-headTail, headTail)
		if _, err := f.Seek(off, io.SeekStart); err != nil {
			return File{}, err
		}
		if _, err := io.CopyN(h, f, st.Size()-off); err != nil {
			return File{}, err
		}
	}
	return File{Name: path, Size: st.Size(), Hash: hex.EncodeToString(h.Sum(nil))}, nil
}
