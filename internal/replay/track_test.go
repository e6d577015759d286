package replay

import (
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/syncdep"
)

// trackCache fingerprints the statements the tests give a tracker
// (track); it is safe for concurrent use.
var trackCache = fingerprint.NewCache(0)

// track gives the tracker's session s an execution of sql from start to
// end (log time, µs), and returns what the tracker made of it.
func track(s *syncdep.Session, start, end int64, sql string) syncdep.Step {
	return s.Event(syncdep.Exec{Start: start, End: end, Items: trackCache.Get(sql), Text: sql})
}

// trackAt is track of an execution that took 1 µs from at.
func trackAt(s *syncdep.Session, at int64, sql string) syncdep.Step {
	return track(s, at, at+1, sql)
}
