package fingerprint

import (
	"reflect"
	"testing"

	pg_query "github.com/pganalyze/pg_query_go/v6"
)

// TestAdvisoryCalls: each advisory-lock function is read with its
// operation, shared and transaction forms, and its key as the $n of the
// normalized statement (constants and bind parameters alike, under
// casts); a key from a column or an expression is not known (nil), and
// other functions are not advisory calls.
func TestAdvisoryCalls(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		want []Advisory
	}{
		{"SELECT pg_advisory_lock(42)", []Advisory{{Op: AdvisoryLock, Key: []KeyArg{{Param: 1}}}}},
		{"SELECT pg_catalog.pg_advisory_lock($1::bigint)", []Advisory{{Op: AdvisoryLock, Key: []KeyArg{{Param: 1}}}}},
		{"SELECT pg_advisory_xact_lock_shared(1, 2)", []Advisory{{Op: AdvisoryLock, Shared: true, Xact: true, Key: []KeyArg{{Param: 1}, {Param: 2}}}}},
		{"SELECT pg_try_advisory_lock(-7)", []Advisory{{Op: AdvisoryTry, Key: []KeyArg{{Param: 1}}}}},
		{"SELECT pg_try_advisory_xact_lock($1)", []Advisory{{Op: AdvisoryTry, Xact: true, Key: []KeyArg{{Param: 1}}}}},
		{"SELECT pg_advisory_unlock_shared(5), pg_advisory_unlock(6)", []Advisory{
			{Op: AdvisoryUnlock, Shared: true, Key: []KeyArg{{Param: 1}}}, {Op: AdvisoryUnlock, Key: []KeyArg{{Param: 2}}}}},
		{"SELECT pg_advisory_unlock_all()", []Advisory{{Op: AdvisoryUnlockAll}}},
		{"SELECT pg_advisory_lock(hashtext('jobs'))", []Advisory{{Op: AdvisoryLock}}},
		{"SELECT pg_try_advisory_lock(id) FROM jobs", []Advisory{{Op: AdvisoryTry}}},
		{"SELECT other.pg_advisory_lock(1)", nil},
		{"SELECT lower('x')", nil},
	} {
		items := Compute(tc.sql)
		if len(items) != 1 {
			t.Fatalf("%s: %d items", tc.sql, len(items))
		}
		if got := items[0].Class(tc.sql).Advisory; !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.sql, got, tc.want)
		}
	}
	// Parsed from its logged text (the normalized one does not parse),
	// an integer constant is the key itself.
	if a, ok := advisoryOf(mustFunc(t, "SELECT pg_advisory_lock(9)")); !ok || !reflect.DeepEqual(a.Key, []KeyArg{{Value: 9, Const: true}}) {
		t.Errorf("constant key: %+v %v", a, ok)
	}
}

func mustFunc(t *testing.T, sql string) *pg_query.FuncCall {
	t.Helper()
	res, err := pg_query.Parse(sql)
	if err != nil {
		t.Fatal(err)
	}
	return res.Stmts[0].Stmt.GetSelectStmt().TargetList[0].GetResTarget().Val.GetFuncCall()
}

// TestNotification: LISTEN, UNLISTEN and NOTIFY name their channel; a
// pg_notify call notifies a channel the text does not give.
func TestNotification(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		want *Notification
	}{
		{"LISTEN jobs", &Notification{Op: Listen, Channel: "jobs"}},
		{"UNLISTEN jobs", &Notification{Op: Unlisten, Channel: "jobs"}},
		{"UNLISTEN *", &Notification{Op: Unlisten}},
		{"NOTIFY jobs, 'payload'", &Notification{Op: Notify, Channel: "jobs"}},
		{"SELECT pg_notify('jobs', 'x')", &Notification{Op: Notify}},
		{"SELECT 1", nil},
	} {
		if got := Compute(tc.sql)[0].Class(tc.sql).Notification; !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.sql, got, tc.want)
		}
	}
}
