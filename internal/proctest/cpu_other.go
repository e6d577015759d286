//go:build !unix

package proctest

import (
	"testing"
	"time"
)

// ProcessCPU is not measured here: 0.
func ProcessCPU(testing.TB) time.Duration { return 0 }
