package replay

import (
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/querystats"
	"github.com/pgrehearse/pgrehearse/internal/syncdep"
)

// TestSessionStateDependent: "session state from before the recording"
// explains only a statement that could depend on such state (issue 59
// item 3): a cursor, a prepared statement, a sequence's currval, an
// advisory lock, a setting, a table the catalog does not know (a
// temporary one), an error such state explains; never a statement on
// ordinary tables only.
func TestSessionStateDependent(t *testing.T) {
	cache := fingerprint.NewCache(0)
	orders := []string{"public.orders"}
	for _, c := range []struct {
		sql     string
		tables  []string
		unknown bool
		code    string
		want    bool
	}{
		{"SELECT * FROM orders WHERE id = 1", orders, false, "", false},
		{"UPDATE orders SET n = n + 1 WHERE id = 1", orders, false, "", false},
		{"SELECT count(*) FROM orders", orders, false, "", false},
		{"SELECT * FROM scratch", []string{"scratch" + syncdep.NotInCatalog}, true, "", true},
		{"SELECT * FROM orders", orders, false, "42P01", true},
		{"FETCH 10 FROM held", nil, false, "", true},
		{"EXECUTE lookup(1)", orders, false, "", true},
		{"SELECT currval('orders_id_seq') FROM orders LIMIT 1", orders, false, "", true},
		{"SELECT pg_try_advisory_lock(7), n FROM orders", orders, false, "", true},
		{"SELECT current_setting('app.user'), n FROM orders", orders, false, "", true},
		{"SHOW search_path", nil, false, "", true},
	} {
		items := cache.Get(c.sql)
		if len(items) != 1 {
			t.Fatalf("%s: %d statements", c.sql, len(items))
		}
		if got := sessionStateDependent(items[0].Class(c.sql), items[0].Query, c.tables, c.unknown, c.code); got != c.want {
			t.Errorf("%s (tables %v, error %q): %v, want %v", c.sql, c.tables, c.code, got, c.want)
		}
	}
}

// TestDataDiffers: a differing answer nothing else explains is the
// target's data only where no other order could cause it (issue 59 item
// 3): a row count, values, a table missing; not a duplicate key, a
// foreign key or an aborted block, nor after a sync wait gave up or a
// commit it waited for was lost.
func TestDataDiffers(t *testing.T) {
	for _, c := range []struct {
		d    querystats.AnswerDiff
		sy   synced
		code string
		want bool
	}{
		{querystats.AnswerRows, synced{}, "", true},
		{querystats.AnswerValues, synced{}, "", true},
		{querystats.AnswerErrorOnlyOnTarget, synced{}, "42P01", true},
		{querystats.AnswerErrorOnlyOnTarget, synced{}, "23505", false},
		{querystats.AnswerErrorOnlyOnTarget, synced{}, "23503", false},
		{querystats.AnswerErrorOnlyOnTarget, synced{}, "25P02", false},
		{querystats.AnswerErrorOnlyInOriginal, synced{}, "", false},
		{querystats.AnswerOtherSQLState, synced{}, "42703", false},
		{querystats.AnswerRows, synced{giveUp: "timeout"}, "", false},
		{querystats.AnswerValues, synced{lostDep: true}, "", false},
	} {
		if got := dataDiffers(c.d, c.sy, targetError{code: c.code}); got != c.want {
			t.Errorf("%v (sync %+v, error %q): %v, want %v", c.d, c.sy, c.code, got, c.want)
		}
	}
}
