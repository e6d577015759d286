package main

import (
	"bufio"
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// TestStatementLatencies reads pgbench -r's report of the hot-row
// application (testdata/pgbench-r.txt, a real one): each statement's
// latency, matched to its kind by its text, counted once a transaction
// of its script; BEGIN, COMMIT, \set and \sleep are not the
// application's queries.
func TestStatementLatencies(t *testing.T) {
	out, err := os.ReadFile(filepath.Join("testdata", "pgbench-r.txt"))
	if err != nil {
		t.Fatal(err)
	}
	app, txs, err := statementLatencies(hotrow, out)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		kind string
		ms   float64
		n    int64
	}{
		{"hot lock", 1.335, 1282},
		{"hot update", 0.522, 1282},
		{"history insert", 0.248, 1282},
		{"balance read", 0.410, 1961},
	} {
		if math.Abs(app[c.kind]-c.ms) > 1e-9 || txs[c.kind] != c.n {
			t.Errorf("%s: %v ms over %d, want %v over %d", c.kind, app[c.kind], txs[c.kind], c.ms, c.n)
		}
	}
	if len(app) != 4 {
		t.Errorf("kinds read: %v, want the 4 of hotrow", app)
	}
	if _, _, err := statementLatencies(hotrow, []byte("number of transactions actually processed: 10\n")); err == nil {
		t.Error("a report without statement latencies was read without error")
	}
}

// TestConnectionTime reads pgbench -C's average connection time.
func TestConnectionTime(t *testing.T) {
	ms, err := connectionTime([]byte("latency average = 19.1 ms\naverage connection time = 16.237 ms\ntps = 66.2 (including reconnection times)\n"))
	if err != nil || ms != 16.237 {
		t.Errorf("connectionTime = %v, %v; want 16.237", ms, err)
	}
	if _, err := connectionTime([]byte("latency average = 19.1 ms\n")); err == nil {
		t.Error("a report without a connection time was read without error")
	}
}

// TestZooKinds checks that every application's queries are told apart by
// their text as pg_stat_statements normalizes it: the hot row's lock is
// not taken for its plain read, nor its update for the lock.
func TestZooKinds(t *testing.T) {
	for _, c := range []struct {
		app  *application
		sql  string
		want string
	}{
		{hotrow, "SELECT balance FROM accounts WHERE id = $1 FOR UPDATE", "hot lock"},
		{hotrow, "SELECT balance FROM accounts WHERE id = $1", "balance read"},
		{hotrow, "UPDATE accounts SET balance = balance + $1, updated_at = now() WHERE id = $2", "hot update"},
		{hotrow, "INSERT INTO account_history (account_id, delta, at) VALUES ($1, $2, now())", "history insert"},
		{hotrow, "COMMIT", ""},
		{hotcpu, "SELECT sum(balance) FROM accounts WHERE id BETWEEN $1 AND $2 + $3", "range read"},
		{hotcpu, "SELECT balance FROM accounts WHERE id = $1 FOR UPDATE", "hot lock"},
		{hotcpu, "SELECT balance FROM accounts WHERE id = $1", "balance read"},
		{hotrow, "SELECT sum(balance) FROM accounts WHERE id BETWEEN $1 AND $2 + $3", ""},
		{newPercall(1), "SELECT id, name FROM customers WHERE email = $1 || $2 || $3", "lookup by email"},
	} {
		got := ""
		if k := c.app.kindOf(c.sql); k >= 0 {
			got = c.app.kinds[k].name
		}
		if got != c.want {
			t.Errorf("%s: %q is %q, want %q", c.app.name, c.sql, got, c.want)
		}
	}
	// One script a kind for the shop; hotrow's are its transactions.
	if n := len(shop.scripts()); n != len(shop.kinds) || shop.perStatement() {
		t.Errorf("shop: %d scripts for %d kinds", n, len(shop.kinds))
	}
	if !hotrow.perStatement() || len(hotrow.scripts()) != 2 {
		t.Errorf("hotrow: %d scripts, per statement %v", len(hotrow.scripts()), hotrow.perStatement())
	}
	// hotcpu's transfer reads its range with the row's lock held, before
	// the think; hotrow's transfer stays without it.
	lock, rng, think := "FOR UPDATE;", "SELECT sum(balance)", `\sleep`
	if tr := hotcpu.scripts()[0].script; !(strings.Index(tr, lock) < strings.Index(tr, rng) && strings.Index(tr, rng) < strings.Index(tr, think)) {
		t.Errorf("hotcpu's transfer does not read its range between the lock and the think:\n%s", tr)
	}
	if strings.Contains(hotrow.scripts()[0].script, rng) || len(hotrow.kinds) != 4 || hotrow.name != "hotrow" {
		t.Errorf("hotrow changed with hotcpu: %+v", hotrow)
	}
	if a := appNamed("percall", 4); a == nil || !strings.Contains(a.schema, "generate_series(1, 2400000)") || !a.perConnection {
		t.Errorf("percall at scale 4 lacks the shop's 2400000 orders or -C")
	}
	if _, err := parseApps("shop,nope", 1); err == nil {
		t.Error("an unknown application was accepted")
	}
	// -pool: --pool for the applications that keep their connections.
	for _, tc := range []struct {
		app  string
		pool bool
		want int
	}{{"shop", true, 1}, {"hotrow", true, 1}, {"percall", true, 0}, {"shop", false, 0}} {
		if got := (options{pool: tc.pool}).poolArgs(appNamed(tc.app, 1)); len(got) != tc.want || tc.want == 1 && got[0] != "--pool" {
			t.Errorf("%s, -pool %v: %q", tc.app, tc.pool, got)
		}
	}
}

// TestChangeApplies: a change of the data applies to the applications
// whose database it names; a change of settings or of the machine to
// every one.
func TestChangeApplies(t *testing.T) {
	byName := map[string]change{}
	for _, c := range changes {
		byName[c.name] = c
	}
	for _, c := range []struct {
		change string
		app    *application
		want   bool
	}{
		{"dropped-index", shop, true},
		{"dropped-index", hotrow, false},
		{"faster", newPercall(1), true},
		{"faster", hotrow, false},
		{"half-cpu", hotrow, true},
		{"mem-limit", shop, true},
		{"none", hotrow, true},
		{"update-trigger", hotrow, true},
		{"update-trigger", hotcpu, true},
		{"update-trigger", shop, false},
	} {
		if got := byName[c.change].appliesTo(c.app); got != c.want {
			t.Errorf("%s applies to %s: %v, want %v", c.change, c.app.name, got, c.want)
		}
	}
}

func TestCPUCount(t *testing.T) {
	for _, c := range []struct {
		list string
		want int
		bad  bool
	}{
		{"0", 1, false},
		{"0-1", 2, false},
		{"0,2-3", 3, false},
		{"3-1", 0, true},
		{"x", 0, true},
	} {
		got, err := cpuCount(c.list)
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("cpuCount(%q) = %d, %v; want %d (error %v)", c.list, got, err, c.want, c.bad)
		}
	}
	if n, err := cpuCount(""); err != nil || n < 1 {
		t.Errorf("cpuCount of every CPU = %d, %v", n, err)
	}
}

// TestOwnCgroupIn finds this process's path in a controller's v1
// hierarchy, where the controllers may share one (cpu,cpuacct).
func TestOwnCgroupIn(t *testing.T) {
	const lines = "4:memory:/process_api/abc\n2:cpu,cpuacct:/\n0::/\n"
	for _, c := range []struct{ controller, want string }{{"memory", "/process_api/abc"}, {"cpu", "/"}, {"cpuacct", "/"}} {
		got, err := ownCgroupIn(bufio.NewScanner(strings.NewReader(lines)), c.controller)
		if err != nil || got != c.want {
			t.Errorf("%s: %q, %v; want %q", c.controller, got, err, c.want)
		}
	}
	if _, err := ownCgroupIn(bufio.NewScanner(strings.NewReader(lines)), "cpuset"); err == nil {
		t.Error("a controller in no hierarchy was found")
	}
}

// TestUpgradeBinDir: the pg-upgrade change refuses an installation
// without pg_upgrade, such as make pg-versions' builds, saying what is
// missing.
func TestUpgradeBinDir(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"initdb", "pg_ctl", "postgres"} {
		if err := os.WriteFile(filepath.Join(dir, p), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := upgradeBinDir(dir); err == nil || !strings.Contains(err.Error(), "no pg_upgrade") {
		t.Errorf("upgradeBinDir of a server-only build: %v, want no pg_upgrade", err)
	}
	for _, p := range upgradePrograms {
		if err := os.WriteFile(filepath.Join(dir, p), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := upgradeBinDir(dir); err != nil || got != dir {
		t.Errorf("upgradeBinDir of a full installation: %q, %v", got, err)
	}
}

// TestRenderZoo renders a run kept in the zoo's layout (OUT/APP/CHANGE,
// testdata/README.md): each application's tables under its name, its
// queries found by its own texts (hotrow's lock apart from its read),
// and percall's connection setup as a row of the application level that
// no query of the report carries.
func TestRenderZoo(t *testing.T) {
	var out bytes.Buffer
	if err := renderDir(&out, filepath.Join("testdata", "zoo")); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(strings.Fields(out.String()), " ")
	for _, want := range []string{
		"hotrow: 8 clients (2 threads) at 1096 transactions/s for 3s, 2 truth rounds",
		"## half-cpu: the candidate's server runs under a CPU quota of half the control's CPUs",
		"server hot lock 0.65x (0.65x-0.65x) 1.17x (0.58x-2.36x) yes",
		"app hot update 1.07x (1.07x-1.07x) 1.57x (0.76x-3.23x) yes",
		"server balance read 1.00x (1.00x-1.00x) 1.33x (0.99x-1.77x) yes",
		"percall: 8 clients (2 threads) at 66 transactions/s for 3s",
		"app connection setup 0.69x (0.69x-0.69x) not in the report no",
		"summary: rows inside the interval 13 of 17",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the tables lack %q; they read:\n%s", want, got)
		}
	}
}

// TestRenderConnectionSetup: percall's connection setup row takes its
// forecast from the report's connection_setup (the rounds' connections
// to the target, compare.RowConnectionSetup) with its interval, beside
// pgbench -C's truth; a report from before it says "not in the report"
// (TestRenderZoo).
func TestRenderConnectionSetup(t *testing.T) {
	var out bytes.Buffer
	if err := renderDir(&out, filepath.Join("testdata", "setup")); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(strings.Fields(out.String()), " ")
	for _, want := range []string{
		"percall: 8 clients (2 threads) at 57 transactions/s for 3s",
		"app connection setup 1.00x (1.00x-1.00x) 1.36x (0.74x-2.50x) yes 0.31x-4.84x yes - 1.36 -0.039 / 9.688 unchanged not flagged",
		"app 4 of 5",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the table lacks %q; it reads:\n%s", want, got)
		}
	}
	if strings.Contains(got, "connection setup 1.00x (1.00x-1.00x) not in the report") {
		t.Errorf("the connection setup's forecast is not read from the report:\n%s", got)
	}
}

// TestCPUStat reads cgroup v1's cpu.stat as the kernel writes it
// (throttled_time in ns), and keeps nothing of a line it cannot read.
func TestCPUStat(t *testing.T) {
	st := cpuStat("nr_periods 31\nnr_throttled 30\nthrottled_time 1492804543\nnr_bursts 0\nbroken\nburst_time x\n")
	want := map[string]int64{"nr_periods": 31, "nr_throttled": 30, "throttled_time": 1492804543, "nr_bursts": 0}
	if len(st) != len(want) {
		t.Fatalf("cpuStat kept %v, want %v", st, want)
	}
	for k, v := range want {
		if st[k] != v {
			t.Errorf("%s = %d, want %d", k, st[k], v)
		}
	}
}

// TestRunPgrehearse runs a program the way rehearse and headroom are run:
// its output kept as NAME.out and NAME.err, and an exit code the caller
// does not take as an answer an error naming the stderr file.
func TestRunPgrehearse(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "fake")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho out; echo err >&2; exit \"$2\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	headroomAnswered := func(code int) bool { return code == 3 || code == 5 }
	for _, tc := range []struct {
		code    string
		want    int
		wantErr bool
	}{{"0", 0, false}, {"3", 3, false}, {"5", 5, false}, {"1", 1, true}, {"4", 4, true}} {
		cmd, code, err := runPgrehearse(context.Background(), bin, dir, "headroom", []string{"headroom", tc.code}, headroomAnswered)
		if code != tc.want || (err != nil) != tc.wantErr || len(cmd) != 3 || cmd[0] != bin {
			t.Errorf("exit %s: command %q, code %d, err %v; want code %d, error %v", tc.code, cmd, code, err, tc.want, tc.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), filepath.Join(dir, "headroom.err")) {
			t.Errorf("exit %s: %v does not name the stderr file", tc.code, err)
		}
	}
	for name, want := range map[string]string{"headroom.out": "out\n", "headroom.err": "err\n"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != want {
			t.Errorf("%s = %q (%v), want %q", name, b, err, want)
		}
	}
}

// TestHotcpuOnServer builds hotcpu's data with the update-trigger change
// on a real server and runs its transfer's statements: the range read
// sums hotRangeRows accounts, and the trigger stamps the clock's time
// over the statement's now() (the transaction's start).
func TestHotcpuOnServer(t *testing.T) {
	c := pgclustertest.StartT(t, pgcluster.Options{})
	ctx := context.Background()
	if err := setup(ctx, c, hotcpu, updateTrigger); err != nil {
		t.Fatal(err)
	}
	conn, err := pgconn.Connect(ctx, c.DSN(hotcpu.db))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	res, err := conn.Exec(ctx, `SELECT sum(balance) FROM accounts WHERE id BETWEEN 7 AND 7 + `+strconv.Itoa(hotRangeRows-1)+`;
BEGIN;
SELECT pg_sleep(0.01);
UPDATE accounts SET balance = balance + 5, updated_at = now() WHERE id = 3;
SELECT balance, updated_at > now() FROM accounts WHERE id = 3;
COMMIT`).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(res[0].Rows[0][0]), strconv.Itoa(hotRangeRows*1000); got != want {
		t.Errorf("the range read's sum = %s, want %s", got, want)
	}
	if row := res[4].Rows[0]; string(row[0]) != "1005" || string(row[1]) != "t" {
		t.Errorf("after the update: balance %s, stamped after the transaction's start %s; want 1005, t", row[0], row[1])
	}
}

// TestLimitMemory: the limit is written, and the peak and the hits are
// reset, so that bound() reports the limited server's and not the data's
// build before it (a plain directory stands for the cgroup's).
func TestLimitMemory(t *testing.T) {
	dir := t.TempDir()
	for f, v := range map[string]string{"memory.limit_in_bytes": "9223372036854771712", "memory.max_usage_in_bytes": "1140850688", "memory.failcnt": "3"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	g := &serverCgroup{memory: dir}
	if err := g.limitMemory(256 << 20); err != nil {
		t.Fatal(err)
	}
	for f, want := range map[string]string{"memory.limit_in_bytes": "268435456", "memory.max_usage_in_bytes": "0", "memory.failcnt": "0"} {
		if b, err := os.ReadFile(filepath.Join(dir, f)); err != nil || string(b) != want {
			t.Errorf("%s = %q (%v), want %q", f, b, err, want)
		}
	}
	if err := (&serverCgroup{}).limitMemory(1); err == nil {
		t.Error("a cgroup without a memory controller took a limit")
	}
}
