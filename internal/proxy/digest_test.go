package proxy

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/capture"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/rowdigest"
)

// keepSink keeps the records it is given.
type keepSink struct {
	mu   sync.Mutex
	recs []capture.Record
}

func (s *keepSink) Add(r capture.Record) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recs = append(s.recs, r)
	return true
}

// dataRow is a DataRow message of the values given.
func dataRow(values ...[]byte) []byte {
	m := []byte{'D', 0, 0, 0, 0}
	m = binary.BigEndian.AppendUint16(m, uint16(len(values)))
	for _, v := range values {
		if v == nil {
			m = binary.BigEndian.AppendUint32(m, 0xffffffff)
			continue
		}
		m = binary.BigEndian.AppendUint32(m, uint32(len(v)))
		m = append(m, v...)
	}
	binary.BigEndian.PutUint32(m[1:], uint32(len(m)-1))
	return m
}

func backendMessage(typ byte, body string) []byte {
	m := append([]byte{typ, 0, 0, 0, 0}, body...)
	binary.BigEndian.PutUint32(m[1:], uint32(len(m)-1))
	return m
}

// serverPump is a session's server side pump over src, recording into
// sink, as session() makes it.
func serverPump(src io.Reader, dst io.Writer, sink capture.Sink) *pump {
	s := &session{p: &Proxy{cfg: Config{Sink: sink}}, id: 1, inStartup: false, digest: true}
	// Bound to the sink as a session that started while it was attached.
	s.rec.Store(&binding{sink: sink})
	s.started.Store(true)
	return &pump{src: src, dst: dst, buf: make([]byte, bufSize), counts: &dirCounts{},
		onMsg: s.backendMsg, keep: keepBackend, stampFirst: true, onPart: s.backendPart}
}

// TestNoRowDigest: through a proxy with Config.NoRowDigest, the
// completes carry no digest (their answers are compared by row count
// only); with the default, a SELECT's carries its rows'.
func TestNoRowDigest(t *testing.T) {
	functionalCase(t)
	c := pgclustertest.StartT(t, pgcluster.Options{})
	ctx := context.Background()
	for _, off := range []bool{true, false} {
		r := startProxy(t, Config{Upstream: "host=127.0.0.1 port=" + strconv.Itoa(c.Port()) + " sslmode=disable", NoRowDigest: off})
		conn, err := pgconn.Connect(ctx, r.dsn("postgres", "postgres", "sslmode=disable"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, "SELECT generate_series(1, 3)").ReadAll(); err != nil {
			t.Fatal(err)
		}
		conn.Close(ctx)
		completes := 0
		for _, recs := range r.sink.waitEnds(t, 1) {
			for _, rec := range recs {
				if rec.Kind != capture.KindComplete {
					continue
				}
				completes++
				if rec.HasDigest == off || (!off && rec.Digest.Rows != 3) {
					t.Errorf("NoRowDigest %v: %s has digest %v %+v", off, rec.Tag, rec.HasDigest, rec.Digest)
				}
			}
		}
		if completes != 1 {
			t.Errorf("NoRowDigest %v: %d completes recorded, want 1", off, completes)
		}
	}
}

// TestRowDigest: the proxy's record of each CommandComplete carries the
// digest of the rows before it, those larger than its buffer (streamed
// through in pieces, never kept) included, split across reads every
// which way; an error or a ReadyForQuery starts the next statement's
// afresh; and the bytes forwarded are those received.
func TestRowDigest(t *testing.T) {
	functionalCase(t)
	big := bytes.Repeat([]byte("0123456789"), 5000) // 50 kB: streamed
	first := [][]byte{dataRow([]byte("1"), []byte("a")), dataRow(big, nil), dataRow([]byte("3"), []byte{})}
	var in []byte
	var want rowdigest.Digest
	for _, r := range first {
		in = append(in, r...)
		want.Add(r[5:])
	}
	in = append(in, backendMessage('C', "SELECT 3\x00")...)
	// Rows of a statement that fails are not the next one's.
	in = append(in, dataRow([]byte("x"))...)
	in = append(in, backendMessage('E', "SERROR\x00C22012\x00Mdivision by zero\x00\x00")...)
	in = append(in, backendMessage('Z', "I")...)
	in = append(in, backendMessage('C', "UPDATE 0\x00")...)
	// A portal read in batches (Execute with a row limit, then Sync,
	// as pgjdbc's fetch size): its rows go on across the
	// ReadyForQuery into the digest of the Execute that completes it.
	var batched rowdigest.Digest
	for i, part := range []string{"s", "Z", "s", "Z", "C"} {
		r := dataRow([]byte{byte('a' + i)})
		in = append(in, r...)
		batched.Add(r[5:])
		switch part {
		case "s":
			in = append(in, backendMessage('s', "")...)
		case "Z":
			in = append(in, backendMessage('Z', "T")...)
		case "C":
			in = append(in, backendMessage('C', "SELECT 5\x00")...)
		}
	}
	for _, sizes := range [][]int{nil, {1 << 20}, {7}, {16 << 10, 3, 5000}} {
		sink := &keepSink{}
		var out bytes.Buffer
		p := serverPump(&chunkReader{data: in, sizes: sizes}, &out, sink)
		if err := p.run(); err != io.EOF {
			t.Fatalf("reads of %v: %v", sizes, err)
		}
		if !bytes.Equal(out.Bytes(), in) {
			t.Errorf("reads of %v: forwarded %d bytes otherwise than received", sizes, out.Len())
		}
		var digests []rowdigest.Digest
		for _, r := range sink.recs {
			if r.Kind == capture.KindComplete && r.Tag == capture.SuspendedTag {
				// PortalSuspended: recorded with no digest, the portal's
				// rows going on into its final CommandComplete's.
				if r.HasDigest {
					t.Errorf("reads of %v: a PortalSuspended with a digest", sizes)
				}
				continue
			}
			if r.Kind == capture.KindComplete {
				if !r.HasDigest {
					t.Errorf("reads of %v: %s without a digest", sizes, r.Tag)
				}
				digests = append(digests, r.Digest)
			}
		}
		if len(digests) != 3 || digests[0] != want || digests[1] != (rowdigest.Digest{}) || digests[2] != batched {
			t.Errorf("reads of %v: digests %+v, want %+v, none, then %+v", sizes, digests, want, batched)
		}
	}
}

// repeatReader reads data over and over, n times, then io.EOF.
type repeatReader struct {
	data []byte
	off  int
	n    int
}

func (r *repeatReader) Read(b []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	k := copy(b, r.data[r.off:])
	r.off += k
	if r.off == len(r.data) {
		r.off, r.n = 0, r.n-1
	}
	return k, nil
}

// resultSet is rows DataRows of three columns (an int, a short text, a
// timestamp: about 50 bytes) and their CommandComplete.
func resultSet(rows int) []byte {
	var b []byte
	for i := range rows {
		b = append(b, dataRow([]byte{byte('0' + i%10), '4', '2'}, []byte("some text value"), []byte("2026-11-25 06:30:00.123456+00"))...)
	}
	return append(b, backendMessage('C', "SELECT 1000\x00")...)
}

// BenchmarkRelayRows is the server pump's CPU per relayed message, with
// the rows' digest and without (the same pump, its DataRows kept from the
// digest): in memory, the framing loop alone, where the digest weighs
// most; over loopback TCP, with the reads and writes a relay makes.
// Report the ratio of the ns/op of digest=on to digest=off.
func BenchmarkRelayRows(b *testing.B) {
	set := resultSet(1000)
	const perSet = 1001
	for _, leg := range []string{"memory", "tcp"} {
		for _, on := range []bool{false, true} {
			name := leg + "/digest=off"
			if on {
				name = leg + "/digest=on"
			}
			b.Run(name, func(b *testing.B) {
				sets := max(1, b.N/perSet)
				var src io.Reader = &repeatReader{data: set, n: sets}
				var dst io.Writer = io.Discard
				if leg == "tcp" {
					src, dst = tcpLegs(b, set, sets)
				}
				p := serverPump(src, dst, &countSink{})
				if !on {
					digest := p.onMsg
					p.onMsg = func(msg []byte, at time.Time) ([]byte, error) {
						if msg[0] == 'D' {
							return nil, nil
						}
						return digest(msg, at)
					}
				}
				b.SetBytes(int64(len(set)) / perSet)
				b.ResetTimer()
				cpu0 := processCPU(b)
				if err := p.run(); err != io.EOF {
					b.Fatal(err)
				}
				cpu := processCPU(b) - cpu0
				b.StopTimer()
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(sets*perSet), "ns/msg")
				// CPU time, which other processes on the machine disturb
				// less than the elapsed time; over TCP it includes the
				// goroutines at both ends.
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(sets*perSet), "cpu-ns/msg")
			})
		}
	}
}

// tcpLegs returns the two connections a pump relays between over
// loopback: one a goroutine writes sets copies of set into, one a
// goroutine reads and drops.
func tcpLegs(b *testing.B, set []byte, sets int) (io.Reader, io.Writer) {
	pair := func() (net.Conn, net.Conn) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		defer ln.Close()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		s, err := ln.Accept()
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close(); s.Close() })
		return c, s
	}
	serverSide, pumpIn := pair()
	pumpOut, clientSide := pair()
	go func() {
		for range sets {
			if _, err := serverSide.Write(set); err != nil {
				return
			}
		}
		serverSide.Close()
	}()
	go io.Copy(io.Discard, clientSide)
	return pumpIn, pumpOut
}

// FuzzRowDigest: server messages read in any pieces through a small
// buffer (rows streamed through in pieces, never kept) give each
// CommandComplete's record the digest of its rows taken whole.
func FuzzRowDigest(f *testing.F) {
	seed := append(dataRow([]byte("a"), nil), dataRow(bytes.Repeat([]byte("b"), 200))...)
	seed = append(seed, backendMessage('s', "")...)
	seed = append(seed, backendMessage('Z', "T")...)
	seed = append(seed, dataRow([]byte("c"))...)
	seed = append(seed, backendMessage('C', "SELECT 3\x00")...)
	seed = append(seed, dataRow([]byte("d"))...)
	seed = append(seed, backendMessage('E', "SERROR\x00\x00")...)
	f.Add([]byte{3, 100, 1}, seed)
	f.Add([]byte{}, dataRow([]byte("x")))
	f.Fuzz(func(t *testing.T, sizes, data []byte) {
		// What the digests are, from the messages taken whole.
		var want []rowdigest.Digest
		var cur rowdigest.Digest
		suspended := false
		for rest := data; len(rest) >= 5; {
			l := int(binary.BigEndian.Uint32(rest[1:]))
			if l < 4 || l > len(rest)-1 {
				break
			}
			switch rest[0] {
			case 'D':
				cur.Add(rest[5 : l+1])
			case 's':
				suspended = true
			case 'C':
				// An empty tag (which no server sends) reads as a
				// PortalSuspended's record, left out below.
				if tag := rest[5 : l+1]; len(tag) > 0 && tag[0] != 0 {
					want = append(want, cur)
				}
				cur, suspended = rowdigest.Digest{}, false
			case 'E':
				cur, suspended = rowdigest.Digest{}, false
			case 'Z':
				if !suspended {
					cur = rowdigest.Digest{}
				}
			}
			rest = rest[l+1:]
		}
		ints := make([]int, len(sizes))
		for i, s := range sizes {
			ints[i] = int(s)
		}
		sink := &keepSink{}
		p := serverPump(&chunkReader{data: data, sizes: ints}, io.Discard, sink)
		p.buf = make([]byte, 64)
		p.run()
		var got []rowdigest.Digest
		for _, r := range sink.recs {
			if r.Kind == capture.KindComplete && r.Tag != capture.SuspendedTag {
				got = append(got, r.Digest)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("%d completes recorded, want %d", len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("complete %d: digest %+v, want %+v", i, got[i], want[i])
			}
		}
	})
}
