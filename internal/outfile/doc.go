// Package outfile writes the files a command produces (results JSON, HTML
// pages, evidence) safely: Check, before any work, says why a path cannot
// be written (a missing directory, no permission), so that a replay does
// not fail after its last statement; Write replaces a file atomically
// (a temporary file in the same directory, synced, renamed), so that a
// full disk never truncates the file that was there. Lock serializes the
// writes to a stream that several goroutines write lines to.
//
// It names no command-line flag: the caller says which flag named the
// path.
package outfile
