package cli

import "github.com/pgrehearse/pgrehearse/internal/testgate"

// cases runs the package's functional cases (parallelCase, slowCase) as
// many at a time as -parallel says, the longest first (internal/testgate).
// In a quiet run at six at a time, before the gate,
// TestReplaySurvivesFaults (64 s) started 100 s after the others and ran
// alone for its last 40, when the cases, longest first, fit in about
// half the time (issue 44: make test within 15 minutes). TestMain hands
// Go's limit to the gate.
var cases testgate.Gate
