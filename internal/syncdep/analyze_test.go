package syncdep

import (
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
)

// TestEffectNormalized: the tracker reads each statement's Class from its
// normalized text (constants as $n); where the parser refuses it (SET
// TRANSACTION ISOLATION LEVEL $1), from the logged text, so that such a
// statement is not taken for one of unknown effect (which would wait for
// everything, as in commit mode).
func TestEffectNormalized(t *testing.T) {
	for _, sql := range []string{
		"SET TRANSACTION ISOLATION LEVEL SERIALIZABLE",
		"SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL SERIALIZABLE",
		"SET application_name = 'x'",
	} {
		items := fingerprint.Compute(sql)
		if len(items) != 1 {
			t.Fatalf("%s: %d items", sql, len(items))
		}
		tr := NewTracker(Object)
		tr.SetCatalog("db", &Catalog{})
		if e := tr.effectOf(tr.dbs["db"], &Exec{Items: items, Text: sql}, 0); e.readAll || e.writeAll || !e.empty() {
			t.Errorf("%s: effect %+v, want none", sql, e)
		}
	}
}
