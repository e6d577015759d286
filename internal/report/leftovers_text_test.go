package report

import (
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/results"
)

// TestWriteLeftovers: prepared transactions are named with what became
// of them (left holding their locks, rolled back, or a rollback that
// failed, with why), advisory locks with their key and session; nothing
// left writes nothing.
func TestWriteLeftovers(t *testing.T) {
	p := func(gid string, c results.LeftoverCleanup, e string) results.LeftoverPrepared {
		return results.LeftoverPrepared{Gid: gid, Database: "shop", Owner: "app", Reason: results.LeftoverStillPrepared, Cleanup: c, CleanupError: e}
	}
	for _, tc := range []struct {
		l    *results.Leftovers
		want []string
	}{
		{nil, nil},
		{&results.Leftovers{Prepared: []results.LeftoverPrepared{p("g'1", "", "")}}, []string{
			"  left:       1 transaction the replay prepared was still prepared on the target at its end: 'g''1' (database shop, owner app)\n",
			"    they hold their locks until COMMIT PREPARED or ROLLBACK PREPARED runs in their database\n"}},
		{&results.Leftovers{Prepared: []results.LeftoverPrepared{p("a", results.LeftoverRolledBack, ""), p("b", results.LeftoverCleanupFailed, "permission denied")}}, []string{
			"2 transactions the replay prepared were still prepared", "    1 rolled back at the end, as asked; 1 could not be: permission denied\n"}},
		{&results.Leftovers{AdvisoryLocks: []results.LeftoverAdvisory{{Session: "s1", Database: "shop", Key: "1,2", Mode: "ShareLock"}}}, []string{
			"  left:       1 advisory lock held by sessions of the replay as they ended (their end released it): key 1,2 (ShareLock) in shop, session s1\n"}},
	} {
		var b strings.Builder
		writeLeftovers(&b, tc.l)
		if tc.want == nil && b.Len() > 0 {
			t.Errorf("nothing left wrote %q", b.String())
		}
		for _, w := range tc.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%+v: %q lacks %q", tc.l, b.String(), w)
			}
		}
	}
}
