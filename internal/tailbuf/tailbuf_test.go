package tailbuf

import (
	"strings"
	"sync"
	"testing"
)

func TestBuffer(t *testing.T) {
	tests := []struct {
		name   string
		max    int
		writes []string
		want   string
	}{
		{"short", 16, []string{"one\n", "two\n"}, "one\ntwo\n"},
		{"cut on a line's end", 16, append(repeat("line\n", 100), "last words\n"), "line\nlast words\n"},
		{"cut after a line's end", 10, []string{"abcdefgh\n", "ijk\n", "lmnop\n"}, "ijk\nlmnop\n"},
		{"cut inside a line", 10, []string{"abcdefghi\n", "jk\n", "lmnop\n"}, "jk\nlmnop\n"},
		{"one long line", 4, []string{"abcdefghij"}, "ghij"},
		{"nothing", 8, nil, ""},
	}
	for _, tt := range tests {
		b := New(tt.max)
		for _, w := range tt.writes {
			if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
				t.Fatalf("%s: Write = %d, %v", tt.name, n, err)
			}
		}
		if got := b.String(); got != tt.want {
			t.Errorf("%s: String() = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// Written from several goroutines at once (a process's standard output
// and error), every byte lands and the tail holds only whole writes.
func TestBufferConcurrent(t *testing.T) {
	b := New(64)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				b.Write([]byte("0123456789\n"))
			}
		}()
	}
	wg.Wait()
	for _, l := range strings.SplitAfter(b.String(), "\n") {
		if l != "" && l != "0123456789\n" {
			t.Fatalf("a torn line %q in %q", l, b.String())
		}
	}
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}
