package source

import (
	"hash/maphash"
	"strconv"

	"github.com/pgrehearse/pgrehearse/internal/event"
)

// A fingerprint is the first events of a log, reduced to what any copy of
// the same log has in common whatever its format: the second they
// happened in, the process, the kind, the statement and the error. Two
// logs with the same fingerprint are copies of one log: the same file
// given twice, or the csvlog and jsonlog (or stderr) files one server
// wrote of the same traffic. Reading both would count every statement
// twice.
type fingerprint struct {
	keys  map[uint64]bool
	order []uint64
}

// fingerprintEvents is how many events a fingerprint holds.
const fingerprintEvents = 256

var fingerprintSeed = maphash.MakeSeed()

// fingerprintOf reduces a log's first events.
func fingerprintOf(evs []*event.Event) *fingerprint {
	f := &fingerprint{keys: make(map[uint64]bool)}
	for _, ev := range evs {
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
		f.keys[k] = true
		f.order = append(f.order, k)
	}
	return f
}

// repeats reports whether f is the fingerprint of a copy of the log o is
// the fingerprint of: all its events are o's, and there are enough of
// them to tell (a few events alike may be chance).
func (f *fingerprint) repeats(o *fingerprint) bool {
	if f == nil || o == nil || len(f.order) < 4 || len(o.order) < 4 {
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
