package capture

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/pgrehearse/pgrehearse/internal/rowdigest"
	"github.com/pgrehearse/pgrehearse/internal/wire"
)

// MaxFieldSize is the most bytes one field of a record (a message, a
// string) may hold: PostgreSQL refuses a message over 1 GiB, so a larger
// declared length is corruption and is refused before anything is
// allocated for it.
const MaxFieldSize = 1 << 30

// maxRecordSize bounds one encoded record: its largest field plus room
// for the others.
const maxRecordSize = MaxFieldSize + 1<<20

// ErrRecordTooLarge is returned by Writer.Write for a record whose
// encoding would exceed the format's limits (a field over MaxFieldSize).
// The writer stays usable.
var ErrRecordTooLarge = errors.New("capture: record too large")

// appendRecord appends r's encoding to b: the uvarint length of the body,
// then the body, which is the kind byte, the uvarint session, the varint
// difference between r.Time and prev (microseconds), and the kind's own
// fields. Fields that do not belong to r.Kind are not written.
func appendRecord(b []byte, r *Record, prev int64) ([]byte, error) {
	if r.Kind == 0 || int(r.Kind) >= len(kindNames) {
		return b, fmt.Errorf("capture: cannot encode %v", r.Kind)
	}
	size := recordSize(r, prev)
	if size > maxRecordSize || len(r.Msg) > MaxFieldSize {
		return b, ErrRecordTooLarge
	}
	start := len(b)
	b = binary.AppendUvarint(b, uint64(size))
	b = append(b, byte(r.Kind))
	b = binary.AppendUvarint(b, r.Session)
	b = binary.AppendVarint(b, r.Time-prev)
	switch r.Kind {
	case KindStartup:
		b = binary.AppendUvarint(b, uint64(len(r.Params)))
		for _, p := range r.Params {
			b = appendString(b, p.Name)
			b = appendString(b, p.Value)
		}
		b = binary.AppendUvarint(b, uint64(r.ProtocolMajor))
		b = binary.AppendUvarint(b, uint64(r.ProtocolMinor))
		b = append(b, boolByte(r.TLS))
		b = binary.AppendUvarint(b, uint64(r.BackendPID))
		b = appendString(b, r.ClientAddr)
		if rs := r.Resume; rs != nil {
			b = binary.AppendUvarint(b, resumeMarker)
			b = binary.AppendUvarint(b, uint64(len(rs.State)))
			for _, it := range rs.State {
				if it.Parse != nil {
					b = append(b, stateParse)
					b = binary.AppendUvarint(b, uint64(len(it.Parse)))
					b = append(b, it.Parse...)
				} else {
					b = append(b, stateSQL)
					b = appendString(b, it.SQL)
				}
			}
			b = binary.AppendUvarint(b, uint64(max(rs.Skipped, 0)))
			b = appendString(b, string(rs.SkipReason))
		}
	case KindFrontend:
		b = binary.AppendUvarint(b, uint64(len(r.Msg)))
		b = append(b, r.Msg...)
	case KindComplete:
		b = appendString(b, r.Tag)
		if r.HasDigest {
			b = append(r.Digest.Append(b), byte(digestVersion(r)))
		}
	case KindError:
		b = appendString(b, r.SQLState)
		b = appendString(b, r.Severity)
		b = appendString(b, r.Message)
	case KindReady:
		b = append(b, r.TxStatus)
	case KindEnd:
		b = append(b, byte(r.End))
	case KindGap:
		b = binary.AppendVarint(b, r.Dropped)
	}
	if n := len(b) - start - rowdigest.UvarintLen(uint64(size)); n != size {
		panic(fmt.Sprintf("capture: %v record sized %d, encoded %d", r.Kind, size, n))
	}
	return b, nil
}

// recordSize is the length of r's body, so that the length prefix is
// written first and the body straight after it, with no copy.
func recordSize(r *Record, prev int64) int {
	n := 1 + rowdigest.UvarintLen(r.Session) + varintLen(r.Time-prev)
	switch r.Kind {
	case KindStartup:
		n += rowdigest.UvarintLen(uint64(len(r.Params)))
		for _, p := range r.Params {
			n += stringLen(p.Name) + stringLen(p.Value)
		}
		n += rowdigest.UvarintLen(uint64(r.ProtocolMajor)) + rowdigest.UvarintLen(uint64(r.ProtocolMinor)) + 1
		n += rowdigest.UvarintLen(uint64(r.BackendPID)) + stringLen(r.ClientAddr)
		if rs := r.Resume; rs != nil {
			n += rowdigest.UvarintLen(resumeMarker) + rowdigest.UvarintLen(uint64(len(rs.State)))
			for _, it := range rs.State {
				if it.Parse != nil {
					n += 1 + rowdigest.UvarintLen(uint64(len(it.Parse))) + len(it.Parse)
				} else {
					n += 1 + stringLen(it.SQL)
				}
			}
			n += rowdigest.UvarintLen(uint64(max(rs.Skipped, 0))) + stringLen(string(rs.SkipReason))
		}
	case KindFrontend:
		n += rowdigest.UvarintLen(uint64(len(r.Msg))) + len(r.Msg)
	case KindComplete:
		n += stringLen(r.Tag)
		if r.HasDigest {
			n += r.Digest.Size() + 1 // and its version
		}
	case KindError:
		n += stringLen(r.SQLState) + stringLen(r.Severity) + stringLen(r.Message)
	case KindReady, KindEnd:
		n++
	case KindGap:
		n += varintLen(r.Dropped)
	}
	return n
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func stringLen(s string) int { return rowdigest.UvarintLen(uint64(len(s))) + len(s) }

func varintLen(x int64) int {
	ux := uint64(x) << 1
	if x < 0 {
		ux = ^ux
	}
	return rowdigest.UvarintLen(ux)
}

// digestVersion is the version r's digest is written with.
func digestVersion(r *Record) rowdigest.Version {
	if r.DigestVersion == 0 {
		return rowdigest.Current
	}
	return r.DigestVersion
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

// decoder reads the records of one decompressed chunk.
type decoder struct {
	b    []byte
	off  int
	err  error
	prev int64 // the previous record's time, or the capture's start
}

// errAt is a decoding error at a byte offset within the chunk.
type errAt struct {
	off int
	msg string
}

func (e *errAt) Error() string { return fmt.Sprintf("%s at byte %d of the chunk", e.msg, e.off) }

func (d *decoder) fail(msg string) {
	if d.err == nil {
		d.err = &errAt{d.off, msg}
	}
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		d.fail("bad uvarint")
		return 0
	}
	d.off += n
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b[d.off:])
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.off += n
	return v
}

func (d *decoder) byte1() byte {
	if d.err != nil {
		return 0
	}
	if d.off >= len(d.b) {
		d.fail("record ends early")
		return 0
	}
	c := d.b[d.off]
	d.off++
	return c
}

// bytes returns a length-prefixed field, still in the chunk's buffer. A
// declared length is checked against what the record holds before
// anything is allocated for it.
func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > MaxFieldSize || n > uint64(len(d.b)-d.off) {
		d.fail(fmt.Sprintf("field of %d bytes overruns the record", n))
		return nil
	}
	v := d.b[d.off : d.off+int(n)]
	d.off += int(n)
	return v
}

func (d *decoder) string() string { return string(d.bytes()) }

// next decodes the record at d.off into r. A body may be longer than the
// fields its kind has: a later version 1 writer may append fields, which
// this reader skips.
func (d *decoder) next(r *Record) error {
	size := d.uvarint()
	if d.err != nil {
		return d.err
	}
	if size == 0 || size > uint64(len(d.b)-d.off) {
		d.fail(fmt.Sprintf("record of %d bytes overruns the chunk", size))
		return d.err
	}
	start := d.off
	end := d.off + int(size)
	whole := d.b
	d.b = d.b[:end] // no field may reach into the next record
	defer func() { d.b = whole }()

	*r = Record{Kind: Kind(d.byte1())}
	r.Session = d.uvarint()
	r.Time = d.prev + d.varint()
	switch r.Kind {
	case KindStartup:
		n := d.uvarint()
		// A parameter takes at least two bytes: refuse a count the
		// record cannot hold before allocating for it.
		if n > uint64(end-d.off)/2 {
			d.fail(fmt.Sprintf("%d startup parameters overrun the record", n))
			break
		}
		if n > 0 {
			r.Params = make([]Param, n)
			for i := range r.Params {
				r.Params[i] = Param{d.string(), d.string()}
			}
		}
		r.ProtocolMajor = uint16(d.uvarintMax(0xffff))
		r.ProtocolMinor = uint16(d.uvarintMax(0xffff))
		switch d.byte1() {
		case 0:
		case 1:
			r.TLS = true
		default:
			d.off--
			d.fail("bad TLS flag")
		}
		r.BackendPID = uint32(d.uvarintMax(0xffffffff))
		r.ClientAddr = d.string()
		if d.err == nil && d.off < end {
			r.Resume = d.resume(end)
		}
	case KindFrontend:
		if m := d.bytes(); len(m) > 0 {
			r.Msg = append([]byte(nil), m...)
		}
	case KindComplete:
		r.Tag = d.string()
		if d.err == nil && d.off < end {
			// The rows' digest, which writers before it did not
			// append.
			dg, n, ok := rowdigest.Decode(d.b[d.off:end])
			if !ok {
				d.fail("bad row digest")
				break
			}
			r.Digest, r.HasDigest, r.DigestVersion = dg, true, rowdigest.V1
			d.off += n
			// Its version, which format version 1 did not write.
			if d.off < end {
				r.DigestVersion = rowdigest.Version(d.byte1())
				if !r.DigestVersion.Known() {
					d.off--
					d.fail(fmt.Sprintf("row digest of version %d, which this pgrehearse does not know", r.DigestVersion))
				}
			}
		}
	case KindError:
		r.SQLState = d.string()
		r.Severity = d.string()
		r.Message = d.string()
	case KindReady:
		r.TxStatus = d.byte1()
	case KindCopyIn, KindCancel:
	case KindEnd:
		r.End = EndReason(d.byte1())
	case KindGap:
		r.Dropped = d.varint()
	default:
		d.off = start
		d.fail(fmt.Sprintf("unknown record kind %d", uint8(r.Kind)))
	}
	if d.err != nil {
		return d.err
	}
	d.prev = r.Time
	d.off = end
	return nil
}

// The fields a startup record of a session recorded from the middle
// appends (Record.Resume): a marker, so that a later writer may append
// other fields instead, then the state's items, each a kind byte and its
// bytes.
const (
	resumeMarker = 1
	stateSQL     = 1
	stateParse   = 2
)

// resume decodes the fields of Record.Resume, up to end; nil when they
// carry another marker (a later writer's fields, skipped).
func (d *decoder) resume(end int) *Resume {
	if d.uvarint() != resumeMarker || d.err != nil {
		return nil
	}
	n := d.uvarint()
	// An item takes at least two bytes.
	if n > uint64(end-d.off)/2 {
		d.fail(fmt.Sprintf("%d state items overrun the record", n))
		return nil
	}
	rs := &Resume{}
	if n > 0 {
		rs.State = make([]StateItem, 0, n)
	}
	for range n {
		switch d.byte1() {
		case stateSQL:
			rs.State = append(rs.State, StateItem{SQL: d.string()})
		case stateParse:
			m := d.bytes()
			if d.err == nil && (len(m) < 5 || m[0] != wire.Parse) {
				d.fail("state item is not a Parse message")
			}
			rs.State = append(rs.State, StateItem{Parse: append([]byte{}, m...)})
		default:
			if d.err == nil {
				d.off--
				d.fail("bad state item kind")
			}
		}
		if d.err != nil {
			return nil
		}
	}
	skipped := d.uvarint()
	if skipped > 1<<62 {
		d.fail("skipped count out of range")
	}
	rs.Skipped = int64(skipped)
	rs.SkipReason = ResumeSkip(d.string())
	if d.err != nil {
		return nil
	}
	return rs
}

func (d *decoder) uvarintMax(max uint64) uint64 {
	v := d.uvarint()
	if v > max {
		d.fail(fmt.Sprintf("value %d out of range", v))
		return 0
	}
	return v
}
