package event

import (
	"encoding/binary"
	"encoding/hex"
	"math"
	"strconv"
	"time"
)

// TextParams are the execution's parameters as text, as a log writes
// them: what a reader of values needs (the keys of the rows a statement
// reaches, a sample's values for EXPLAIN, the events shown). A parameter
// the original client sent in binary format (Wire) is its bytes as sent;
// TextParams gives the text form of those whose type the Parse named and
// whose binary form is simple (booleans, integers, floats, text and its
// kin, uuid, bytea, date, timestamps), and leaves the others as they are,
// which then read as no value of their column's type. Those of a type
// the Parse left to the server stay as they are, marked Binary: their
// place may tell their type (a key column's). Params are returned as
// they are when none is binary, without a copy; a replay sends Params,
// never these.
func (e *Event) TextParams() []Param {
	w := e.Wire()
	if w == nil || len(e.Params) == 0 {
		return e.Params
	}
	var out []Param
	for i, p := range e.Params {
		if p.Null || !w.Binary(i) {
			continue
		}
		var oid uint32
		if i < len(w.ParamOIDs) {
			oid = w.ParamOIDs[i]
		}
		v, ok := binaryText(oid, []byte(p.Value))
		if !ok && oid != 0 {
			continue
		}
		if out == nil {
			out = append([]Param(nil), e.Params...)
		}
		if ok {
			out[i].Value = v
		} else {
			out[i].Binary = true
		}
	}
	if out == nil {
		return e.Params
	}
	return out
}

// PostgreSQL's epoch for dates and timestamps.
var pgEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// binaryText is the text form of a value of type oid in binary format
// (the type's send function), false when it is not known or the bytes do
// not fit it.
func binaryText(oid uint32, b []byte) (string, bool) {
	switch oid {
	case 16: // bool
		if len(b) == 1 {
			if b[0] != 0 {
				return "t", true
			}
			return "f", true
		}
	case 21: // int2
		if len(b) == 2 {
			return strconv.FormatInt(int64(int16(binary.BigEndian.Uint16(b))), 10), true
		}
	case 23: // int4
		if len(b) == 4 {
			return strconv.FormatInt(int64(int32(binary.BigEndian.Uint32(b))), 10), true
		}
	case 26: // oid
		if len(b) == 4 {
			return strconv.FormatUint(uint64(binary.BigEndian.Uint32(b)), 10), true
		}
	case 20: // int8
		if len(b) == 8 {
			return strconv.FormatInt(int64(binary.BigEndian.Uint64(b)), 10), true
		}
	case 700: // float4
		if len(b) == 4 {
			return floatText(float64(math.Float32frombits(binary.BigEndian.Uint32(b))), 32), true
		}
	case 701: // float8
		if len(b) == 8 {
			return floatText(math.Float64frombits(binary.BigEndian.Uint64(b)), 64), true
		}
	case 25, 1043, 1042, 19, 705, 114: // text, varchar, bpchar, name, unknown, json
		return string(b), true
	case 3802: // jsonb: a version byte, then the text
		if len(b) > 0 && b[0] == 1 {
			return string(b[1:]), true
		}
	case 17: // bytea
		return `\x` + hex.EncodeToString(b), true
	case 2950: // uuid
		if len(b) == 16 {
			h := hex.EncodeToString(b)
			return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], true
		}
	case 1082: // date: days since 2000-01-01
		if len(b) == 4 {
			switch d := int32(binary.BigEndian.Uint32(b)); d {
			case math.MaxInt32:
				return "infinity", true
			case math.MinInt32:
				return "-infinity", true
			default:
				return pgEpoch.AddDate(0, 0, int(d)).Format("2006-01-02"), true
			}
		}
	case 1114, 1184: // timestamp, timestamptz: µs since 2000-01-01 (UTC)
		if len(b) == 8 {
			switch us := int64(binary.BigEndian.Uint64(b)); us {
			case math.MaxInt64:
				return "infinity", true
			case math.MinInt64:
				return "-infinity", true
			default:
				t := time.Unix(pgEpoch.Unix()+us/1e6, (us%1e6)*1e3).UTC()
				s := t.Format("2006-01-02 15:04:05.999999")
				if oid == 1184 {
					s += "+00"
				}
				return s, true
			}
		}
	}
	return "", false
}

// floatText writes a float as PostgreSQL reads it back.
func floatText(f float64, bits int) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return strconv.FormatFloat(f, 'g', -1, bits)
}
