//go:build !linux

package replay

import (
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
)

// pollRate needs epoll: elsewhere the poll loop is left out of the rounds.
func pollRate(b *testing.B, _ *pgcluster.Cluster, _ map[string][]*event.Event) float64 {
	b.Log("one-thread poll loop: Linux only")
	return 0
}

// rawGoroutineRate needs epoll's fds: Linux only too.
func rawGoroutineRate(b *testing.B, _ *pgcluster.Cluster, _ map[string][]*event.Event) float64 {
	b.Log("raw goroutine loop: Linux only")
	return 0
}
