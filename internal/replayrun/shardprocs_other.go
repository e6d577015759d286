//go:build !linux

package replayrun

import "syscall"

// shardProcAttr: elsewhere than Linux a shard process shares its starter's
// process group, and a Ctrl-C at the terminal reaches it directly too.
func shardProcAttr() *syscall.SysProcAttr { return nil }
