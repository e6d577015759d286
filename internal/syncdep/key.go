package syncdep

import (
	"encoding/hex"
	"math"
	"strconv"
	"strings"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
)

// keyHash hashes the key that e's parameters, or the constants of its
// logged text (see fingerprint.ConstantValue), give for r, by value: two
// texts the server reads as one key (" 7" and "7" of an integer, the
// cases of a uuid) hash alike. false when the log does not give it: the
// parameters are missing or cut, one is NULL or does not read as its
// column's type, or the normalized statement's $n is a constant of the
// logged text that fingerprint.ConstantValue cannot read.
func keyHash(r *rowRef, e *Exec) (uint64, bool) {
	if len(e.Items) != 1 || e.Items[0].Unparsed {
		return 0, false
	}
	maxRef := int32(-1)
	h := uint64(fnvOffset)
	var buf [24]byte
	for i, p := range r.params {
		v, ok := keyParam(e, p, &maxRef)
		if !ok {
			return 0, false
		}
		switch r.kinds[i] {
		case keyInt:
			n, ok := intValue(v)
			if !ok {
				return 0, false
			}
			h = fnvBytes(h, strconv.AppendInt(buf[:0], n, 10))
		case keyText:
			// A binary text, varchar or name is its bytes.
			h = fnvString(h, v.Value)
		case keyUUID:
			u, ok := uuidValue(v, buf[:0])
			if !ok {
				return 0, false
			}
			h = fnvBytes(h, u)
		default:
			return 0, false
		}
		h = (h ^ 0xff) * fnvPrime // ends the column: ("ab","c") is not ("a","bc")
	}
	return h, true
}

// keyParam reads the value of e's $p, a key column's (see keyHash);
// maxRef caches paramBound (-1: not yet read). false when the log does
// not give it or it is NULL.
func keyParam(e *Exec, p int32, maxRef *int32) (event.Param, bool) {
	if *maxRef < 0 {
		if *maxRef = paramBound(e); *maxRef < 0 {
			return event.Param{}, false
		}
	}
	var v event.Param
	switch {
	case p <= *maxRef:
		// A bind parameter.
		if e.ParamState != event.ParamsComplete || int(p) > len(e.Params) {
			return v, false
		}
		v = e.Params[p-1]
	default:
		// A constant the normalization numbered: the simple protocol's
		// key, or one written in the text.
		c, ok := fingerprint.ConstantValue(e.Items[0].Query, e.Text, p)
		if !ok {
			return v, false
		}
		v = event.Param{Value: c}
	}
	return v, !v.Null
}

// keyOld reports whether e's key for r, a keyed one (see keyHash), names
// a row that no fresh insert made during the replay: its one integer
// column, which a sequence fills, is at most what the sequence had given
// when the catalog was read (see RowKey.Seq).
func keyOld(r *rowRef, e *Exec) bool {
	if !r.seq || len(r.params) != 1 {
		return false
	}
	maxRef := int32(-1)
	v, ok := keyParam(e, r.params[0], &maxRef)
	if !ok {
		return false
	}
	n, ok := intValue(v)
	return ok && n <= r.seqLast
}

// intValue reads an integer key's parameter: its text, or the bytes of
// a binary one (event.Param.Binary), whose type the server gave from the
// key column's (int2, int4, int8: 2, 4 or 8 bytes, big-endian, signed),
// so that it gives the key its text form gives.
func intValue(v event.Param) (int64, bool) {
	if !v.Binary {
		n, err := strconv.ParseInt(strings.TrimSpace(v.Value), 10, 64)
		return n, err == nil
	}
	var u uint64
	for i := 0; i < len(v.Value); i++ {
		u = u<<8 | uint64(v.Value[i])
	}
	switch len(v.Value) {
	case 2:
		return int64(int16(u)), true
	case 4:
		return int64(int32(u)), true
	case 8:
		return int64(u), true
	}
	return 0, false
}

// uuidValue reads a uuid key's parameter into its 16 bytes: its text, or
// the bytes of a binary one.
func uuidValue(v event.Param, dst []byte) ([]byte, bool) {
	if !v.Binary {
		return uuidBytes(v.Value, dst)
	}
	if len(v.Value) != 16 {
		return nil, false
	}
	return append(dst, v.Value...), true
}

// FNV-1a, 64 bits, written out so that hashing a key allocates nothing.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnvString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * fnvPrime
	}
	return h
}

func fnvBytes(h uint64, b []byte) uint64 {
	for _, c := range b {
		h = (h ^ uint64(c)) * fnvPrime
	}
	return h
}

// uuidBytes reads a uuid's text as PostgreSQL accepts it (hex digits in
// either case, with or without hyphens, possibly in braces) into its 16
// bytes.
func uuidBytes(s string, dst []byte) ([]byte, bool) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") {
		s = s[1 : len(s)-1]
	}
	s = strings.ReplaceAll(s, "-", "")
	if len(s) != 32 {
		return nil, false
	}
	out := dst[:16]
	if _, err := hex.Decode(out, []byte(s)); err != nil {
		return nil, false
	}
	return out, true
}

// paramBound is the highest $n of e's one normalized statement that is a
// bind parameter of its logged text (see fingerprint.MaxParamRef), -1
// when it cannot tell. A logged text that is its normalized statement
// (up to a final semicolon) had no constant replaced: each of its $n is
// a parameter, and it need not be scanned.
func paramBound(e *Exec) int32 {
	if rest, ok := strings.CutPrefix(e.Text, e.Items[0].Query); ok && strings.Trim(rest, " \t\r\n;") == "" {
		return math.MaxInt32
	}
	return fingerprint.MaxParamRef(e.Text)
}
