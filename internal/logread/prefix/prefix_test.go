package prefix

import (
	"bufio"
	"compress/bzip2"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/logread/logreadtest"
)

// prefixWant is what a matched prefix must extract; the rest of the line
// must then start with the severity.
type prefixWant struct {
	time, pid, session, user, db, app, sqlstate string
	rest                                        string
}

func fieldsOf(f *Fields) prefixWant {
	return prefixWant{
		time: string(f.Time), pid: string(f.PID), session: string(f.Session),
		user: string(f.User), db: string(f.Database), app: string(f.Application),
		sqlstate: string(f.SQLState),
	}
}

// TestPrefixMatch covers every escape the server knows, padding, %q and
// time zones, with lines as the server writes them.
func TestPrefixMatch(t *testing.T) {
	const ts = "2026-11-22 08:11:02.123 UTC"
	const msg = "LOG:  statement: SELECT 1"
	tests := []struct {
		name   string
		prefix string
		line   string
		want   prefixWant
		// bug names a known defect that makes this case fail today: the
		// test then checks that it still fails, so that whoever fixes it
		// is told to drop the note.
		bug string
	}{
		// Times and zones.
		{"m", "%m ", ts + " " + msg, prefixWant{time: ts}, ""},
		{"t", "%t ", "2026-11-22 08:11:02 UTC " + msg, prefixWant{time: "2026-11-22 08:11:02 UTC"}, ""},
		{"n", "%n ", "1795335062.123 " + msg, prefixWant{time: "1795335062.123"}, ""},
		{"zone CEST", "%m [%p] ", "2024-06-27 00:00:07.369 CEST [58151] " + msg, prefixWant{time: "2024-06-27 00:00:07.369 CEST", pid: "58151"}, ""},
		{"zone +03", "%m [%p] ", "2024-06-27 00:00:07.369 +03 [1] " + msg, prefixWant{time: "2024-06-27 00:00:07.369 +03", pid: "1"}, ""},
		{"zone -0530", "%t [%p] ", "2024-06-27 00:00:07 -0530 [1] " + msg, prefixWant{time: "2024-06-27 00:00:07 -0530", pid: "1"}, ""},
		{"zone microseconds", "%m|", "2024-06-27 00:00:07.123456 MSK|" + msg, prefixWant{time: "2024-06-27 00:00:07.123456 MSK"}, ""},
		{"zone then colon", "%t:%h:%u@%d:[%p]:", "2021-05-27 17:00:00 UTC:10.1.91.65:user@my_db:[24743]:" + msg,
			prefixWant{time: "2021-05-27 17:00:00 UTC", pid: "24743", user: "user", db: "my_db"}, ""},
		// Process and session.
		{"p", "[%p] ", "[1234] " + msg, prefixWant{pid: "1234"}, ""},
		{"c", "%c ", "6571e2a3.1f40 " + msg, prefixWant{session: "6571e2a3.1f40"}, ""},
		{"l", "[%l-1] ", "[42-1] " + msg, prefixWant{}, ""},
		{"P parallel worker", "[%P] ", "[4711] " + msg, prefixWant{}, ""},
		{"P leader empty", "[%P] ", "[] " + msg, prefixWant{}, ""},
		{"x", "[%x] ", "[987654] " + msg, prefixWant{}, ""},
		{"x empty", "[%x] ", "[] " + msg, prefixWant{}, ""},
		{"v", "%v ", "3/1234 " + msg, prefixWant{}, ""},
		{"v empty", "[%v] ", "[] " + msg, prefixWant{}, ""},
		{"e", "%e ", "42P01 ERROR:  relation \"x\" does not exist", prefixWant{sqlstate: "42P01", rest: "ERROR:  relation \"x\" does not exist"}, ""},
		{"Q", "[queryid=%Q] ", "[queryid=1081270519976314062] " + msg, prefixWant{}, ""},
		{"Q negative", "[queryid=%Q] ", "[queryid=-8112313845396740087] " + msg, prefixWant{}, ""},
		{"s", "%s ", "2026-11-22 08:00:00 UTC " + msg, prefixWant{}, ""},
		{"b", "%b ", "client backend " + msg, prefixWant{}, ""},
		{"b one word", "%b ", "postmaster " + msg, prefixWant{}, ""},
		{"i", "%i ", "SELECT " + msg, prefixWant{}, ""},
		{"h", "%h ", "10.0.0.1 " + msg, prefixWant{}, ""},
		{"r", "%r ", "[local] " + msg, prefixWant{}, ""},
		{"percent", "%% %p ", "% 12 " + msg, prefixWant{pid: "12"}, ""},
		{"unknown escape prints nothing", "%m %z[%p] ", ts + " [7] " + msg, prefixWant{time: ts, pid: "7"}, ""},
		// Free text.
		{"user db", "%m [%p] %u@%d ", ts + " [1] app@shop " + msg, prefixWant{time: ts, pid: "1", user: "app", db: "shop"}, ""},
		{"unknown user", "%m [%p] %u@%d ", ts + " [1] [unknown]@[unknown] " + msg, prefixWant{time: ts, pid: "1", user: "[unknown]", db: "[unknown]"}, ""},
		{"app with spaces", "%m [%p] %u@%d/%a ", ts + " [1] app@shop/PostgreSQL JDBC Driver " + msg,
			prefixWant{time: ts, pid: "1", user: "app", db: "shop", app: "PostgreSQL JDBC Driver"}, ""},
		{"app with spaces before a bracket", "%m [%p] %u@%d [%a] ", ts + " [1] app@shop [pgAdmin 4 - DB:shop] " + msg,
			prefixWant{time: ts, pid: "1", user: "app", db: "shop", app: "pgAdmin 4 - DB:shop"}, ""},
		{"app with spaces then session", "%m [%p] %u@%d/%a %c ", ts + " [1] app@shop/my app 6571e2a3.1f40 " + msg,
			prefixWant{time: ts, pid: "1", user: "app", db: "shop", app: "my app", session: "6571e2a3.1f40"}, ""},
		{"app empty", "%m [%p] %u@%d/%a ", ts + " [1] app@shop/ " + msg, prefixWant{time: ts, pid: "1", user: "app", db: "shop"}, ""},
		{"key=value", "%t [%p]: [%l-1] user=%u,db=%d,app=%a,client=%h ", "2017-09-06 08:41:41 UTC [36]: [121-1] user=postgres,db=postgres,app=pgbench,client=172.23.0.1 " + msg,
			prefixWant{time: "2017-09-06 08:41:41 UTC", pid: "36", user: "postgres", db: "postgres", app: "pgbench"}, ""},
		{"key=value empty", "%t [%p]: [%l-1] user=%u,db=%d,app=%a,client=%h ", "2017-09-06 08:40:10 UTC [20]: [1-1] user=,db=,app=,client= " + msg,
			prefixWant{time: "2017-09-06 08:40:10 UTC", pid: "20"}, ""},
		{"free text last, no space", "%t [%p]: user=%u,app=%a", "2024-06-27 00:00:07 CEST [1]: user=u,app= " + msg,
			prefixWant{time: "2024-06-27 00:00:07 CEST", pid: "1", user: "u"}, ""},
		{"free text last with spaces", "%m [%p] %a ", ts + " [1] psql  x " + msg, prefixWant{time: ts, pid: "1", app: "psql  x"}, ""},
		{"free text last without trailing literal", "%m [%p] %a", ts + " [1] psql  x " + msg, prefixWant{time: ts, pid: "1", app: "psql  x"}, ""},
		// The full verbose prefix.
		{"all escapes", "%m %t %n [%p] %c %l %u %d %a %h %r %e %x %v %i %Q %b %s %% ",
			ts + " 2026-11-22 08:11:02 UTC 1795335062.123 [99] 6571e2a3.63 5 alice shop web 10.0.0.1 10.0.0.1(5432) 00000 77 3/12 SELECT 123 client backend 2026-11-22 08:00:00 UTC % " + msg,
			prefixWant{time: "1795335062.123", pid: "99", session: "6571e2a3.63", user: "alice", db: "shop", app: "web", sqlstate: "00000"}, ""},
		// Padding.
		{"right padded pid", "%m [%10p] ", ts + " [      1234] " + msg, prefixWant{time: ts, pid: "1234"}, ""},
		{"right padded pid, wider value", "%m [%3p] ", ts + " [123456] " + msg, prefixWant{time: ts, pid: "123456"}, ""},
		{"left padded user at the end", "%m [%p] %-10u", ts + " [1] app        " + msg, prefixWant{time: ts, pid: "1", user: "app"}, ""},
		{"left padded user before bracket", "%m [%p] [%-10u] ", ts + " [1] [app       ] " + msg, prefixWant{time: ts, pid: "1", user: "app"}, ""},
		{"right padded user", "%m [%p] %10u:%d ", ts + " [1]        app:shop " + msg, prefixWant{time: ts, pid: "1", user: "app", db: "shop"}, ""},
		{"left padded pid", "%m [%-10p] ", ts + " [1234      ] " + msg, prefixWant{time: ts, pid: "1234"}, ""},
		{"left padded user then db", "%m [%p] %-10u %d ", ts + " [1] app        shop " + msg, prefixWant{time: ts, pid: "1", user: "app", db: "shop"}, ""},
		{"left padded app before bar", "%m [%p] %-8a|", ts + " [1] psql    |" + msg, prefixWant{time: ts, pid: "1", app: "psql"}, ""},
		// %q: background processes print only what comes before it.
		{"q session line", "%m [%p] %q%u@%d ", ts + " [1] app@shop " + msg, prefixWant{time: ts, pid: "1", user: "app", db: "shop"}, ""},
		{"q background line", "%m [%p] %q%u@%d ", ts + " [1] LOG:  checkpoint starting: time", prefixWant{time: ts, pid: "1", rest: "LOG:  checkpoint starting: time"}, ""},
		{"q background with session fields after", "%m [%p] %q[user=%u,db=%d,app=%a] ", ts + " [1] LOG:  database system is ready", prefixWant{time: ts, pid: "1", rest: "LOG:  database system is ready"}, ""},
		{"q at start", "%q%m [%p] ", "LOG:  startup", prefixWant{rest: "LOG:  startup"}, ""},
		{"q with user named LOG", "%m [%p] %q%u@%d ", ts + " [1] LOG@shop " + msg, prefixWant{time: ts, pid: "1", user: "LOG", db: "shop"}, ""},
		// Separators that also occur inside values.
		{"at in user", "%m [%p] %u@%d ", ts + " [1] me@corp@shop " + msg, prefixWant{time: ts, pid: "1", user: "me", db: "corp@shop"}, ""},
		{"CRLF lines are cut before", "%m [%p] ", ts + " [1] " + msg, prefixWant{time: ts, pid: "1"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Compile(tt.prefix)
			if err != nil {
				t.Fatalf("Compile(%q): %v", tt.prefix, err)
			}
			var f Fields
			rest, ok := p.Match([]byte(tt.line), &f)
			got := fieldsOf(&f)
			got.rest = string(rest)
			want := tt.want
			if want.rest == "" {
				want.rest = tt.line[strings.Index(tt.line, "LOG:  "):]
			}
			_, _, sev := SplitSeverity(rest)
			right := ok && got == want && sev
			switch {
			case tt.bug != "" && right:
				t.Errorf("%q on %q now matches right: remove the note %q", tt.prefix, tt.line, tt.bug)
			case tt.bug != "":
				t.Logf("known bug (%s): ok=%v got %+v", tt.bug, ok, got)
			case !ok:
				t.Errorf("%q does not match %q", tt.prefix, tt.line)
			case !right:
				t.Errorf("%q on %q:\n got  %+v\n want %+v", tt.prefix, tt.line, got, want)
			}
		})
	}
}

// TestPrefixNoMatch lists lines a prefix must reject: they are counted as
// "no matching prefix", never turned into entries with wrong fields.
func TestPrefixNoMatch(t *testing.T) {
	const ts = "2026-11-22 08:11:02.123 UTC"
	tests := []struct{ prefix, line string }{
		{"%m [%p] ", ""},
		{"%m [%p] ", "garbage"},
		{"%m [%p] ", "pg_ctl: could not start server"},
		{"%m [%p] ", ts + " [abc] LOG:  x"},
		{"%m [%p] ", ts + " [] LOG:  x"},
		{"%m [%p] ", ts + " [-] LOG:  x"},
		{"%m [%p] ", ts + " (12) LOG:  x"},
		{"%m [%p] ", "2026/11/22 08:11:02.123 UTC [1] LOG:  x"},
		{"%m [%p] ", "2026-11-22"},
		{"%m ", "Feb 11 13:15:39 test-pc postgres[10808]: [1-1] LOG:  x"},
		{"%t [%p]: ", "2026-11-22 08:11:02 UTC [12] LOG:  x"},
		{"%n ", "abc LOG:  x"},
		{"%c ", "xyz LOG:  x"},
		{"%c ", "6571e2a3 LOG:  x"},
		{"%c ", "6571e2a3. LOG:  x"},
		{"[%l] ", "[] LOG:  x"},
		{"%e ", "42P0"},
		{"[queryid=%Q] ", "[queryid=] LOG:  x"},
		{"%m [%p] %u@%d ", ts + " [1] app-shop LOG:  x"},
		{"user=%u,db=%d ", "user=a db=b LOG:  x"},
		{"%m [%p] %q%u@%d ", ts + " [1] checkpoint starting: time"},
		{"%m [%p] %a", ts + " [1] psql"},
		{"%%%p ", "12 LOG:  x"},
		{"< %m > ", ts + " LOG:  x"},
	}
	for _, tt := range tests {
		p, err := Compile(tt.prefix)
		if err != nil {
			t.Fatalf("Compile(%q): %v", tt.prefix, err)
		}
		var f Fields
		if rest, ok := p.Match([]byte(tt.line), &f); ok {
			if _, _, sev := SplitSeverity(rest); sev {
				t.Errorf("%q matches %q: fields %+v, rest %q", tt.prefix, tt.line, fieldsOf(&f), rest)
			}
		}
	}
}

func TestCompilePrefixErrors(t *testing.T) {
	for _, ps := range []string{"%", "%m %", "[%-10", "%10"} {
		if p, err := Compile(ps); err == nil {
			t.Errorf("Compile(%q) = %+v, want an error", ps, p.items)
		}
	}
	for _, tt := range []struct {
		ps     string
		hasPID bool
		items  int
	}{
		{"", false, 0},
		{"%m [%p] ", true, 4},
		{"%t %%p ", false, 2},
		{"%m %-10P ", false, 4},
		{"%m %z ", false, 2}, // %z is unknown: printed as nothing, so the two spaces merge
	} {
		p, err := Compile(tt.ps)
		if err != nil {
			t.Errorf("Compile(%q): %v", tt.ps, err)
			continue
		}
		if p.HasPID != tt.hasPID || len(p.items) != tt.items {
			t.Errorf("Compile(%q): hasPID %v, %d items %+v; want %v, %d", tt.ps, p.HasPID, len(p.items), p.items, tt.hasPID, tt.items)
		}
	}
}

// TestDetectPrefixFixtures detects the prefix from the head of each stderr
// fixture and checks that it reads the same user, database and process id
// as the real prefix on every line the real one matches.
func TestDetectPrefixFixtures(t *testing.T) {
	for name, real := range logreadtest.ReadmePrefixes {
		t.Run(name, func(t *testing.T) {
			head := fixtureHead(t, name, 200)
			detected, err := detectPrefix(head)
			if err != nil {
				t.Fatalf("detectPrefix: %v", err)
			}
			t.Logf("real %q, detected %q", real, detected)
			compareOnLines(t, real, detected, head)
		})
	}
}

// compareOnLines checks that the detected prefix extracts what the real
// one does, on every line of head that the real one matches.
func compareOnLines(t *testing.T, real, detected string, head []byte) {
	t.Helper()
	rp, err := Compile(real)
	if err != nil {
		t.Fatal(err)
	}
	dp, err := Compile(detected)
	if err != nil {
		t.Fatalf("detected prefix %q does not compile: %v", detected, err)
	}
	matched := 0
	for line := range strings.Lines(string(head)) {
		line = strings.TrimSuffix(line, "\n")
		var rf, df Fields
		rrest, ok := rp.Match([]byte(line), &rf)
		if !ok {
			continue
		}
		if _, _, ok := SplitSeverity(rrest); !ok {
			continue
		}
		matched++
		drest, ok := dp.Match([]byte(line), &df)
		if !ok {
			t.Errorf("detected %q does not match %q", detected, line)
			continue
		}
		r, d := fieldsOf(&rf), fieldsOf(&df)
		r.rest, d.rest = string(rrest), string(drest)
		if r != d {
			t.Errorf("line %q:\n real %q:     %+v\n detected %q: %+v", line, real, r, detected, d)
		}
	}
	if matched == 0 {
		t.Errorf("the real prefix %q matches none of the lines", real)
	}
}

// sameFields reports whether both prefixes match line with the same user,
// database, process id and message.
func sameFields(real, guess, line string) bool {
	rp, err1 := Compile(real)
	gp, err2 := Compile(guess)
	if err1 != nil || err2 != nil {
		return false
	}
	var rf, gf Fields
	rrest, ok1 := rp.Match([]byte(line), &rf)
	grest, ok2 := gp.Match([]byte(line), &gf)
	r, g := fieldsOf(&rf), fieldsOf(&gf)
	return ok1 && ok2 && string(rrest) == string(grest) && r.user == g.user && r.db == g.db && r.pid == g.pid
}

// sharedFixtures holds pgbadger's logs, which the reader's tests read too.
const sharedFixtures = "../testdata/pgbadger/"

// fixtureHead returns up to n lines of a shared fixture, decompressed.
func fixtureHead(t *testing.T, name string, n int) []byte {
	t.Helper()
	f, err := os.Open(sharedFixtures + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var r io.Reader = f
	switch {
	case strings.HasSuffix(name, ".gz"):
		z, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		r = z
	case strings.HasSuffix(name, ".bz2"):
		r = bzip2.NewReader(f)
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	var b []byte
	for i := 0; i < n && sc.Scan(); i++ {
		b = append(b, sc.Bytes()...)
		b = append(b, '\n')
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestInferPrefix checks the guess read off single lines. The guess need
// not be the real setting, only one that extracts the same fields.
func TestInferPrefix(t *testing.T) {
	tests := []struct {
		real string
		line string
		bug  string
	}{
		{"%m [%p] ", "2026-11-22 08:11:02.123 UTC [1234] LOG:  statement: SELECT 1", ""},
		{"%t [%p] %u@%d ", "2026-11-22 08:11:02 CET [1234] app@shop LOG:  statement: SELECT 1", ""},
		{"%m [%p] %u@%d/%a ", "2026-11-22 08:11:02.123 UTC [1234] app@shop/psql LOG:  statement: SELECT 1", ""},
		{"%m [%p] %u@%d/%a %c ", "2026-11-22 08:11:02.123 UTC [1234] app@shop/psql 6571e2a3.4d2 LOG:  statement: SELECT 1", ""},
		{"%m %c %p ", "2026-11-22 08:11:02.123 UTC 6571e2a3.4d2 1234 LOG:  statement: SELECT 1", ""},
		{"%n [%p] ", "1795335062.123 [1234] LOG:  statement: SELECT 1", ""},
		{"%t [%p]: [%l-1] user=%u,db=%d,app=%a,client=%h ", "2017-09-06 08:41:41 UTC [36]: [121-1] user=postgres,db=postgres,app=pgbench,client=172.23.0.1 LOG:  duration: 2.280 ms  statement: END;", ""},
		{"%t [%p]: [%l-1] user=%u,db=%d,app=%a,client=%h ", "2017-09-06 08:41:41 UTC [36]: [121-1] user=postgres,db=postgres,app=pgbench,client=[local] LOG:  duration: 2.280 ms  statement: END;", ""},
		{"%t:%r:%u@%d:[%p]:", "2020-03-11 20:40:50 CET:192.168.1.201(50906):gilles@pgbench:[12795]:FATAL:  no pg_hba.conf entry", ""},
		{"%m [%p] %e ", "2026-11-22 08:11:02.123 UTC [1234] 42P01 ERROR:  relation \"x\" does not exist", ""},
	}
	for _, tt := range tests {
		inf, err := Infer([][]byte{[]byte(tt.line)})
		if err != nil {
			t.Errorf("Infer(%q): %v", tt.line, err)
			continue
		}
		ps := inf.Prefix
		if tt.bug != "" {
			if sameFields(tt.real, ps, tt.line) {
				t.Errorf("Infer(%q) = %q is right now: remove the note %q", tt.line, ps, tt.bug)
			}
			continue
		}
		compareOnLines(t, tt.real, ps, []byte(tt.line+"\n"))
	}
	// A guess read off a [local] line must read remote lines too.
	if inf, _ := Infer([][]byte{[]byte("2021-02-14 01:34:02 CET [1]: db=a,user=b,app=c,client=[local] LOG:  x")}); !sameFields("%t [%p]: db=%d,user=%u,app=%a,client=%h ", inf.Prefix, "2021-02-14 01:34:02 CET [1]: db=a,user=b,app=c,client=10.0.0.1 LOG:  x") {
		t.Errorf("the guess %q from a [local] line does not read remote lines", inf.Prefix)
	}
	if inf, err := Infer([][]byte{[]byte("no severity here")}); err == nil {
		t.Errorf("inferPrefix on a line without severity = %q", inf.Prefix)
	}
}

// TestDetectPrefix runs detection on small synthetic logs: the guess from
// the first lines must also read the lines after them.
func TestDetectPrefix(t *testing.T) {
	tests := []struct {
		name string
		real string
		log  string
	}{
		{"debian with background lines", "%m [%p] %q%u@%d ",
			"2026-11-22 08:11:02.123 UTC [10] LOG:  database system is ready to accept connections\n" +
				"2026-11-22 08:11:03.123 UTC [11] app@shop LOG:  statement: SELECT 1\n" +
				"2026-11-22 08:11:03.124 UTC [11] app@shop LOG:  duration: 0.1 ms\n"},
		{"local then remote client", "%t [%p]: db=%d,user=%u,app=%a,client=%h ",
			"2021-02-14 01:34:02 CET [30291]: db=template1,user=postgres,app=psql,client=[local] LOG:  connection authorized: user=postgres database=template1\n" +
				"2021-02-14 01:34:03 CET [30292]: db=shop,user=app,app=web,client=10.0.0.1 LOG:  connection authorized: user=app database=shop\n" +
				"2021-02-14 01:34:03 CET [30292]: db=shop,user=app,app=web,client=10.0.0.1 LOG:  statement: SELECT 1\n"},
		// Only [local] clients in the head: the common prefix must win
		// over a guess with a stray bracket, or the
		// remote clients later in the log are lost.
		{"only local clients in the head", "%t [%p]: db=%d,user=%u,app=%a,client=%h ",
			"2021-02-14 01:34:02 CET [30291]: db=[unknown],user=[unknown],app=[unknown],client=[local] LOG:  connection received: host=[local]\n" +
				"2021-02-14 01:34:02 CET [30291]: db=template1,user=postgres,app=psql,client=[local] LOG:  connection authorized: user=postgres database=template1\n" +
				"2021-02-14 01:34:02 CET [30291]: db=template1,user=postgres,app=psql,client=[local] LOG:  disconnection: session time: 0:00:00.007\n"},
		{"session id", "%m [%p] %c %q%u@%d/%a ",
			"2026-11-22 08:11:02.123 UTC [11] 6571e2a3.b app@shop/web LOG:  statement: SELECT 1\n" +
				"2026-11-22 08:11:02.123 UTC [12] 6571e2a3.c app@shop/my app LOG:  statement: SELECT 2\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps, err := detectPrefix([]byte(tt.log))
			if err != nil {
				t.Fatal(err)
			}
			compareOnLines(t, tt.real, ps, []byte(tt.log))
			// A later line from a remote client must read the same.
			remote := "2021-02-14 01:40:00 CET [4242]: db=shop,user=app,app=web,client=10.0.0.1 LOG:  statement: SELECT 1\n"
			if strings.Contains(tt.real, "client=%h") {
				compareOnLines(t, tt.real, ps, []byte(remote))
			}
		})
	}
	for _, log := range []string{"", "no newline", "garbage\nmore garbage\n", "\t\t\n\n"} {
		if ps, err := detectPrefix([]byte(log)); !errors.Is(err, ErrUnknownPrefix) || ps != "" {
			t.Errorf("detectPrefix(%q) = %q, %v; want ErrUnknownPrefix", log, ps, err)
		}
	}
}
