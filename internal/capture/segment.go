package capture

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
)

// A segment file is a header followed by chunks. docs/capture-format.md
// has the layout; these are its constants.
const (
	// Magic opens every segment file.
	Magic = "PGRCAP"
	// Version is the format version this package writes. It reads
	// files of this version and older; a newer one is refused. Version
	// 2: a complete's rows' digest is followed by its rowdigest.Version
	// (digests of version 1 files are rowdigest.V1's).
	Version = 2

	headerSize      = 20 // magic, version, reserved, sequence, start
	chunkHeaderSize = 12 // compressed length, raw length, CRC-32C of both

	segmentPrefix = "capture-"
	segmentSuffix = ".pgcap"
	// ManifestName is the manifest's file name in a capture directory.
	ManifestName = "capture.json"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// segmentName is the name of the seq'th segment, from 1; six digits keep
// the names sorted as the capture was written up to 999999 segments
// (more than 60 TiB at the default size), and the reader sorts by number
// anyway.
func segmentName(seq uint32) string {
	return fmt.Sprintf("%s%06d%s", segmentPrefix, seq, segmentSuffix)
}

// parseSegmentName returns the sequence number of a segment file name.
func parseSegmentName(name string) (uint32, bool) {
	s, ok := strings.CutPrefix(name, segmentPrefix)
	if !ok {
		return 0, false
	}
	s, ok = strings.CutSuffix(s, segmentSuffix)
	if !ok || len(s) < 6 {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil || n == 0 {
		return 0, false
	}
	return uint32(n), true
}

// header is a segment file's first headerSize bytes.
type header struct {
	version uint8
	seq     uint32
	start   int64 // the capture's start, µs since the Unix epoch
}

func (h header) append(b []byte) []byte {
	b = append(b, Magic...)
	b = append(b, h.version, 0)
	b = binary.LittleEndian.AppendUint32(b, h.seq)
	return binary.LittleEndian.AppendUint64(b, uint64(h.start))
}

var errNotCapture = errors.New("not a capture segment (no PGRCAP magic)")

func parseHeader(b []byte) (header, error) {
	if len(b) < headerSize || string(b[:len(Magic)]) != Magic {
		return header{}, errNotCapture
	}
	h := header{
		version: b[6],
		seq:     binary.LittleEndian.Uint32(b[8:]),
		start:   int64(binary.LittleEndian.Uint64(b[12:])),
	}
	if h.version == 0 || h.version > Version {
		return h, fmt.Errorf("format version %d; this pgrehearse reads up to version %d", h.version, Version)
	}
	return h, nil
}

// chunkHeader precedes each zstd frame: the frame's length, the length of
// the records it decompresses to, and a CRC-32C of those eight bytes, so
// that a damaged length is told from a file that simply ends early.
type chunkHeader struct {
	compressed, raw uint32
}

func (c chunkHeader) put(b []byte) {
	binary.LittleEndian.PutUint32(b[0:], c.compressed)
	binary.LittleEndian.PutUint32(b[4:], c.raw)
	binary.LittleEndian.PutUint32(b[8:], crc32.Checksum(b[:8], castagnoli))
}

func parseChunkHeader(b []byte) (chunkHeader, bool) {
	if crc32.Checksum(b[:8], castagnoli) != binary.LittleEndian.Uint32(b[8:]) {
		return chunkHeader{}, false
	}
	return chunkHeader{binary.LittleEndian.Uint32(b[0:]), binary.LittleEndian.Uint32(b[4:])}, true
}

// maxChunkSize bounds a chunk's raw and compressed lengths: one record of
// the largest size, with room to spare. A reader refuses a larger length
// before allocating for it.
const maxChunkSize = maxRecordSize + 1<<20
