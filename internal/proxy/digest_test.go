package proxy

import (
	"bytes"
	"context"
	"encoding/binary"
	"github.com/pgrehearse/pgrehearse/internal/proctest"
	"io"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

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
	return serverPumpDigest(src, dst, sink, true)
}

// serverPumpDigest is serverPump, its session digesting rows or not
// (Config.NoRowDigest), as session() makes it.
func serverPumpDigest(src io.Reader, dst io.Writer, sink capture.Sink, digest bool) *pump {
	s := &session{p: &Proxy{cfg: Config{Sink: sink, NoRowDigest: !digest}}, id: 1, inStartup: false, digest: digest}
	// Bound to the sink as a session that started while it was attached.
	s.rec.Store(&binding{sink: sink})
	s.started.Store(true)
	return s.serverPump(src, dst, make([]byte, bufSize), &dirCounts{})
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
		conn := pgclustertest.PgConn(ctx, t, r.dsn("postgres", "postgres", "sslmode=disable"))
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

// relayShape is the server's side of some traffic: set, repeated, is
// what a pump relays; msgs is how many messages set holds.
type relayShape struct {
	name string
	set  []byte
	msgs int
}

// relayShapes are the traffic BenchmarkRelayRows relays: select1, an
// answer of pgbench's select-only transaction under -M prepared
// (BindComplete, one row of one int, CommandComplete, ReadyForQuery);
// mixed100, an answer of 100 rows of mixed sizes (five columns, one of
// them NULL or 84 characters, one of 0 to 199: bodies of 37 to 294
// bytes); bulk60, 1000 rows of 61 bytes in one answer, an export of small
// rows, where the digest weighs most against relaying.
func relayShapes() []relayShape {
	var sel []byte
	sel = append(sel, backendMessage('2', "")...)
	sel = append(sel, dataRow([]byte("-2417"))...)
	sel = append(sel, backendMessage('C', "SELECT 1\x00")...)
	sel = append(sel, backendMessage('Z', "I")...)
	var mixed []byte
	mixed = append(mixed, backendMessage('2', "")...)
	for i := range 100 {
		aid := 283114 + i
		var filler []byte
		if aid%3 == 0 {
			filler = bytes.Repeat([]byte(" "), 84)
		}
		mixed = append(mixed, dataRow([]byte(strconv.Itoa(aid)), []byte("3"), []byte("0"), filler, bytes.Repeat([]byte("x"), (aid*37)%200))...)
	}
	mixed = append(mixed, backendMessage('C', "SELECT 100\x00")...)
	mixed = append(mixed, backendMessage('Z', "I")...)
	return []relayShape{{"select1", sel, 4}, {"mixed100", mixed, 103}, {"bulk60", resultSet(1000), 1001}}
}

// resultSet is rows DataRows of three columns (an int, a short text, a
// timestamp: about 60 bytes) and their CommandComplete.
func resultSet(rows int) []byte {
	var b []byte
	for i := range rows {
		b = append(b, dataRow([]byte{byte('0' + i%10), '4', '2'}, []byte("some text value"), []byte("2026-11-25 06:30:00.123456+00"))...)
	}
	return append(b, backendMessage('C', "SELECT 1000\x00")...)
}

// BenchmarkRelayRows is what the rows' digest costs the server pump: its
// CPU time per relayed message with the digest and without
// (Config.NoRowDigest: the same pump, its session not digesting), two
// pumps taking turns on batches of about 20,000 messages, the first of
// each iteration alternating, so that both see the same machine. Two
// legs: in memory, the framing loop alone, where the digest weighs most;
// over loopback TCP, with the reads and writes a relay makes (the CPU
// time then includes the goroutines at the sockets' other ends, which
// stand for the server and the client; the Recorder is left out: a sink
// that keeps nothing). It reports each side's CPU per message over the
// run, and the median and quartiles of the batches' digest/no-digest
// ratios.
func BenchmarkRelayRows(b *testing.B) {
	for _, shape := range relayShapes() {
		for _, leg := range []string{"memory", "tcp"} {
			b.Run(shape.name+"/"+leg, func(b *testing.B) {
				sets := max(1, 20000/shape.msgs)
				// relay runs one batch through a pump, in full.
				newRelay := func(digest bool) (relay func()) {
					if leg == "memory" {
						src := &repeatReader{data: shape.set}
						p := serverPumpDigest(src, io.Discard, &countSink{}, digest)
						return func() {
							src.off, src.n = 0, sets
							if err := p.run(); err != io.EOF {
								b.Fatal(err)
							}
						}
					}
					src, dst, start, done := tcpLegs(b, shape.set, sets)
					p := serverPumpDigest(src, dst, &countSink{}, digest)
					return func() {
						src.left = sets * len(shape.set)
						start <- struct{}{}
						if err := p.run(); err != io.EOF {
							b.Fatal(err)
						}
						<-done // the client's end has read the batch
					}
				}
				on, off := newRelay(true), newRelay(false)
				on() // warm both: buffers, sockets, caches
				off()
				timed := func(relay func()) time.Duration {
					c0 := proctest.ProcessCPU(b)
					relay()
					return proctest.ProcessCPU(b) - c0
				}
				var onCPU, offCPU time.Duration
				var ratios []float64
				for i := 0; b.Loop(); i++ {
					d, nd := byTurns(i, func() time.Duration { return timed(on) }, func() time.Duration { return timed(off) })
					onCPU, offCPU = onCPU+d, offCPU+nd
					if nd > 0 {
						ratios = append(ratios, float64(d)/float64(nd))
					}
				}
				msgs := float64(b.N * sets * shape.msgs)
				b.ReportMetric(float64(onCPU.Nanoseconds())/msgs, "digest-cpu-ns/msg")
				b.ReportMetric(float64(offCPU.Nanoseconds())/msgs, "nodigest-cpu-ns/msg")
				if len(ratios) > 0 {
					slices.Sort(ratios)
					b.ReportMetric(ratios[len(ratios)/2], "digest/nodigest")
					b.ReportMetric(ratios[len(ratios)/4], "ratio-p25")
					b.ReportMetric(ratios[len(ratios)*3/4], "ratio-p75")
				}
			})
		}
	}
}

// batchReader reads at most left bytes of r, then io.EOF (leaving r
// open), so that a pump over it relays one batch per run.
type batchReader struct {
	r    io.Reader
	left int
}

func (r *batchReader) Read(b []byte) (int, error) {
	if r.left == 0 {
		return 0, io.EOF
	}
	n, err := r.r.Read(b[:min(len(b), r.left)])
	r.left -= n
	return n, err
}

// tcpLegs returns the two connections a pump relays between over
// loopback: the one a goroutine writes sets copies of set into each time
// start is sent to, as a batchReader, and the one a goroutine reads and
// drops, which sends to done each time it has read a batch.
func tcpLegs(b *testing.B, set []byte, sets int) (src *batchReader, dst io.Writer, start, done chan struct{}) {
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
	start, done = make(chan struct{}), make(chan struct{})
	go func() {
		for range start {
			for range sets {
				if _, err := serverSide.Write(set); err != nil {
					return
				}
			}
		}
	}()
	go func() {
		buf := make([]byte, 64<<10)
		batch, got := sets*len(set), 0
		for {
			n, err := clientSide.Read(buf)
			if got += n; got >= batch {
				got -= batch
				done <- struct{}{}
			}
			if err != nil {
				return
			}
		}
	}()
	b.Cleanup(func() { close(start) })
	return &batchReader{r: pumpIn}, pumpOut, start, done
}

// FuzzRowDigest: server messages read in any pieces through a small
// buffer (rows streamed through in pieces, never kept) give each
// CommandComplete's record the digest of its rows taken whole (and none
// without the digest), and reach the client as sent, up to a length out of
// range.
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
		forwarded := data // what the client gets: up to a length out of range
		for rest := data; len(rest) >= 5; {
			l := int(binary.BigEndian.Uint32(rest[1:]))
			if l < 4 || l > MaxMessageLen {
				forwarded = data[:len(data)-len(rest)]
				break
			}
			if l > len(rest)-1 {
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
		var got [2][]rowdigest.Digest // without the digest, then with
		for i, digest := range []bool{false, true} {
			sink, out := &keepSink{}, &bytes.Buffer{}
			p := serverPumpDigest(&chunkReader{data: data, sizes: ints}, out, sink, digest)
			p.buf = make([]byte, 64)
			p.run()
			if !bytes.Equal(out.Bytes(), forwarded) {
				t.Fatalf("digest %v: forwarded %x, want %x", digest, out.Bytes(), forwarded)
			}
			got[i] = []rowdigest.Digest{}
			for _, r := range sink.recs {
				if r.Kind == capture.KindComplete && r.Tag != capture.SuspendedTag {
					got[i] = append(got[i], r.Digest)
				}
			}
		}
		if len(got[1]) != len(want) || len(got[0]) != len(want) {
			t.Fatalf("%d completes recorded, %d without the digest, want %d", len(got[1]), len(got[0]), len(want))
		}
		for i := range want {
			if got[1][i] != want[i] || got[0][i] != (rowdigest.Digest{}) {
				t.Fatalf("complete %d: digest %+v, without %+v, want %+v", i, got[1][i], got[0][i], want[i])
			}
		}
	})
}
