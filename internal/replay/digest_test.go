package replay

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/querystats"
	"github.com/pgrehearse/pgrehearse/internal/rowdigest"
)

// TestValuesDiffer: the target's rows, digested as pgconn decoded them,
// compare with the original's digest: in order for a statement that
// sorts, in any order otherwise; a statement without a recorded digest
// (a capture from before) or without the target's is not compared; an
// execution without digests to compare keeps none; the target's rows are
// digested in the version of the recorded digests (a capture's of V1 in
// V1, one's of V2 with rows over 64 bytes in V2: the current version's
// differ from both).
func TestValuesDiffer(t *testing.T) {
	functionalCase(t)
	rows := [][][]byte{{[]byte("1"), []byte("a")}, {[]byte("2"), nil}}
	var orig, origV1 rowdigest.Digest
	for _, r := range rows {
		orig.Add(rowdigest.Values(nil, r))
		origV1.AddVersion(rowdigest.V1, rowdigest.Values(nil, r))
	}
	ansV1 := &event.Answer{Rows: []int64{2}, Digests: []rowdigest.Digest{origV1}, DigestVersion: rowdigest.V1}
	// Rows over 64 bytes, which V2 and the current version hash apart.
	long := [][][]byte{{[]byte("1"), []byte(strings.Repeat("a", 100))}, {[]byte("2"), []byte(strings.Repeat("b", 200))}}
	var origV2 rowdigest.Digest
	for _, r := range long {
		origV2.AddVersion(rowdigest.V2, rowdigest.Values(nil, r))
	}
	ansV2 := &event.Answer{Rows: []int64{2}, Digests: []rowdigest.Digest{origV2}, DigestVersion: rowdigest.V2}
	var cur rowdigest.Digest
	for _, r := range long {
		cur.Add(rowdigest.Values(nil, r))
	}
	digestIn := func(a *event.Answer, rows [][][]byte, order ...int) []rowdigest.Digest {
		var d rowDigests
		ev := &event.Event{}
		ev.SetAnswer(a)
		d.start(ev)
		for _, i := range order {
			d.row(&pgproto3.DataRow{Values: rows[i]})
		}
		d.completed()
		return d.done
	}
	digestV1 := func(order ...int) []rowdigest.Digest { return digestIn(ansV1, rows, order...) }
	digest := func(on bool, order ...int) []rowdigest.Digest {
		var d rowDigests
		d.start(&event.Event{})
		d.on = on
		for _, i := range order {
			d.row(&pgproto3.DataRow{Values: rows[i]})
		}
		d.completed()
		return d.done
	}
	ans := &event.Answer{Rows: []int64{2}, Digests: []rowdigest.Digest{orig}}
	sorted := "SELECT a, b FROM t ORDER BY a"
	plain := "SELECT a, b FROM t"
	for _, c := range []struct {
		name  string
		ans   *event.Answer
		got   []rowdigest.Digest
		query string
		want  bool
	}{
		{"same order, sorted", ans, digest(true, 0, 1), sorted, false},
		{"other order, sorted", ans, digest(true, 1, 0), sorted, true},
		{"other order, not sorted", ans, digest(true, 1, 0), plain, false},
		{"a row missing", ans, digest(true, 0), plain, true},
		{"no recorded digest", &event.Answer{Rows: []int64{2}}, digest(true, 1), plain, false},
		{"not digested", ans, digest(false, 1), plain, false},
		{"V1, same order, sorted", ansV1, digestV1(0, 1), sorted, false},
		{"V1, other order, not sorted", ansV1, digestV1(1, 0), plain, false},
		{"V1, other order, sorted", ansV1, digestV1(1, 0), sorted, true},
		{"V1 against the current version", ansV1, digest(true, 0, 1), plain, true},
		{"V2, long rows, same order, sorted", ansV2, digestIn(ansV2, long, 0, 1), sorted, false},
		{"V2, long rows, other order, not sorted", ansV2, digestIn(ansV2, long, 1, 0), plain, false},
		{"V2 against the current version, long rows", ansV2, []rowdigest.Digest{cur}, plain, true},
	} {
		it := fingerprint.Compute(c.query)[0]
		if got := valuesDiffer(c.ans, c.got, 0, it, c.query); got != c.want {
			t.Errorf("%s: values differ %v, want %v", c.name, got, c.want)
		}
	}
}

// TestAnswerCause: a differing count or values is explained by a
// volatile function or a server-assigned id in the statement, different
// values by a sequence-filled column an INSERT returns; an error never
// is, nor a statement without either.
func TestAnswerCause(t *testing.T) {
	functionalCase(t)
	for _, c := range []struct {
		query string
		diff  querystats.AnswerDiff
		want  querystats.AnswerCause
		what  string
	}{
		{"SELECT now()", querystats.AnswerValues, querystats.CauseVolatile, "now()"},
		{"DELETE FROM t WHERE at < now() - interval '1 day'", querystats.AnswerRows, querystats.CauseVolatile, "now()"},
		{"SELECT oid FROM pg_class WHERE relname = 't'", querystats.AnswerValues, querystats.CauseServerState, "oid"},
		{"SELECT now()", querystats.AnswerErrorOnlyOnTarget, "", ""},
		{"SELECT a FROM t", querystats.AnswerValues, "", ""},
		{"INSERT INTO orders (customer) VALUES ($1) RETURNING id", querystats.AnswerValues, querystats.CauseSequence, "orders.id"},
		{"INSERT INTO app.orders (customer) VALUES ($1) RETURNING *", querystats.AnswerValues, querystats.CauseSequence, "orders.id"},
		{"INSERT INTO items (name) VALUES ($1) RETURNING item_no", querystats.AnswerValues, querystats.CauseSequence, "items.item_no"},
		// A count that differs is not the sequence's doing, nor an
		// error; nor an id the statement gives, another column, a
		// table without a sequence, one the catalog does not know
		// (other.orders is not visible) or an UPDATE.
		{"INSERT INTO orders (customer) SELECT c FROM staged RETURNING id", querystats.AnswerRows, "", ""},
		{"INSERT INTO orders (customer) VALUES ($1) RETURNING id", querystats.AnswerErrorOnlyOnTarget, "", ""},
		{"INSERT INTO orders (id, customer) VALUES ($1, $2) RETURNING id", querystats.AnswerValues, "", ""},
		{"INSERT INTO orders (customer) VALUES ($1) RETURNING customer", querystats.AnswerValues, "", ""},
		{"INSERT INTO plain (a) VALUES ($1) RETURNING a", querystats.AnswerValues, "", ""},
		{"INSERT INTO other.orders (customer) VALUES ($1) RETURNING id", querystats.AnswerValues, "", ""},
		{"UPDATE orders SET customer = $1 RETURNING id", querystats.AnswerValues, "", ""},
	} {
		seqs := seqColumns{{Schema: "app", Name: "orders"}: {"id"}, {Name: "orders"}: {"id"}, {Name: "items"}: {"item_no"}}
		cause, what := answerCause(c.diff, fingerprint.Compute(c.query)[0], c.query, seqs)
		if cause != c.want || what != c.what {
			t.Errorf("%s, %v: %q %q, want %q %q", c.query, c.diff, cause, what, c.want, c.what)
		}
	}
}
