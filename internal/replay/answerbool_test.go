package replay

import (
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/rowdigest"
	"github.com/pgrehearse/pgrehearse/internal/syncdep"
)

// TestAnswerBool: a try's answer, one row of one boolean in text or
// binary format, reads from the capture's digest in every version;
// anything else is unknown.
func TestAnswerBool(t *testing.T) {
	row := func(v string) []byte {
		b, err := (&pgproto3.DataRow{Values: [][]byte{[]byte(v)}}).Encode(nil)
		if err != nil {
			t.Fatal(err)
		}
		return b[5:]
	}
	answer := func(ver rowdigest.Version, rows ...string) *event.Answer {
		var d rowdigest.Digest
		for _, r := range rows {
			d.AddVersion(ver, row(r))
		}
		return &event.Answer{Rows: []int64{d.Rows}, Digests: []rowdigest.Digest{d}, DigestVersion: ver}
	}
	for _, ver := range []rowdigest.Version{rowdigest.V1, rowdigest.V2, rowdigest.V3} {
		for _, tc := range []struct {
			a    *event.Answer
			want syncdep.AnswerBool
		}{
			{answer(ver, "t"), syncdep.AnswerTrue},
			{answer(ver, "\x01"), syncdep.AnswerTrue},
			{answer(ver, "f"), syncdep.AnswerFalse},
			{answer(ver, "\x00"), syncdep.AnswerFalse},
			{answer(ver, "t", "t"), syncdep.AnswerUnknown},
			{answer(ver, "x"), syncdep.AnswerUnknown},
			{answer(ver), syncdep.AnswerUnknown},
			{nil, syncdep.AnswerUnknown},
		} {
			if got := answerBool(tc.a); got != tc.want {
				t.Errorf("V%d %+v: %v, want %v", ver, tc.a, got, tc.want)
			}
		}
	}
}
