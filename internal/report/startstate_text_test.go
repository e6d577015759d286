package report

import (
	"testing"

	capfile "github.com/pgrehearse/pgrehearse/internal/capture"
	"github.com/pgrehearse/pgrehearse/internal/catalog"
)

// TestStartCheckSaid: the pre-flight names the tables the start counted
// but the target did not, and says how each table's rows were read.
func TestStartCheckSaid(t *testing.T) {
	c := &catalog.StartCheck{Databases: []catalog.StartDatabaseCheck{{Name: "shop", Target: "shop", Uncounted: []catalog.TableDiff{
		{Schema: "public", Name: "orders", StartFrom: capfile.RowsCounted, TargetFrom: capfile.RowsReltuples, CountError: "canceling statement due to statement timeout"},
	}}}}
	if got, want := startUncounted(c), "1 tables counted at the start not counted on the target, their estimates compared: orders (canceling statement due to statement timeout)"; got != want {
		t.Errorf("uncounted %q, want %q", got, want)
	}
	for d, want := range map[catalog.TableDiff]string{
		{StartFrom: capfile.RowsCounted, TargetFrom: capfile.RowsCounted}:              "both counted",
		{StartFrom: capfile.RowsCounted, TargetFrom: capfile.RowsCounted, Drift: 1200}: "both counted; 1,200 rows written while the start counted",
		{StartFrom: capfile.RowsCounted, TargetFrom: capfile.RowsReltuples}:            "counted at the start, estimated on the target",
		{StartFrom: capfile.RowsReltuples, TargetFrom: capfile.RowsCounted}:            "estimated at the start, counted on the target",
		{StartFrom: capfile.RowsLiveTuples, TargetFrom: capfile.RowsReltuples}:         "both estimated",
	} {
		if got := rowsHow(d); got != want {
			t.Errorf("rowsHow(%+v) = %q, want %q", d, got, want)
		}
	}
}

// TestStartCountsSaid: the capture's summary says how many tables were
// counted and estimated, and names the counts skipped (the pre-flight's
// side is TestStartCheckSaid).
func TestStartCountsSaid(t *testing.T) {
	st := &capfile.StartState{CountBelow: 1 << 30, Databases: []capfile.StartDatabase{{Name: "shop", Tables: []capfile.StartTable{
		{Schema: "public", Name: "orders", Rows: 10, RowsFrom: capfile.RowsCounted},
		{Schema: "public", Name: "events", Rows: 9e7, RowsFrom: capfile.RowsReltuples, Bytes: 2 << 30},
		{Schema: "public", Name: "audit", Rows: 5, RowsFrom: capfile.RowsReltuples, CountError: "canceling statement due to statement timeout"},
	}}}}
	if got, want := startCounts(st), "; rows counted in 1 (up to 1.0 GiB), estimated in 2; 1 counts skipped: shop.public.audit (canceling statement due to statement timeout)"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
	if got := startCounts(&capfile.StartState{Databases: st.Databases}); got != "; rows estimated" {
		t.Errorf("summary of a start that counted nothing: %q", got)
	}
}
