package capture

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/klauspost/compress/zstd"

	"github.com/pgrehearse/pgrehearse/internal/rowdigest"
)

// fuzzMaxChunk bounds the chunks the fuzzed readers accept, so that a
// chunk header declaring a large length (which a real capture may have,
// up to maxChunkSize) costs the fuzzer a megabyte, not a gigabyte.
const fuzzMaxChunk = 1 << 20

// fuzzMaxRecords bounds the records read from one input: a record takes
// at least two bytes of a chunk, so more than this from one input of at
// most fuzzMaxChunk raw bytes means the reader is going round in circles.
const fuzzMaxRecords = fuzzMaxChunk

// How FuzzReader takes its bytes.
const (
	fuzzFile      = iota // a segment file opened alone
	fuzzDirectory        // the only segment of a directory whose manifest says complete
	fuzzRecords          // the records of one chunk, in a well-formed segment
	fuzzFrame            // a chunk's zstd frame, after a well-formed chunk header
	fuzzModes
)

// FuzzReader reads arbitrary bytes as a capture: as a whole segment file,
// as the records of a chunk, or as a chunk's compressed frame. Whatever
// the bytes, the reader must not panic or go round in circles, must end
// with io.EOF or an error that stays (a *CorruptError for damage), and
// must count what it returned.
func FuzzReader(f *testing.F) {
	dir := f.TempDir()
	recs := sessions(3)
	writeCapture(f, dir, WriterOptions{FrameSize: 512}, recs, EndInfo{})
	seg, err := os.ReadFile(filepath.Join(dir, segmentName(1)))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seg, uint8(fuzzFile))
	f.Add(seg, uint8(fuzzDirectory))
	f.Add(seg[:len(seg)-3], uint8(fuzzFile))      // a torn last chunk
	f.Add(seg[:len(seg)-3], uint8(fuzzDirectory)) // the same, in a complete capture: damage
	f.Add(seg[:headerSize+5], uint8(fuzzFile))    // a chunk header's first bytes
	f.Add([]byte(Magic), uint8(fuzzFile))

	var raw []byte
	prev := t0.UnixMicro() // the segment's start
	for i := range recs {
		if raw, err = appendRecord(raw, &recs[i], prev); err != nil {
			f.Fatal(err)
		}
		prev = recs[i].Time
	}
	f.Add(raw, uint8(fuzzRecords))
	f.Add(append(raw[:len(raw):len(raw)], 0x05, byte(KindComplete), 1, 0, 0xff), uint8(fuzzRecords))
	// A complete with its rows' digest, whole and cut short.
	withDigest, err := appendRecord(nil, &Record{Kind: KindComplete, Session: 1, Time: prev, Tag: "SELECT 2", HasDigest: true,
		Digest: rowdigest.Digest{Rows: 2, Ordered: 7, Unordered: 9}}, prev)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(append(raw[:len(raw):len(raw)], withDigest...), uint8(fuzzRecords))
	// A session recorded from the middle, whole and cut short.
	resumed, err := appendRecord(nil, resumedStartup(9, prev), prev)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(append(raw[:len(raw):len(raw)], resumed...), uint8(fuzzRecords))
	f.Add(append(raw[:len(raw):len(raw)], resumed[:len(resumed)-6]...), uint8(fuzzRecords))
	f.Add(append(raw[:len(raw):len(raw)], withDigest[:len(withDigest)-4]...), uint8(fuzzRecords))

	frame := fuzzEncoder().EncodeAll(raw, nil)
	f.Add(append(binary.LittleEndian.AppendUint32(nil, uint32(len(raw))), frame...), uint8(fuzzFrame))

	// One directory for every input of a fuzzing process (inputs run
	// one after the other): a directory made, a manifest synced and a
	// tree removed per input would cost more than reading it.
	base := f.TempDir()
	complete, err := json.Marshal(&Manifest{Format: manifestFormat, Version: Version, Segments: 1, Complete: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte, mode uint8) {
		readFuzzed(t, base, complete, data, mode)
	})
}

// readFuzzed is one input of FuzzReader: its segment written in base
// (over the previous input's), then read to its end.
func readFuzzed(t *testing.T, base string, manifest, data []byte, mode uint8) {
	dir := filepath.Join(base, "dir")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, ManifestName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	seg, path := filepath.Join(dir, segmentName(1)), dir
	var file []byte
	switch mode % fuzzModes {
	case fuzzFile:
		seg = filepath.Join(base, "segment")
		path = seg
		file = data
	case fuzzDirectory:
		file = data
		if err := os.WriteFile(filepath.Join(dir, ManifestName), manifest, 0o600); err != nil {
			t.Fatal(err)
		}
	case fuzzRecords:
		if len(data) == 0 || len(data) > fuzzMaxChunk {
			return
		}
		file = fuzzSegment(data, nil)
	case fuzzFrame:
		if len(data) < 4 {
			return
		}
		// The declared raw length is the fuzzer's, bounded as the
		// reader bounds it, so that frames that decompress to more
		// and to less than it says are both tried.
		rawLen := binary.LittleEndian.Uint32(data) % (fuzzMaxChunk + 1)
		file = fuzzSegment(data[4:], &rawLen)
	}
	if err := os.WriteFile(seg, file, 0o600); err != nil {
		t.Fatal(err)
	}

	r, err := open(path, fuzzMaxChunk)
	if err != nil {
		if r != nil {
			t.Fatalf("Open returned a reader with its error %v", err)
		}
		if err.Error() == "" {
			t.Fatal("Open failed with an empty error")
		}
		return
	}
	defer r.Close()
	n := int64(0)
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			// A second look at the end finds the same end.
			if rec, err := r.Next(); !errors.Is(err, io.EOF) {
				t.Fatalf("Next after io.EOF: %+v, %v", rec, err)
			}
			break
		}
		if err != nil {
			if rec != nil {
				t.Fatalf("Next returned a record with its error %v", err)
			}
			var ce *CorruptError
			if !errors.As(err, &ce) || err.Error() == "" {
				t.Fatalf("Next failed with %T %q, want a *CorruptError", err, err)
			}
			if _, again := r.Next(); again != err {
				t.Fatalf("Next after %v returned %v", err, again)
			}
			break
		}
		if rec == nil {
			t.Fatal("Next returned neither a record nor an error")
		}
		if rec.Kind == 0 || int(rec.Kind) >= len(kindNames) {
			t.Fatalf("Next returned a record of %v", rec.Kind)
		}
		if n++; n > fuzzMaxRecords {
			t.Fatalf("more than %d records from %d bytes", fuzzMaxRecords, len(data))
		}
	}
	var counted int64
	for _, c := range r.Counts() {
		counted += c
	}
	if counted != n {
		t.Errorf("Counts() sum to %d, Next returned %d records", counted, n)
	}
	if read, size := r.Progress(); read < 0 || read > size {
		t.Errorf("Progress() = %d of %d", read, size)
	}
	_ = r.Info()
}

// fuzzSegment is a well-formed segment file holding one chunk: raw
// compressed, or, when rawLen is set, raw taken as the compressed frame
// itself with *rawLen as its declared length.
func fuzzSegment(raw []byte, rawLen *uint32) []byte {
	b := header{version: Version, seq: 1, start: t0.UnixMicro()}.append(nil)
	frame, n := raw, uint32(0)
	if rawLen != nil {
		n = *rawLen
	} else {
		frame, n = fuzzEncoder().EncodeAll(raw, nil), uint32(len(raw))
	}
	var ch [chunkHeaderSize]byte
	chunkHeader{compressed: uint32(len(frame)), raw: n}.put(ch[:])
	return append(append(b, ch[:]...), frame...)
}

// fuzzEncoder is one encoder for every input of a fuzzing process: making
// one per input would cost more than reading the capture.
var fuzzEncoder = sync.OnceValue(func() *zstd.Encoder {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderCRC(true))
	if err != nil {
		panic(err)
	}
	return enc
})

// recordsFrom is a RecordSource over the records encoded in b, up to the
// first that does not decode.
type recordsFrom struct{ d decoder }

func (s *recordsFrom) Next() (*Record, error) {
	if s.d.off >= len(s.d.b) || s.d.err != nil {
		return nil, io.EOF
	}
	r := new(Record)
	before := s.d.off
	if err := s.d.next(r); err != nil {
		return nil, io.EOF
	}
	if s.d.off <= before {
		panic("decoder did not advance")
	}
	return r, nil
}

// FuzzDecoder turns arbitrary records (the records that decode from the
// fuzzer's bytes) into events. Whatever they are, every record read is
// accounted for: Total == Used + the sum of Skipped.
func FuzzDecoder(f *testing.F) {
	digested := decoderSeed()
	for i := range digested {
		if digested[i].Kind == KindComplete {
			digested[i].HasDigest, digested[i].Digest = true, rowdigest.Digest{Rows: int64(i), Ordered: uint64(i), Unordered: uint64(i)}
		}
	}
	resumed := append([]Record{*resumedStartup(1, 10)}, decoderSeed()[1:]...)
	for _, recs := range [][]Record{decoderSeed(), sessions(2), digested, protocolSeed(), resumed} {
		var b []byte
		var err error
		prev := int64(0)
		for i := range recs {
			if b, err = appendRecord(b, &recs[i], prev); err != nil {
				f.Fatal(err)
			}
			prev = recs[i].Time
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		src := &recordsFrom{d: decoder{b: data}}
		d := NewDecoder(src)
		events := 0
		for {
			ev, err := d.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("Decoder.Next: %v (its source never fails)", err)
			}
			if ev == nil {
				t.Fatal("Decoder.Next returned neither an event nor an error")
			}
			if events++; events > 2*len(data)+1 {
				t.Fatalf("%d events from %d bytes", events, len(data))
			}
		}
		c := d.Counts()
		var skipped int64
		for why, n := range c.Skipped {
			if n < 0 {
				t.Errorf("skipped %s: %d", why, n)
			}
			skipped += n
		}
		if c.Used < 0 || c.Total != c.Used+skipped {
			t.Errorf("counts %+v: total %d, used + skipped %d", c, c.Total, c.Used+skipped)
		}
	})
}

// decoderSeed is a capture of two sessions that uses every path of the
// Decoder: the simple and extended protocols, a failed batch, COPY, a
// function call, a cancel, a gap, an end and a session left open.
func decoderSeed() []Record {
	fe := func(session uint64, at int64, m interface{ Encode([]byte) ([]byte, error) }) Record {
		b, err := m.Encode(nil)
		if err != nil {
			panic(err)
		}
		return Record{Kind: KindFrontend, Session: session, Time: at, Msg: b}
	}
	return []Record{
		{Kind: KindStartup, Session: 1, Time: 100, BackendPID: 4242, Params: []Param{{"user", "app"}, {"database", "shop"}}},
		{Kind: KindStartup, Session: 2, Time: 110, Params: []Param{{"user", "batch"}}},
		fe(1, 200, &pgproto3.Query{String: "BEGIN; UPDATE t SET x = 1"}),
		{Kind: KindComplete, Session: 1, Time: 210, Tag: "BEGIN"},
		{Kind: KindComplete, Session: 1, Time: 250, Tag: "UPDATE 3"},
		{Kind: KindReady, Session: 1, Time: 260, TxStatus: 'T'},
		fe(2, 300, &pgproto3.Parse{Name: "s1", Query: "SELECT $1::int8 + 1", ParameterOIDs: []uint32{20}}),
		fe(2, 300, &pgproto3.Bind{PreparedStatement: "s1", Parameters: [][]byte{{0, 0, 0, 0, 0, 0, 0, 42}}, ParameterFormatCodes: []int16{1}}),
		fe(2, 300, &pgproto3.Describe{ObjectType: 'P'}),
		fe(2, 300, &pgproto3.Execute{}),
		fe(2, 300, &pgproto3.Bind{PreparedStatement: "s1", Parameters: [][]byte{nil}}),
		fe(2, 301, &pgproto3.Execute{}),
		fe(2, 301, &pgproto3.Sync{}),
		{Kind: KindError, Session: 2, Time: 305, SQLState: "22P02", Severity: "ERROR", Message: "invalid input syntax"},
		{Kind: KindReady, Session: 2, Time: 306, TxStatus: 'I'},
		fe(2, 310, &pgproto3.Close{ObjectType: 'S', Name: "s1"}),
		fe(1, 600, &pgproto3.Query{String: "COPY t FROM STDIN"}),
		{Kind: KindCopyIn, Session: 1, Time: 601},
		fe(1, 602, &pgproto3.CopyData{Data: []byte("1\n2\n")}),
		fe(1, 604, &pgproto3.CopyDone{}),
		{Kind: KindComplete, Session: 1, Time: 610, Tag: "COPY 2"},
		{Kind: KindReady, Session: 1, Time: 611, TxStatus: 'T'},
		fe(1, 700, &pgproto3.FunctionCall{Function: 764}),
		{Kind: KindCancel, Session: 1, Time: 702},
		{Kind: KindGap, Session: 1, Time: 703, Dropped: 5},
		fe(1, 800, &pgproto3.Terminate{}),
		{Kind: KindEnd, Session: 1, Time: 801, End: EndTerminate},
		fe(2, 900, &pgproto3.Query{String: "SELECT pg_sleep(60)"}),
		{Kind: KindComplete, Session: 9, Time: 901, Tag: "SELECT 1"},
	}
}

// protocolSeed uses the decoder's paths of the forms a replay sends as
// the application did: a portal read in batches (PortalSuspended
// recorded, and not), a cancel in flight and one after the answer, two
// COPYs in one string, a COPY refused before data, one the client
// failed, fast-path calls.
func protocolSeed() []Record {
	fe := func(at int64, m interface{ Encode([]byte) ([]byte, error) }) Record {
		b, err := m.Encode(nil)
		if err != nil {
			panic(err)
		}
		return Record{Kind: KindFrontend, Session: 1, Time: at, Msg: b}
	}
	return []Record{
		{Kind: KindStartup, Session: 1, Time: 100, BackendPID: 4242, Params: []Param{{"user", "app"}}},
		fe(200, &pgproto3.Parse{Name: "S_1", Query: "SELECT g FROM t"}),
		fe(200, &pgproto3.Bind{PreparedStatement: "S_1", DestinationPortal: "C_1"}),
		fe(200, &pgproto3.Execute{Portal: "C_1", MaxRows: 2}),
		fe(200, &pgproto3.Execute{Portal: "C_1", MaxRows: 2}),
		fe(200, &pgproto3.Sync{}),
		{Kind: KindComplete, Session: 1, Time: 210, Tag: SuspendedTag},
		{Kind: KindComplete, Session: 1, Time: 211, Tag: "SELECT 1"},
		{Kind: KindReady, Session: 1, Time: 212, TxStatus: 'T'},
		fe(300, &pgproto3.Execute{Portal: "C_1", MaxRows: 2}),
		fe(300, &pgproto3.Sync{}),
		{Kind: KindReady, Session: 1, Time: 305, TxStatus: 'T'},
		fe(400, &pgproto3.Bind{PreparedStatement: "S_1", DestinationPortal: "C_2"}),
		fe(400, &pgproto3.Execute{Portal: "C_2", MaxRows: 2}),
		fe(400, &pgproto3.Flush{}),
		{Kind: KindComplete, Session: 1, Time: 410, Tag: SuspendedTag},
		fe(420, &pgproto3.Execute{Portal: "C_2", MaxRows: 2}),
		fe(420, &pgproto3.Flush{}),
		{Kind: KindComplete, Session: 1, Time: 430, Tag: "SELECT 0"},
		fe(440, &pgproto3.Sync{}),
		{Kind: KindReady, Session: 1, Time: 441, TxStatus: 'I'},
		fe(1000, &pgproto3.Query{String: "SELECT pg_sleep(5)"}),
		{Kind: KindCancel, Session: 1, Time: 1500},
		{Kind: KindCancel, Session: 1, Time: 1501},
		{Kind: KindError, Session: 1, Time: 1502, SQLState: "57014", Severity: "ERROR", Message: "canceling statement"},
		{Kind: KindReady, Session: 1, Time: 1503, TxStatus: 'I'},
		{Kind: KindCancel, Session: 1, Time: 1504},
		fe(2000, &pgproto3.Query{String: "COPY a FROM STDIN; COPY b FROM STDIN"}),
		{Kind: KindCopyIn, Session: 1, Time: 2001},
		fe(2002, &pgproto3.CopyData{Data: []byte("1\n")}),
		fe(2003, &pgproto3.CopyDone{}),
		{Kind: KindComplete, Session: 1, Time: 2004, Tag: "COPY 1"},
		{Kind: KindCopyIn, Session: 1, Time: 2005},
		fe(2006, &pgproto3.CopyData{Data: []byte("2\n")}),
		fe(2007, &pgproto3.CopyFail{Message: "no"}),
		{Kind: KindError, Session: 1, Time: 2008, SQLState: "57014", Severity: "ERROR", Message: "COPY from stdin failed"},
		{Kind: KindReady, Session: 1, Time: 2009, TxStatus: 'I'},
		fe(3000, &pgproto3.Query{String: "COPY missing FROM STDIN"}),
		{Kind: KindError, Session: 1, Time: 3001, SQLState: "42P01", Severity: "ERROR", Message: "relation does not exist"},
		{Kind: KindReady, Session: 1, Time: 3002, TxStatus: 'I'},
		fe(4900, &pgproto3.FunctionCall{Function: 957, ArgFormatCodes: []uint16{1}, Arguments: [][]byte{{0, 6, 0, 0}}, ResultFormatCode: 1}),
		{Kind: KindReady, Session: 1, Time: 4901, TxStatus: 'T'},
		fe(5000, &pgproto3.FunctionCall{Function: 952, ArgFormatCodes: []uint16{1}, Arguments: [][]byte{{0, 0, 0x40, 1}, {0, 2, 0, 0}}, ResultFormatCode: 1}),
		{Kind: KindReady, Session: 1, Time: 5001, TxStatus: 'T'},
		fe(5010, &pgproto3.FunctionCall{Function: 16500, Arguments: [][]byte{nil}}),
		{Kind: KindReady, Session: 1, Time: 5011, TxStatus: 'T'},
	}
}
