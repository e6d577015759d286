package rawio

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Send is one send (sendto without an address) on a non-blocking socket,
// again after EINTR (0 bytes on an error): the same bytes as write,
// without the file layer's work a socket does not need. MSG_NOSIGNAL
// gives EPIPE for a peer gone instead of a SIGPIPE the runtime would have
// to ignore.
func Send(fd int, b []byte) (int, syscall.Errno) {
	return call(syscall.SYS_SENDTO, fd, b, syscall.MSG_NOSIGNAL)
}

// SendAll sends b until all of it went, the socket's buffer is full
// (EAGAIN) or the send failed. It returns how many bytes went and the
// error that stopped it, 0 when all went.
func SendAll(fd int, b []byte) (int, syscall.Errno) {
	done := 0
	for done < len(b) {
		n, e := Send(fd, b[done:])
		if e != 0 {
			return done, e
		}
		done += n
	}
	return done, 0
}

// Recv is one recv (recvfrom without an address) on a non-blocking
// socket, as Send.
func Recv(fd int, b []byte) (int, syscall.Errno) {
	return call(syscall.SYS_RECVFROM, fd, b, 0)
}

// Read is one read of a non-blocking descriptor (an eventfd, a timerfd),
// as Send.
func Read(fd int, b []byte) (int, syscall.Errno) {
	return call(syscall.SYS_READ, fd, b, 0)
}

// Write is one write of a non-blocking descriptor (an eventfd), as Send.
func Write(fd int, b []byte) (int, syscall.Errno) {
	return call(syscall.SYS_WRITE, fd, b, 0)
}

// call makes trap(fd, b, len(b), flags) raw, again after EINTR.
func call(trap uintptr, fd int, b []byte, flags uintptr) (int, syscall.Errno) {
	if len(b) == 0 {
		return 0, 0
	}
	for {
		n, _, e := syscall.RawSyscall6(trap, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), flags, 0, 0)
		switch e {
		case 0:
			return int(n), 0
		case syscall.EINTR:
			continue
		}
		return 0, e
	}
}

// EpollWaitNow is epoll_wait with timeout 0, again after EINTR: the
// number of events, 0 on an error.
func EpollWaitNow(ep int, events []unix.EpollEvent) int {
	if len(events) == 0 {
		return 0
	}
	for {
		n, _, e := syscall.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(ep), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), 0, 0, 0)
		switch e {
		case syscall.EINTR:
			continue
		case 0:
			return int(n)
		}
		return 0
	}
}

// TimerfdSettime arms (or, with a zero value, disarms) a timerfd,
// relative to now.
func TimerfdSettime(fd int, spec *unix.ItimerSpec) syscall.Errno {
	_, _, e := syscall.RawSyscall6(unix.SYS_TIMERFD_SETTIME, uintptr(fd), 0, uintptr(unsafe.Pointer(spec)), 0, 0, 0)
	return e
}
