package rawio

import (
	"bytes"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// pair is a connected, non-blocking Unix socket pair, closed at the end.
func pair(t *testing.T) (int, int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
	return fds[0], fds[1]
}

func TestSendRecv(t *testing.T) {
	a, b := pair(t)
	buf := make([]byte, 16)
	if n, e := Recv(b, buf); n != 0 || e != syscall.EAGAIN {
		t.Fatalf("Recv on an empty socket: %d, %v; want 0, EAGAIN", n, e)
	}
	if n, e := SendAll(a, []byte("hello")); n != 5 || e != 0 {
		t.Fatalf("SendAll: %d, %v", n, e)
	}
	n, e := Recv(b, buf)
	if e != 0 || string(buf[:n]) != "hello" {
		t.Fatalf("Recv: %q, %v", buf[:max(n, 0)], e)
	}
	if n, e := Send(a, nil); n != 0 || e != 0 {
		t.Fatalf("Send of nothing: %d, %v", n, e)
	}
	unix.Close(b)
	if _, e := Send(a, []byte("x")); e != syscall.EPIPE {
		t.Fatalf("Send to a closed peer: %v, want EPIPE (and no SIGPIPE)", e)
	}
}

// SendAll stops at a full buffer with what went and EAGAIN.
func TestSendAllFull(t *testing.T) {
	a, b := pair(t)
	big := bytes.Repeat([]byte("x"), 16<<20)
	n, e := SendAll(a, big)
	if e != syscall.EAGAIN || n <= 0 || n >= len(big) {
		t.Fatalf("SendAll of 16 MiB: %d, %v; want part of it and EAGAIN", n, e)
	}
	got := 0
	buf := make([]byte, 1<<16)
	for {
		m, e := Recv(b, buf)
		if e == syscall.EAGAIN {
			break
		}
		if e != 0 {
			t.Fatal(e)
		}
		got += m
	}
	if got != n {
		t.Fatalf("read %d bytes, SendAll said %d went", got, n)
	}
}

// An eventfd written and read; a timerfd armed, seen by EpollWaitNow.
func TestEventfdTimerfdEpoll(t *testing.T) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(ep)
	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(efd)
	tfd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(tfd)
	for key, fd := range []int{efd, tfd} {
		if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(key)}); err != nil {
			t.Fatal(err)
		}
	}
	events := make([]unix.EpollEvent, 4)
	if n := EpollWaitNow(ep, events); n != 0 {
		t.Fatalf("EpollWaitNow with nothing ready: %d events", n)
	}
	one := [8]byte{1}
	if n, e := Write(efd, one[:]); n != 8 || e != 0 {
		t.Fatalf("Write to the eventfd: %d, %v", n, e)
	}
	if n := EpollWaitNow(ep, events); n != 1 || events[0].Fd != 0 {
		t.Fatalf("after the eventfd's write: %d events, %+v", n, events[:n])
	}
	var buf [8]byte
	if n, e := Read(efd, buf[:]); n != 8 || e != 0 || buf[0] != 1 {
		t.Fatalf("Read of the eventfd: %d, %v, %v", n, e, buf)
	}
	if _, e := Read(efd, buf[:]); e != syscall.EAGAIN {
		t.Fatalf("a second Read of the eventfd: %v, want EAGAIN", e)
	}
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(time.Millisecond))}
	if e := TimerfdSettime(tfd, &spec); e != 0 {
		t.Fatal(e)
	}
	// The timer fires in a millisecond, later on a busy machine.
	if n, err := unix.EpollWait(ep, events, int(time.Minute/time.Millisecond)); n != 1 || err != nil {
		t.Fatalf("the timerfd armed for 1 ms: %d events in a minute, %v", n, err)
	}
	if n := EpollWaitNow(ep, events); n != 1 || events[0].Fd != 1 {
		t.Fatalf("the event is %+v, want the timerfd's", events[0])
	}
	if n := EpollWaitNow(ep, nil); n != 0 {
		t.Fatalf("EpollWaitNow without room: %d", n)
	}
}
