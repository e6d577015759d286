//go:build !linux

package proxy

import "net"

// No event loop off Linux: every session is relayed by its goroutines.
type evLoop struct{}

type loopSess struct{ back chan struct{} }

func newLoops(int) []*evLoop { return nil }

func (*evLoop) enter(*session, *pump, *pump) *loopSess { return nil }

func (*evLoop) stop() {}

func (*loopSess) leave() {}

func (*loopSess) conns(client, server net.Conn) (net.Conn, net.Conn) { return client, server }
