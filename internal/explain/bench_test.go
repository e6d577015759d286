package explain

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
)

// benchStatements are 100 fingerprints over the shop: ten select lists
// by ten predicates, each with the value of one execution.
func benchStatements() []Statement {
	cols := []string{"id", "name", "email", "id, name", "id, email", "name, email", "id, name, email", "count(*)", "max(id)", "min(name)"}
	preds := []struct{ where, value string }{
		{"email = $1", "user5@example.com"},
		{"name = $1", "Customer 5"},
		{"id = $1", "5"},
		{"id < $1", "100"},
		{"email LIKE $1", "user5%"},
		{"id >= $1 AND id < $1 + 100", "5"},
		{"email = $1 OR name = $1", "user5@example.com"},
		{"lower(email) = $1", "user5@example.com"},
		{"id IN (SELECT customer_id FROM orders WHERE id = $1)", "5"},
		{"EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = customers.id AND o.total > $1)", "498"},
	}
	var out []Statement
	for i, c := range cols {
		for j, p := range preds {
			q := "SELECT " + c + " FROM customers WHERE " + p.where
			v := p.value
			out = append(out, Statement{Fingerprint: fmt.Sprintf("q%02d%02d", i, j), Database: "postgres", Query: q,
				Samples: []Sample{{Role: SampleSlowest, Query: q, Params: []*string{&v}}}})
		}
	}
	return out
}

// BenchmarkExplain100 times explaining 100 regressed fingerprints on both
// servers (the candidate lacks the email index): generic plans, custom
// plans analyzed (each statement run twice per server), and, as the
// baseline of the same run, executing the 100 statements once on each
// server. Run it under flock /tmp/timing.lock.
func BenchmarkExplain100(b *testing.B) {
	p := startPairB(b)
	stmts := benchStatements()
	generic := make([]Statement, len(stmts))
	for i, s := range stmts {
		s.Samples = nil
		generic[i] = s
	}
	ctx := context.Background()
	opts := Options{ControlDSN: p.ctl.DSN("postgres"), CandidateDSN: p.cand.DSN("postgres")}
	b.Run("generic", func(b *testing.B) {
		for b.Loop() {
			rep, err := Run(ctx, generic, opts)
			if err != nil || countVerdict(rep, PlanChanged) < 10 {
				b.Fatalf("%v: %d changed", err, countVerdict(rep, PlanChanged))
			}
		}
	})
	b.Run("analyzed", func(b *testing.B) {
		o := opts
		o.Analyze = true
		for b.Loop() {
			rep, err := Run(ctx, stmts, o)
			if err != nil || countVerdict(rep, PlanChanged) < 10 {
				b.Fatalf("%v: %d changed", err, countVerdict(rep, PlanChanged))
			}
		}
	})
	b.Run("execute-baseline", func(b *testing.B) {
		for b.Loop() {
			for _, dsn := range []string{opts.ControlDSN, opts.CandidateDSN} {
				conn, err := pgx.Connect(ctx, dsn)
				if err != nil {
					b.Fatal(err)
				}
				for _, s := range stmts {
					rows, err := conn.Query(ctx, s.Query, *s.Samples[0].Params[0])
					if err != nil {
						b.Fatal(err)
					}
					rows.Close()
					if rows.Err() != nil {
						b.Fatal(rows.Err())
					}
				}
				conn.Close(ctx)
			}
		}
	})
}

func countVerdict(rep *Report, v Verdict) int {
	n := 0
	if rep == nil {
		return 0
	}
	for _, o := range rep.Outcomes {
		if o.Verdict == v {
			n++
		}
	}
	return n
}
