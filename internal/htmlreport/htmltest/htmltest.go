// Package htmltest opens pgrehearse's HTML pages in headless Chromium for
// tests: the DOM after the page's scripts ran, and a screenshot for a
// person to look at. It is for tests only.
package htmltest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Chromium is the browser the tests use, from Debian's chromium package.
const Chromium = "/usr/bin/chromium"

// flags keep a headless Chromium off this machine's closed network and
// away from any profile but a fresh one.
var flags = []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
	"--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars", "--virtual-time-budget=5000"}

func run(t testing.TB, args ...string) []byte {
	t.Helper()
	if _, err := os.Stat(Chromium); err != nil {
		t.Fatalf("headless Chromium is needed at %s to test the HTML pages; install it with:\n  apt-get update && apt-get install -y chromium\n(make test does so as root)", Chromium)
	}
	profile, err := os.MkdirTemp("", "pgrehearse-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(profile)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, Chromium, append(append(append([]string{}, flags...), "--user-data-dir="+profile), args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.Bytes())
	}
	return out
}

// DumpDOM returns the DOM of the page at path once its scripts ran;
// fragment, when not empty, is added to the URL ("selfcheck" runs the
// pages' self-checks).
func DumpDOM(t testing.TB, path, fragment string) []byte {
	t.Helper()
	url := "file://" + path
	if fragment != "" {
		url += "#" + fragment
	}
	return run(t, "--dump-dom", url)
}

// Screenshot saves a picture of the page at path, width × height pixels,
// in a directory left behind for a person to look at, and returns its path.
func Screenshot(t testing.TB, path, size string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pgrehearse-screenshot-")
	if err != nil {
		t.Fatal(err)
	}
	png := filepath.Join(dir, filepath.Base(path)+".png")
	run(t, "--window-size="+size, "--screenshot="+png, "file://"+path)
	return png
}
