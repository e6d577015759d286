//go:build !(linux && (amd64 || arm64))

package replay

import "time"

type hrTimer struct{}

func newHRTimer() (hrTimer, bool) { return hrTimer{}, false }
func (hrTimer) set(time.Duration) {}
func (hrTimer) wait() bool        { return false }
func (hrTimer) close()            {}
