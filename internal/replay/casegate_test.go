package replay

import (
	"os"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/testgate"
)

// cases runs the package's functional cases (functionalCase, slowCase)
// as many at a time as -parallel says, the longest first
// (internal/testgate): in a quiet run before the gate, TestSyncOrders
// (34 s) and TestEngineFaults (31 s) started last and ended the package
// at 99 s, 43 s after its sequential tests (issue 44: make test within
// 15 minutes).
var cases testgate.Gate

func TestMain(m *testing.M) {
	cases.Init()
	os.Exit(m.Run())
}

// slowCase is functionalCase for a case that takes about took on a quiet
// machine, among the longest of the package: the cases start longest
// first, so that none of them starts last and runs alone at the end.
func slowCase(t *testing.T, took time.Duration) {
	t.Helper()
	cases.Enter(t, took)
}
