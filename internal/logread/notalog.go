package logread

import (
	"bytes"
	"errors"
	"fmt"
)

// ErrNotALog is returned (wrapped) for a file that is no PostgreSQL log
// at all: an executable, a document, an archive or a compressed file
// pgrehearse does not decompress, a file of NUL bytes, binary data. Its
// message says what the file looks like, so that a user who gave the
// wrong file sees which one, instead of a prefix that cannot be detected
// in escaped garbage.
var ErrNotALog = errors.New("not a PostgreSQL log")

// foreignMagics are the first bytes of files that cannot be a log, with
// what the file then is. A log's first bytes are its log_line_prefix (a
// time, a pid, a name), a csvlog's time or a jsonlog's "{": none of these
// starts with any of them. Compressions that openSource reads (gzip,
// zstd, bzip2, xz) are not here: their content is looked at instead.
var foreignMagics = []struct {
	at    int
	magic string
	what  string
}{
	{0, "\x7fELF", "an ELF binary (an executable or a library)"},
	{0, "\xcf\xfa\xed\xfe", "a Mach-O binary"},
	{0, "%PDF-", "a PDF document"},
	{0, "\x89PNG\r\n\x1a\n", "a PNG image"},
	{0, "\xff\xd8\xff", "a JPEG image"},
	{0, "GIF8", "a GIF image"},
	{0, "SQLite format 3\x00", "an SQLite database"},
	{0, "PGDMP", "a pg_dump archive (custom format)"},
	{0, "PAR1", "a Parquet file"},
	{0, "PK\x03\x04", "a zip archive, which pgrehearse does not read: extract the log first (unzip)"},
	{0, "7z\xbc\xaf\x27\x1c", "a 7z archive, which pgrehearse does not read: extract the log first (7z x)"},
	{0, "Rar!\x1a\x07", "a RAR archive, which pgrehearse does not read: extract the log first"},
	{257, "ustar", "a tar archive, which pgrehearse does not read: extract the log first (tar xf)"},
	{0, "\x04\x22\x4d\x18", "lz4-compressed data, which pgrehearse does not read: decompress it first (lz4 -d); gzip, zstd, bzip2 and xz are read as they are"},
	{0, "\x89LZO\x00\r\n\x1a\n", "lzop-compressed data, which pgrehearse does not read: decompress it first (lzop -d); gzip, zstd, bzip2 and xz are read as they are"},
	{0, "LZIP", "lzip-compressed data, which pgrehearse does not read: decompress it first (lzip -d); gzip, zstd, bzip2 and xz are read as they are"},
	{0, "\x1f\x9d", "data compressed with compress (.Z), which pgrehearse does not read: decompress it first (uncompress); gzip, zstd, bzip2 and xz are read as they are"},
}

// binarySample is how much of a head is looked at for binary data.
const binarySample = 4096

// binaryMin is the fewest control characters that make a head binary
// data: a short text with one stray control character is not.
const binaryMin = 3

// notALog says what head, the first bytes of a file (decompressed), looks
// like when it is certainly no log: one of foreignMagics, or NUL bytes
// only. It returns "" otherwise.
func notALog(head []byte) string {
	for _, m := range foreignMagics {
		if len(head) >= m.at+len(m.magic) && string(head[m.at:m.at+len(m.magic)]) == m.magic {
			return m.what
		}
	}
	if len(head) > 0 && len(bytes.Trim(head, "\x00")) == 0 {
		return fmt.Sprintf("NUL bytes only, in its first %d bytes (a file preallocated or zeroed, or truncated in place while its server wrote on)", len(head))
	}
	return ""
}

// binaryData says what head looks like when a log's prefix could not be
// detected in it and it is not text: more than one byte in fifty of its
// first binarySample (after any NUL bytes it starts with, which a log
// truncated in place while its server wrote on holds), and at least
// binaryMin, are control characters other than white space. A log's
// lines are text whatever their encoding, with hardly a control
// character, so this tells binary data from a log of another shape;
// random bytes hold one in ten (a bound of one in ten let about one
// random file in three through, to be quoted as a log's line).
func binaryData(head []byte) string {
	s := bytes.TrimLeft(head, "\x00")
	s = s[:min(len(s), binarySample)]
	n := 0
	for _, c := range s {
		if (c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v' && c != 0x1b) || c == 0x7f {
			n++
		}
	}
	if len(s) == 0 || n < binaryMin || n*50 <= len(s) {
		return ""
	}
	return fmt.Sprintf("binary data (%d of its first %d bytes are control characters)", n, len(s))
}
