// Package rawio makes the system calls that cannot block as raw system
// calls, for the event loops of the capture proxy and the replay engine:
// reads and writes of non-blocking descriptors, epoll_wait with no
// timeout, timerfd_settime.
//
// Why: a system call made through syscall.Syscall tells the scheduler it
// might block (entersyscall), and when every P of the process was idle the
// runtime's monitor thread (sysmon) sleeps until that happens: the first
// such call after the process turns from idle to busy wakes it with a
// futex, and it then polls every 20 µs until the process is idle again.
// An event loop turns from idle to busy once per burst of traffic; on the
// proxy that was as much CPU as the relaying (docs/capture-performance.md), and
// on a paced replay (a burst per statement) 55-57% of the replayer's
// wake-ups (perf record -e sched:sched_wakeup on bench/ctlinflate.sh's
// replay). A raw call skips the telling; it must therefore never block.
package rawio
