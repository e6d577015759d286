package replayrun

import "syscall"

// shardProcAttr puts a shard process in a process group of its own, so
// that a Ctrl-C at the terminal reaches it once, passed on by the command that started it
// (the second as SIGTERM), and has it stopped (SIGTERM: it cancels what
// is in flight) should that command itself die.
func shardProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
