package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/shard"
)

// pairsLog writes a stderr log of g producer/consumer pairs: producer i
// inserts into t<i>, consumer i reads and updates t<i> after it.
func pairsLog(t *testing.T, g int) string {
	t.Helper()
	var b strings.Builder
	ms := 0
	line := func(pid int, format string, args ...any) {
		ms++
		fmt.Fprintf(&b, "2024-05-01 10:00:%02d.%03d UTC [%d] app@shop/psql 6631f000.%x LOG:  %s\n", ms/1000, ms%1000, pid, pid, fmt.Sprintf(format, args...))
	}
	for i := range g {
		line(100+i, "connection authorized: user=app database=shop application_name=psql")
		line(200+i, "connection authorized: user=app database=shop application_name=psql")
	}
	for r := range 5 {
		for i := range g {
			line(100+i, "duration: 0.500 ms  statement: INSERT INTO t%d VALUES (%d)", i, r)
			line(200+i, "duration: 0.300 ms  statement: UPDATE t%d SET done = true WHERE id = %d", i, r)
		}
	}
	return writeFile(t, filepath.Join(t.TempDir(), "pairs.log"), []byte(b.String()))
}

func TestShardPlanCommand(t *testing.T) {
	ctx := context.Background()
	log := pairsLog(t, 4)
	out := filepath.Join(t.TempDir(), "plan.json")
	code, _, stderr := runCLI(ctx, "", "plan", "--shards", "2", "--out", out, log)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	p := readPlan(t, out)
	for i := range 4 {
		prod, cons := fmt.Sprintf("6631f000.%x", 100+i), fmt.Sprintf("6631f000.%x", 200+i)
		if p.ShardOf(prod) != p.ShardOf(cons) {
			t.Errorf("pair %d split across shards", i)
		}
	}
	if p.Dependencies.Total == 0 || p.Dependencies.Cross != 0 {
		t.Errorf("dependencies %+v: want some, none across", p.Dependencies)
	}
	if !strings.Contains(stderr, "cross shards") || !strings.Contains(stderr, p.ID) {
		t.Errorf("summary lacks the plan id or the cross-shard share:\n%s", stderr)
	}
	if len(p.Input.Files) != 1 || p.Input.Files[0].Hash == "" {
		t.Errorf("input not described: %+v", p.Input)
	}

	// Forced: producers in 0, consumers in 1.
	args := []string{"plan", "--shards", "2", "--out", out}
	for i := range 4 {
		args = append(args, "--force", fmt.Sprintf("6631f000.%x=0", 100+i), "--force", fmt.Sprintf("6631f000.%x=1", 200+i))
	}
	args = append(args, "--force", "nosuch=1", log)
	code, _, stderr = runCLI(ctx, "", args...)
	if code != ExitOK {
		t.Fatalf("forced: exit %d: %s", code, stderr)
	}
	p = readPlan(t, out)
	if p.Forced != 8 || p.Dependencies.CrossShare != 1 {
		t.Errorf("forced plan: %d forced, cross share %.2f; want 8 and 1", p.Forced, p.Dependencies.CrossShare)
	}
	if !strings.Contains(stderr, `no session "nosuch"`) {
		t.Errorf("a forced session absent from the log is not warned about:\n%s", stderr)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"plan", "--out", out, log}, "--shards N is required"},
		{[]string{"plan", "--shards", "2", log}, "--out FILE is required"},
		{[]string{"plan", "--shards", "2", "--out", out, "--force", "x", log}, "SESSION=K"},
		{[]string{"plan", "--shards", "2", "--out", out, "--force", "x=2", log}, "numbered from 0 to 1"},
		{[]string{"plan", "--shards", "2", "--out", filepath.Join(t.TempDir(), "no", "dir", "p.json"), log}, "does not exist; nothing was done"},
	} {
		code, _, stderr := runCLI(ctx, "", c.args...)
		if code == ExitOK || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, want a failure saying %q:\n%s", c.args, code, c.want, stderr)
		}
	}
}

func readPlan(t testing.TB, path string) *shard.Plan {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := shard.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
