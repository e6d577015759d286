package proxy

import (
	"encoding/binary"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// MaxMessageLen is the largest length a message may declare, in either
// direction: PostgreSQL's MaxAllocSize, beyond which the server itself
// refuses a message. A larger length is a broken or hostile peer, and the
// proxy closes that connection rather than wait for a gigabyte.
const MaxMessageLen = 1<<30 - 1

// bufSize is the size of each direction's buffer. A message that does not
// fit is streamed through in pieces, so the size bounds memory per
// connection, not the size of a message.
const bufSize = 16 << 10

var bufPool = sync.Pool{New: func() any { b := make([]byte, bufSize); return &b }}

// frameError is a message length out of range: the stream cannot be
// framed any more, so the connection has to close.
type frameError struct {
	typ    byte
	length int64
}

func (e *frameError) Error() string {
	return fmt.Sprintf("message of type %q declares length %d, outside 4 to %d", e.typ, e.length, MaxMessageLen)
}

// pump relays one direction of a connection: it reads what src sends into
// buf, forwards every complete message as it came (all the complete
// messages of one read in one write), and shows each message to onMsg
// before forwarding it, so that a record always reaches the sink before
// the other side can answer it.
type pump struct {
	src io.Reader
	dst io.Writer
	buf []byte

	// onMsg sees each message whole (type byte, length, body), stamped
	// with the time its first byte arrived (stampFirst) or the time its
	// last byte arrived. It returns a replacement to forward instead of
	// msg (nil: msg itself) or an error that stops the pump before msg
	// is forwarded. msg is only valid during the call.
	onMsg func(msg []byte, at time.Time) ([]byte, error)
	// keep says whether onMsg needs a message of type typ that is too
	// large for buf: such a message is copied whole for onMsg while it
	// streams through, the others are forwarded without onMsg.
	keep       func(typ byte) bool
	stampFirst bool
	// onPart, when not nil, sees the body (of body bytes) of each
	// message too large for buf that keep did not ask for, piece by
	// piece as it streams through (first: the piece after the type and
	// length; last: the message's end), so that it can be hashed
	// without being kept.
	onPart func(typ byte, body int, part []byte, first, last bool)

	// counts is where the messages and bytes forwarded are counted,
	// once per write.
	counts *dirCounts
}

// dirCounts count one direction's traffic over all connections.
type dirCounts struct {
	msgs, bytes atomic.Int64
	// relay is the time the proxy added to each chunk it forwarded.
	relay relayHist
}

// run relays until src ends or fails, dst fails, a length is out of range
// or onMsg stops it. What src sent before it ended is forwarded, a
// trailing partial message included: the other side then sees the same
// bytes it would have seen without the proxy. It returns io.EOF when src
// ended cleanly after a whole message, io.ErrUnexpectedEOF when it ended
// inside one.
func (p *pump) run() error {
	buf := p.buf
	start, end := 0, 0
	var carried time.Time // when the first byte of the partial message at start arrived
	unframed := false     // the buffer holds bytes a stream left: frame them before reading
	for {
		var n int
		var rerr error
		if !unframed {
			n, rerr = p.src.Read(buf[end:])
		}
		unframed = false
		now := time.Now()
		if start == end {
			carried = now
		}
		end += n
		msgs := int64(0)
		off, flushFrom := start, start
		for end-off >= 5 {
			l := int64(binary.BigEndian.Uint32(buf[off+1:]))
			if l < 4 || l > MaxMessageLen {
				if err := p.write(buf[flushFrom:off]); err != nil {
					return err
				}
				return &frameError{typ: buf[off], length: int64(int32(l))}
			}
			size := int(l) + 1
			if size > end-off {
				break
			}
			at := now
			if p.stampFirst && off == start {
				at = carried
			}
			rep, err := p.onMsg(buf[off:off+size], at)
			if err != nil {
				if werr := p.write(buf[flushFrom:off]); werr != nil {
					return werr
				}
				return err
			}
			if rep != nil {
				if err := p.write(buf[flushFrom:off]); err != nil {
					return err
				}
				if err := p.write(rep); err != nil {
					return err
				}
				flushFrom = off + size
			}
			off += size
			msgs++
		}
		p.counts.msgs.Add(msgs)
		if err := p.write(buf[flushFrom:off]); err != nil {
			return err
		}
		if msgs > 0 {
			p.counts.relay.observe(time.Since(now))
		}
		start = off
		if rerr != nil {
			if start < end {
				// The peer sees the partial message as it would have
				// without the proxy, then the close.
				if err := p.write(buf[start:end]); err != nil {
					return err
				}
				if rerr == io.EOF {
					rerr = io.ErrUnexpectedEOF
				}
			}
			return rerr
		}
		if start == end {
			start, end = 0, 0
			continue
		}
		carried = now
		if start > 0 {
			end = copy(buf, buf[start:end])
			start = 0
		}
		if end >= 5 {
			if size := int(binary.BigEndian.Uint32(buf[1:])) + 1; size > len(buf) {
				var err error
				if end, err = p.stream(size, end, carried); err != nil {
					return err
				}
				// carried is the next partial message's, if any.
				carried = time.Now()
				unframed = end > 0
			}
		}
	}
}

// stream relays a message of size bytes, larger than the buffer, whose
// first have bytes are at the start of the buffer. It returns how many
// bytes of the messages after it are at the start of the buffer.
func (p *pump) stream(size, have int, first time.Time) (int, error) {
	buf := p.buf
	typ := buf[0]
	var whole []byte
	if p.keep(typ) {
		// Grown as bytes arrive, never from the declared length: a peer
		// that declares a gigabyte and sends nothing costs nothing.
		whole = append(make([]byte, 0, 2*len(buf)), buf[:have]...)
	}
	part := p.onPart
	if whole != nil {
		part = nil
	}
	if part != nil {
		part(typ, size-5, buf[5:have], true, false)
	}
	if err := p.write(buf[:have]); err != nil {
		return 0, err
	}
	remaining := size - have
	for remaining > 0 {
		n, rerr := p.src.Read(buf)
		take := min(n, remaining)
		if whole != nil {
			whole = append(whole, buf[:take]...)
		}
		if part != nil && (take > 0 || take == remaining) {
			part(typ, size-5, buf[:take], false, take == remaining)
		}
		if take == remaining {
			at := time.Now()
			if p.stampFirst {
				at = first
			}
			if whole != nil {
				rep, err := p.onMsg(whole, at)
				if err != nil {
					return 0, err
				}
				if rep != nil {
					// A replacement cannot undo the part already
					// forwarded; onMsg only replaces small messages.
					return 0, fmt.Errorf("proxy: cannot replace a message of %d bytes", size)
				}
			}
			p.counts.msgs.Add(1)
		}
		if err := p.write(buf[:take]); err != nil {
			return 0, err
		}
		remaining -= take
		if rerr != nil {
			if remaining > 0 && rerr == io.EOF {
				rerr = io.ErrUnexpectedEOF
			}
			if rerr == io.EOF && take < n {
				// The rest of this read is more messages: the caller
				// frames them on its next read, which returns EOF
				// again.
				return copy(buf, buf[take:n]), nil
			}
			return 0, rerr
		}
		if take < n {
			return copy(buf, buf[take:n]), nil
		}
	}
	return 0, nil
}

func (p *pump) write(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	p.counts.bytes.Add(int64(len(b)))
	_, err := p.dst.Write(b)
	return err
}
