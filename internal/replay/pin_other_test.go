//go:build !linux

package replay

import (
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
)

func pinApart(b *testing.B, _ *pgcluster.Cluster) func() {
	b.Skip("CPU affinity is set on Linux only")
	return func() {}
}
