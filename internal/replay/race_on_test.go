//go:build race

package replay

// raceEnabled says the test binary runs under the race detector, whose
// shadow memory and per-goroutine state count in the process's RSS.
const raceEnabled = true
