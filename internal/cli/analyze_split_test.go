package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/synthlog"
)

// TestAnalyzeJobsSplitIdentical: with -j, a large log is read in parts at
// once; the result must be byte for byte the one of a single reader, so
// no statement is lost or counted twice where the parts meet.
func TestAnalyzeJobsSplitIdentical(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "big.log")
	f, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	// Large enough for three parts of the 16 MiB minimum.
	if err := synthlog.Write(f, 50<<20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	run := func(jobs string) []byte {
		out := filepath.Join(dir, "j"+jobs+".json")
		var stderr bytes.Buffer
		code := Run(context.Background(), IO{Stdout: &bytes.Buffer{}, Stderr: &stderr},
			[]string{"analyze", "-j", jobs, "--prefix", synthlog.Prefix, "--json", out, log})
		if code != ExitOK {
			t.Fatalf("-j %s exited %d: %s", jobs, code, stderr.String())
		}
		b := readFile(t, out)
		return b
	}
	one := run("1")
	for _, j := range []string{"2", "3"} {
		if got := run(j); !bytes.Equal(got, one) {
			t.Errorf("analyze -j %s differs from -j 1", j)
		}
	}
	if !bytes.Contains(one, []byte(`"kind": "analysis"`)) && !bytes.Contains(one, []byte(`"kind":"analysis"`)) {
		t.Errorf("unexpected output: %.200s", one)
	}
}
