package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/fixes"
)

// TestWriteFixes: each verdict's words, the SQL applied, the regression
// with and without the fix, the costs and the writes said beyond noise
// or not; nothing at all when no fix was tried.
func TestWriteFixes(t *testing.T) {
	var empty bytes.Buffer
	if err := WriteFixes(&empty, nil); err != nil || empty.Len() != 0 {
		t.Errorf("no fix: %q, %v", empty.String(), err)
	}
	tried := triedFixes()
	var b bytes.Buffer
	if err := WriteFixes(&b, tried); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"index-customers_email_idx: fix verified (2 rounds): within the control's noise",
		"applied: CREATE INDEX customers_email_idx ON public.customers USING btree (email)",
		"SELECT id FROM customers WHERE email = $1: ~ 1.020x (0.90-1.20) against the control with the fix (40.00x (30.00-55.00) without); +0.000 ms per run added with it, +5.20 s without",
		"regressed with the fix only: UPDATE customers SET email = $1 WHERE id = $2: slower, 1.40x +30.0 ms per run",
		"writes customers: INSERT INTO customers VALUES ($1, $2): mean 1.30x (1.20-1.50) against the candidate without the fix, +0.020 ms per call, slower beyond noise",
		"setting-random_page_cost: fix partial: 62% of the regression recovered (2 rounds); another cause remains",
		`index-customers_key: not tried: the server refused it: ERROR: could not create unique index "customers_key" (SQLSTATE 23505)`,
		"  not applied: CREATE UNIQUE INDEX customers_key ON customers (name)",
		"setting-shared_buffers: not tried: it needs a restart of the server\n    not applied: ALTER SYSTEM SET \"shared_buffers\" = '1GB'",
		"analyze-orders: no effect (2 rounds)",
		"no query of the traffic writes orders: what the fix costs its writes is not measured here",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Count(b.String(), "no other query regressed with the fix") != 2 {
		t.Errorf("the fixes without costs are not said so:\n%s", b.String())
	}
}

// triedFixes are one fix of each verdict: verified (with a cost and a
// write slower beyond noise), partial, refused by the server, not
// tried (a restart), and no effect (its relation not written).
func triedFixes() []fixes.Outcome {
	idx := fixes.Fix{Name: "index-customers_email_idx", Kind: fixes.CreateIndex, SQL: "CREATE INDEX customers_email_idx ON public.customers USING btree (email)", Relation: "customers"}
	with := &compare.Effect{Ratio: 1.02, Low: 0.9, High: 1.2, Change: compare.ChangeNone}
	before := &compare.Effect{Ratio: 40, Low: 30, High: 55, Change: compare.ChangeSlower}
	return []fixes.Outcome{
		{Fix: idx, Status: fixes.Verified, Rounds: 2, RecoveredPct: 100,
			Queries: []fixes.Query{{Fingerprint: "1a2b3c4d5e6f7081", Query: "SELECT id FROM customers WHERE email = $1", Status: fixes.Verified, Metric: compare.MetricMean, With: with, Before: before, AddedMSBefore: 5200}},
			Costs:   []fixes.Cost{{Query: "UPDATE customers SET email = $1 WHERE id = $2", Status: compare.StatusRegressed, Factor: 1.4, AddedMS: 30}},
			Writes: []fixes.Write{{Query: "INSERT INTO customers VALUES ($1, $2)", Status: compare.StatusRegressed, Beyond: true,
				Mean: &compare.Effect{Ratio: 1.3, Low: 1.2, High: 1.5, Change: compare.ChangeSlower, DeltaMS: 0.02}}}},
		{Fix: fixes.Fix{Name: "setting-random_page_cost", Kind: fixes.SetDatabase, SQL: `ALTER DATABASE "shop" SET "random_page_cost" = '4'`},
			Status: fixes.Partial, Rounds: 2, RecoveredPct: 62.4,
			Queries: []fixes.Query{{Fingerprint: "9f8e7d6c5b4a3921", Query: "SELECT * FROM orders WHERE customer_id = $1", Status: fixes.Partial, Metric: compare.MetricP95,
				With:   &compare.Effect{Ratio: 3.1, Low: 2.6, High: 3.7, Change: compare.ChangeSlower},
				Before: &compare.Effect{Ratio: 8.2, Low: 7.1, High: 9.5, Change: compare.ChangeSlower}, AddedMSBefore: 900, AddedMSWith: 338, RecoveredPct: 62.4}}},
		{Fix: fixes.Fix{Name: "index-customers_key", SQL: "CREATE UNIQUE INDEX customers_key ON customers (name)", Relation: "customers"},
			Status: fixes.NotTried, NotApplied: "ERROR: could not create unique index \"customers_key\" (SQLSTATE 23505)"},
		{Fix: fixes.Fix{Name: "setting-shared_buffers", Kind: fixes.SetServer, SQL: `ALTER SYSTEM SET "shared_buffers" = '1GB'`, Untried: "it needs a restart of the server"},
			Status: fixes.NotTried},
		{Fix: fixes.Fix{Name: "analyze-orders", SQL: `ANALYZE "orders"`, Relation: "orders"}, Status: fixes.NoEffect, Rounds: 2},
	}
}
