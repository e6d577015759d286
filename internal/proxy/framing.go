package proxy

import (
	"encoding/binary"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/rowdigest"
	"github.com/pgrehearse/pgrehearse/internal/wire"
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
	// passRows: onMsg has nothing to do with a DataRow, so that the
	// DataRows that fit in buf are relayed without it, and digested
	// into rows when it is not nil: those of one read in one loop
	// (rowdigest.Digest.AddRows), with no call per row.
	passRows bool
	rows     *rowdigest.Digest

	// counts is where the messages and bytes forwarded are counted,
	// once per write.
	counts *dirCounts

	st relayState

	// pending is what the event loop forwarded that dst could not take
	// yet, and stopped what ended the pump in the loop: run writes the
	// one and returns the other first (loop_linux.go).
	pending []byte
	stopped error
}

// dirCounts count one direction's traffic over all connections.
type dirCounts struct {
	msgs, bytes atomic.Int64
	// relay is the time the proxy added to each chunk it forwarded.
	relay relayHist
}

// relay state, kept between reads so that a read can be fed in from
// outside the pump's loop (rawio_linux.go).
type relayState struct {
	start, end int       // the unforwarded bytes: buf[start:end]
	carried    time.Time // when the first byte of the partial message at start arrived
	big        *bigMsg   // the message larger than buf streaming through, if any
}

// bigMsg is a message larger than the pump's buffer, streaming through.
type bigMsg struct {
	typ       byte
	size      int
	remaining int
	whole     []byte // the message so far, when keep asked for it
	part      func(typ byte, body int, part []byte, first, last bool)
	first     time.Time
}

// run relays until src ends or fails, dst fails, a length is out of range
// or onMsg stops it. What src sent before it ended is forwarded, a
// trailing partial message included: the other side then sees the same
// bytes it would have seen without the proxy. It returns io.EOF when src
// ended cleanly after a whole message, io.ErrUnexpectedEOF when it ended
// inside one.
func (p *pump) run() error {
	if len(p.pending) > 0 {
		// Counted when the loop forwarded it.
		b := p.pending
		p.pending = nil
		if _, err := asRawWriter(p.dst).Write(b); err != nil {
			return err
		}
	}
	if p.stopped != nil {
		return p.stopped
	}
	if rc := rawConn(p.src); rc != nil {
		return p.runRaw(rc)
	}
	for {
		n, rerr := p.src.Read(p.target())
		if err := p.feed(n, rerr); err != nil {
			return err
		}
	}
}

// target is where the next read goes.
func (p *pump) target() []byte {
	if p.st.big != nil {
		return p.buf
	}
	return p.buf[p.st.end:]
}

// feed relays what a read of n bytes into target() brought, rerr being
// the read's error; a non-nil result stops the pump.
func (p *pump) feed(n int, rerr error) error {
	if p.st.big == nil {
		return p.frame(n, rerr)
	}
	rest, err := p.streamed(n, rerr)
	if err != nil || p.st.big != nil {
		return err
	}
	// The big message ended: the rest of the read, now at the start of
	// the buffer, is more messages.
	p.st.start, p.st.end, p.st.carried = 0, rest, time.Now()
	if rest == 0 && rerr == nil {
		return nil
	}
	return p.frame(0, rerr)
}

// frame forwards the complete messages in the buffer once n more bytes
// arrived at its end, and keeps the partial one after them.
func (p *pump) frame(n int, rerr error) error {
	buf, st := p.buf, &p.st
	start, end := st.start, st.end
	now := time.Now()
	if start == end {
		st.carried = now
	}
	end += n
	msgs := int64(0)
	off, flushFrom := start, start
	for end-off >= 5 {
		if p.rows != nil && buf[off] == wire.DataRow {
			n, k := p.rows.AddRows(buf[off:end])
			off += n
			msgs += int64(k)
			if end-off < 5 {
				break
			}
		}
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
		if p.passRows && buf[off] == wire.DataRow {
			// Not taken by AddRows above, or no digest.
			if p.rows != nil {
				p.rows.Add(buf[off+5 : off+size])
			}
			off += size
			msgs++
			continue
		}
		at := now
		if p.stampFirst && off == start {
			at = st.carried
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
		st.start, st.end = 0, 0
		return nil
	}
	st.carried = now
	if start > 0 {
		end = copy(buf, buf[start:end])
		start = 0
	}
	st.start, st.end = start, end
	if end >= 5 {
		if size := int(binary.BigEndian.Uint32(buf[1:])) + 1; size > len(buf) {
			return p.beginStream(size, end)
		}
	}
	return nil
}

// beginStream starts relaying a message of size bytes, larger than the
// buffer, whose first have bytes are at the start of the buffer; the
// reads after it go to the whole buffer until it ends (streamed).
func (p *pump) beginStream(size, have int) error {
	buf := p.buf
	b := &bigMsg{typ: buf[0], size: size, remaining: size - have, part: p.onPart, first: p.st.carried}
	if p.keep(b.typ) {
		// Grown as bytes arrive, never from the declared length: a peer
		// that declares a gigabyte and sends nothing costs nothing.
		b.whole = append(make([]byte, 0, 2*len(buf)), buf[:have]...)
		b.part = nil
	}
	if b.part != nil {
		b.part(b.typ, size-5, buf[5:have], true, false)
	}
	p.st.big = b
	p.st.start, p.st.end = 0, 0
	return p.write(buf[:have])
}

// streamed relays what a read of n bytes brought to the big message
// streaming through. When the message ends, p.st.big is nil and the
// rest of the read, more messages, is at the start of the buffer: rest
// bytes of it.
func (p *pump) streamed(n int, rerr error) (rest int, err error) {
	buf, b := p.buf, p.st.big
	take := min(n, b.remaining)
	if b.whole != nil {
		b.whole = append(b.whole, buf[:take]...)
	}
	if b.part != nil && (take > 0 || take == b.remaining) {
		b.part(b.typ, b.size-5, buf[:take], false, take == b.remaining)
	}
	if take == b.remaining {
		at := time.Now()
		if p.stampFirst {
			at = b.first
		}
		if b.whole != nil {
			rep, err := p.onMsg(b.whole, at)
			if err != nil {
				return 0, err
			}
			if rep != nil {
				// A replacement cannot undo the part already
				// forwarded; onMsg only replaces small messages.
				return 0, fmt.Errorf("proxy: cannot replace a message of %d bytes", b.size)
			}
		}
		p.counts.msgs.Add(1)
	}
	if err := p.write(buf[:take]); err != nil {
		return 0, err
	}
	b.remaining -= take
	if rerr != nil {
		if b.remaining > 0 && rerr == io.EOF {
			rerr = io.ErrUnexpectedEOF
		}
		if rerr == io.EOF && take < n {
			// The rest of this read is more messages: the caller
			// frames them, then returns the EOF.
			p.st.big = nil
			return copy(buf, buf[take:n]), nil
		}
		return 0, rerr
	}
	if b.remaining > 0 {
		return 0, nil
	}
	p.st.big = nil
	return copy(buf, buf[take:n]), nil
}

func (p *pump) write(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	p.counts.bytes.Add(int64(len(b)))
	_, err := p.dst.Write(b)
	return err
}
