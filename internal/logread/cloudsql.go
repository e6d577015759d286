package logread

import (
	"time"

	"github.com/pgrehearse/pgrehearse/internal/logread/prefix"
)

// Google Cloud Logging's exports of Cloud SQL hold one line of the
// server's stderr log in each entry, its time beside it:
//
//	{"insertId":"...","resource":{...},"severity":"INFO","textPayload":"[24667]: [2-1] db=test,user=admin LOG:  connection authorized: ...","timestamp":"2020-05-02T13:00:20.38403Z"}
//	{"insertId":"...","textPayload":"\tpages: 0 removed, 1 remain, 0 skipped due to pins, 0 skipped frozen","timestamp":"..."}
//
// The DETAIL, STATEMENT and tab-indented lines of a message are entries
// of their own, after it. cloudEnvelope gives the stderr reader each
// entry's line with the entry's time in front, as the ISO time column of
// a CloudWatch export is: the stderr reader then joins the lines as it
// joins any stderr log's.

// cloudSQLPrefixes is Cloud SQL's log_line_prefix, which its users cannot
// change.
const cloudSQLPrefixes = "[%p]: [%l-1] db=%d,user=%u "

// cloudSQLPrefix returns the prefix of Cloud SQL's lines (the first lines
// of a log, tab lines left out): Cloud SQL's own when it reads at least
// half of them, as it should, or else the one they infer.
func cloudSQLPrefix(lines [][]byte) *prefix.Prefix {
	fixed, err := prefix.Compile(cloudSQLPrefixes)
	if err != nil {
		panic(err) // a constant
	}
	var f prefix.Fields
	n := 0
	for _, l := range lines {
		if _, ok := fixed.Match(l, &f); ok {
			n++
		}
	}
	if 2*n >= len(lines) {
		return fixed
	}
	if inf, err := prefix.Infer(lines); err == nil && inf.Prefix != "" {
		if p, err := prefix.Compile(inf.Prefix); err == nil {
			return p
		}
	}
	return fixed
}

// cloudEnvelope gives the stderr reader the lines of Cloud Logging's
// entries (see the comment at the top).
type cloudEnvelope struct {
	jr *jsonReader
	// withTime puts each entry's time in front of its line ("%m "),
	// for a prefix without one (Cloud SQL's).
	withTime bool
	arena    lineArena
	stamp    []byte // the time in front of a line
	text     []byte // the text of a line, while its time is read
}

func (e *cloudEnvelope) err() error { return e.jr.cb.err }

// next implements lineSource.
func (e *cloudEnvelope) next() (outLine, bool) {
	jr := e.jr
	for {
		rec := jr.nextRecord()
		if rec.st == frameEOF {
			return outLine{}, false
		}
		kind, o := jr.record(rec, jsonCloudLogging)
		if kind != recCloud {
			continue
		}
		text, ok := jr.bytesOf(o.v[jTextPayload])
		if !ok {
			jr.skip(rec, SkipMalformed)
			continue
		}
		ol := outLine{first: rec.line, span: rec.lines}
		if len(text) > 0 && text[0] == '\t' || !e.withTime {
			// A continuation line, as the server wrote it (only the
			// first line of a message has the prefix), or a line whose
			// prefix has a time of its own.
			ol.b = e.arena.join(text)
			return ol, true
		}
		// bytesOf decodes the time into the scratch the text is in.
		e.text = append(e.text[:0], text...)
		var us int64
		if v := o.v[jTime]; v.set {
			b, ok := jr.bytesOf(v)
			if ok {
				us, ok = jr.times.parse(b)
			}
			if !ok {
				jr.skip(rec, SkipMalformed)
				continue
			}
		}
		e.stamp = time.UnixMicro(us).UTC().AppendFormat(e.stamp[:0], "2006-01-02 15:04:05.000000 UTC ")
		ol.b = e.arena.join(e.stamp, e.text)
		return ol, true
	}
}
