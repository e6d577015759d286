package event

import (
	"errors"
	"io"
	"testing"
)

// sliceSource yields its events, then err.
type sliceSource struct {
	evs []*Event
	err error
}

func (s *sliceSource) Next() (*Event, error) {
	if len(s.evs) == 0 {
		return nil, s.err
	}
	ev := s.evs[0]
	s.evs = s.evs[1:]
	return ev, nil
}

// TestAll: All yields every event up to io.EOF, yields another error
// once with no event and stops there, and stops when its loop breaks.
func TestAll(t *testing.T) {
	evs := []*Event{{Line: 1}, {Line: 2}, {Line: 3}}
	var lines []int64
	for ev, err := range All(&sliceSource{evs: evs, err: io.EOF}) {
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, ev.Line)
	}
	if len(lines) != 3 || lines[0] != 1 || lines[2] != 3 {
		t.Errorf("lines %v, want 1 2 3", lines)
	}
	broken := errors.New("broken")
	var errs, seen int
	for ev, err := range All(&sliceSource{evs: evs[:1], err: broken}) {
		if err != nil {
			if !errors.Is(err, broken) || ev != nil {
				t.Errorf("error %v with event %v", err, ev)
			}
			errs++
			continue
		}
		seen++
	}
	if errs != 1 || seen != 1 {
		t.Errorf("%d events and %d errors, want 1 and 1", seen, errs)
	}
	src := &sliceSource{evs: evs, err: io.EOF}
	for range All(src) {
		break
	}
	if len(src.evs) != 2 {
		t.Errorf("%d events left after a break at the first, want 2", len(src.evs))
	}
}
