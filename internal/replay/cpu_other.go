//go:build !unix

package replay

import "time"

func processCPU() (time.Duration, bool) { return 0, false }
