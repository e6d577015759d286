package event

import (
	"errors"
	"fmt"
	"io"
	"iter"
)

// Source yields events in the order they were logged, then io.EOF. A
// log reader is one, and so is every selection decorator of package
// source; analyze and replay consume Sources and know nothing else of
// where the events came from (a log today, a capture proxy later).
//
// A Source is read from one goroutine at a time. The Event it returns
// stays valid until it is given back through Recycler, if the Source is
// one; a consumer that never recycles may keep every event.
type Source interface {
	Next() (*Event, error)
}

// All yields src's events up to its io.EOF; an error other than io.EOF
// is yielded (with a nil event) and ends the sequence.
func All(src Source) iter.Seq2[*Event, error] {
	return func(yield func(*Event, error) bool) {
		for {
			ev, err := src.Next()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				yield(nil, err)
				return
			}
			if !yield(ev, nil) {
				return
			}
		}
	}
}

// Named is a Source that knows its name (a file), listed in a result's
// files.
type Named interface {
	Name() string
}

// Recycler is a Source that takes back events its consumer no longer
// holds, to fill them again instead of allocating. A consumer that
// recycles gives each event back once, after its last use, from the
// goroutine that reads the Source.
type Recycler interface {
	Recycle(evs ...*Event)
}

// Size estimates the memory an event holds: its strings and a fixed share
// for the struct and a queue's slot. Consumers that hold events (a
// replay's queues, a lookahead) bound their memory with it.
func (e *Event) Size() int64 {
	n := int64(256 + len(e.Query) + len(e.ErrorMessage()))
	for _, p := range e.Params {
		n += int64(len(p.Value)) + 24
	}
	for _, c := range e.CopyIns() {
		for _, d := range c.Data {
			n += int64(len(d)) + 24
		}
	}
	return n
}

// MarshalText writes the kind's name, so that counts keyed by Kind are
// written as {"connect": 3, ...}.
func (k Kind) MarshalText() ([]byte, error) {
	if k == 0 || int(k) >= len(kindNames) {
		return nil, fmt.Errorf("event kind %d has no name", k)
	}
	return []byte(kindNames[k]), nil
}

// UnmarshalText reads a kind's name.
func (k *Kind) UnmarshalText(b []byte) error {
	for i, n := range kindNames {
		if i > 0 && n == string(b) {
			*k = Kind(i)
			return nil
		}
	}
	return fmt.Errorf("unknown event kind %q", b)
}
