// Package goldentest compares what a test wrote with its golden file,
// and rewrites the file when the test runs with -update. It owns the
// -update flag of the packages whose tests import it. It is for tests
// only (it imports testing); nothing in the binary imports it.
package goldentest

import (
	"flag"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// Check fails t when got differs from the golden file at path, and shows
// got; with -update it writes got to path first.
func Check(t testing.TB, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (go test -update rewrites it if intended):\n%s", path, got)
	}
}
