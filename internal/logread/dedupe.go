package logread

import (
	"errors"
	"hash/maphash"
	"io"
	"strconv"

	"github.com/pgrehearse/pgrehearse/internal/event"
)

// A Fingerprint is the first events of a log, reduced to what any copy of
// the same log has in common whatever its format: the second they
// happened in, the process, the kind, the statement and the error. Two
// logs with the same fingerprint are copies of one log: the same file
// given twice, or the csvlog and jsonlog (or stderr) files one server
// wrote of the same traffic. Reading both would count every statement
// twice.
type Fingerprint struct {
	keys  map[uint64]bool
	order []uint64
}

// fingerprintEvents is how many events a fingerprint holds.
const fingerprintEvents = 256

var fingerprintSeed = maphash.MakeSeed()

// FingerprintOf reads the first events of the log at path. It is not for
// standard input, which can be read only once.
func FingerprintOf(path string, opts Options) (*Fingerprint, error) {
	r, err := Open(path, opts)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	f := &Fingerprint{keys: make(map[uint64]bool)}
	for len(f.order) < fingerprintEvents {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if ev.Kind == event.Connect || ev.Kind == event.Disconnect {
			// Their times are the line's in one format, the statement's
			// start in none: connection lines alike are common.
			continue
		}
		var h maphash.Hash
		h.SetSeed(fingerprintSeed)
		// Seconds: %t writes no fraction. A timed statement's time is the
		// line's minus its duration, so the line's second is used.
		t := ev.Time
		if ev.Duration > 0 {
			t += ev.Duration
		}
		h.WriteString(strconv.FormatInt(t/1e6, 10))
		h.WriteByte(0)
		h.WriteString(strconv.Itoa(int(ev.PID)))
		h.WriteByte(byte(ev.Kind))
		h.WriteString(ev.Query)
		h.WriteByte(0)
		h.WriteString(ev.ErrorMessage())
		k := h.Sum64()
		if !f.keys[k] {
			f.keys[k] = true
		}
		f.order = append(f.order, k)
	}
	return f, nil
}

// Repeats reports whether f is the fingerprint of a copy of the log o is
// the fingerprint of: all its events are o's, and there are enough of
// them to tell (a few events alike may be chance).
func (f *Fingerprint) Repeats(o *Fingerprint) bool {
	if len(f.order) < 4 || len(o.order) < 4 {
		return false
	}
	same := 0
	for _, k := range f.order {
		if o.keys[k] {
			same++
		}
	}
	return same*10 >= len(f.order)*9
}
