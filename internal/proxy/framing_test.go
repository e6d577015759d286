package proxy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"testing"
	"time"
)

// chunkReader returns data in reads of the sizes given, cycling, to
// exercise messages split across reads.
type chunkReader struct {
	data  []byte
	sizes []int
	i     int
}

func (r *chunkReader) Read(b []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := 1
	if len(r.sizes) > 0 {
		n = max(1, r.sizes[r.i%len(r.sizes)])
		r.i++
	}
	n = copy(b[:min(len(b), n)], r.data)
	r.data = r.data[n:]
	return n, nil
}

// framed runs a pump with a buffer of bufLen bytes over data read in
// chunks, keeping every message whole for onMsg. It returns what was
// forwarded, the messages onMsg saw, and run's error.
func framed(data []byte, sizes []int, bufLen int) (out []byte, msgs [][]byte, err error) {
	var w bytes.Buffer
	p := &pump{
		src:    &chunkReader{data: data, sizes: sizes},
		dst:    &w,
		buf:    make([]byte, bufLen),
		counts: &dirCounts{},
		onMsg: func(msg []byte, _ time.Time) ([]byte, error) {
			msgs = append(msgs, bytes.Clone(msg))
			return nil, nil
		},
		keep: func(byte) bool { return true },
	}
	err = p.run()
	return w.Bytes(), msgs, err
}

func message(typ byte, bodyLen int) []byte {
	m := make([]byte, 5+bodyLen)
	m[0] = typ
	binary.BigEndian.PutUint32(m[1:], uint32(4+bodyLen))
	for i := range bodyLen {
		m[5+i] = byte(i)
	}
	return m
}

// TestFramingSplitsAndStreams: messages smaller and larger than the
// buffer, split across reads every which way, are forwarded unchanged and
// each is seen whole once.
func TestFramingSplitsAndStreams(t *testing.T) {
	functionalCase(t)
	var in []byte
	var want [][]byte
	for _, size := range []int{0, 3, 58, 59, 60, 200, 1, 1000, 0, 64, 7} {
		m := message('Q', size)
		in = append(in, m...)
		want = append(want, m)
	}
	for _, sizes := range [][]int{nil, {1000}, {5}, {63, 1, 2}, {64}, {70, 3}} {
		out, msgs, err := framed(in, sizes, 64)
		if err != io.EOF {
			t.Errorf("reads of %v: run returned %v, want io.EOF", sizes, err)
		}
		if !bytes.Equal(out, in) {
			t.Errorf("reads of %v: forwarded %d bytes, not the %d read", sizes, len(out), len(in))
		}
		if len(msgs) != len(want) {
			t.Fatalf("reads of %v: onMsg saw %d messages, want %d", sizes, len(msgs), len(want))
		}
		for i := range msgs {
			if !bytes.Equal(msgs[i], want[i]) {
				t.Errorf("reads of %v: message %d seen as %q, want %q", sizes, i, msgs[i], want[i])
			}
		}
	}
}

// TestFramingLengthOutOfRange: a length below 4 or above MaxMessageLen
// stops the pump with a frameError, after the messages before it.
func TestFramingLengthOutOfRange(t *testing.T) {
	functionalCase(t)
	good := message('S', 0)
	for _, length := range []uint32{0, 3, MaxMessageLen + 1, 1 << 31, 0xffffffff} {
		bad := []byte{'Q', 0, 0, 0, 0, 'x'}
		binary.BigEndian.PutUint32(bad[1:], length)
		out, _, err := framed(append(bytes.Clone(good), bad...), nil, 64)
		var fe *frameError
		if !errors.As(err, &fe) {
			t.Errorf("length %d: %v, want a frameError", length, err)
		}
		if !bytes.Equal(out, good) {
			t.Errorf("length %d: forwarded %q, want the message before it only", length, out)
		}
	}
}

// TestFramingDeclaredGigabyte: a message declaring the largest length
// allowed, followed by a few bytes and the end, costs memory for the
// bytes that came, not the ones declared; the partial message is
// forwarded as it came and run says io.ErrUnexpectedEOF.
func TestFramingDeclaredGigabyte(t *testing.T) {
	// Sequential: it bounds the memory the whole process allocates
	// meanwhile (TotalAlloc), which other tests would add to.
	in := []byte{'Q', 0, 0, 0, 0, 'S', 'E', 'L', 'E', 'C', 'T'}
	binary.BigEndian.PutUint32(in[1:], MaxMessageLen)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	out, _, err := framed(in, nil, bufSize)
	runtime.ReadMemStats(&after)
	if err != io.ErrUnexpectedEOF || !bytes.Equal(out, in) {
		t.Errorf("run: %v, forwarded %q; want io.ErrUnexpectedEOF and %q", err, out, in)
	}
	if d := after.TotalAlloc - before.TotalAlloc; d > 1<<20 {
		t.Errorf("a message declaring %d bytes cost %d bytes of memory", MaxMessageLen, d)
	}
}

// FuzzFraming: any bytes, read in any pieces, never panic; what is
// forwarded is what was read (up to a length out of range), every message
// onMsg sees is whole and in order, and memory stays within a small
// multiple of the input.
func FuzzFraming(f *testing.F) {
	f.Add([]byte{3, 7}, append(message('Q', 10), message('X', 0)...))
	f.Add([]byte{1}, message('d', 300))
	f.Add([]byte{64, 1}, []byte{'Q', 0x40, 0, 0, 0, 'S'})
	f.Add([]byte{}, []byte{'Q', 0, 0, 0, 2})
	f.Fuzz(func(t *testing.T, sizes []byte, data []byte) {
		ints := make([]int, len(sizes))
		for i, s := range sizes {
			ints[i] = int(s)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		out, msgs, err := framed(data, ints, 64)
		runtime.ReadMemStats(&after)
		if !bytes.HasPrefix(data, out) {
			t.Fatalf("forwarded bytes that were not read")
		}
		var fe *frameError
		if !errors.As(err, &fe) && !bytes.Equal(out, data) {
			t.Fatalf("run: %v, forwarded %d of %d bytes", err, len(out), len(data))
		}
		if err == nil {
			t.Fatal("run returned nil, want the end of input")
		}
		seen := bytes.Join(msgs, nil)
		if !bytes.HasPrefix(out, seen) {
			t.Fatal("the messages seen are not what was forwarded")
		}
		for _, m := range msgs {
			if len(m) < 5 || int(binary.BigEndian.Uint32(m[1:]))+1 != len(m) {
				t.Fatalf("a message seen is not whole: %q", m)
			}
		}
		if d := after.TotalAlloc - before.TotalAlloc; d > uint64(64<<10+8*len(data)) {
			t.Fatalf("%d bytes of input cost %d bytes of memory", len(data), d)
		}
	})
}
