package prefix

import (
	"fmt"
	"strings"
	"testing"
)

// synthProc is one process of a synthetic log: its pid and start time,
// which make its %c session id "<hex start>.<hex pid>", and for a client
// backend (user != "") its user, database, application and client.
type synthProc struct {
	pid, start    int64
	user, db, app string
	client        string // an address, or "[local]"
}

// synthLine renders one line of p as the server prints prefix for it:
// authed is false for the lines a backend logs before authentication
// ("connection received"), which print [unknown] for the session's names.
func synthLine(prefix string, p synthProc, authed bool, line int, msg string) string {
	const (
		ms    = "2026-11-29 02:29:20.%03d UTC"
		secs  = "2026-11-29 02:29:20 UTC"
		epoch = "1795919360.%03d"
	)
	backend := p.user != ""
	names := func(v string) string {
		if !authed || v == "" {
			return "[unknown]"
		}
		return v
	}
	var b strings.Builder
	for i := 0; i < len(prefix); i++ {
		if prefix[i] != '%' || i+1 == len(prefix) {
			b.WriteByte(prefix[i])
			continue
		}
		i++
		switch prefix[i] {
		case 'm':
			fmt.Fprintf(&b, ms, line%1000)
		case 't', 's':
			b.WriteString(secs)
		case 'n':
			fmt.Fprintf(&b, epoch, line%1000)
		case 'p':
			fmt.Fprintf(&b, "%d", p.pid)
		case 'c':
			fmt.Fprintf(&b, "%x.%x", p.start, p.pid)
		case 'l':
			fmt.Fprintf(&b, "%d", line)
		case 'e':
			b.WriteString("00000")
		case 'x':
			b.WriteString("0")
		case 'v':
			if backend {
				fmt.Fprintf(&b, "3/%d", line)
			}
		case 'q':
			if !backend {
				return b.String() + msg
			}
		case 'u':
			if backend {
				b.WriteString(names(p.user))
			}
		case 'd':
			if backend {
				b.WriteString(names(p.db))
			}
		case 'a':
			if backend {
				b.WriteString(names(p.app))
			}
		case 'h':
			if backend {
				b.WriteString(p.client)
			}
		case 'r':
			if backend {
				b.WriteString(p.client)
				if p.client != "[local]" {
					b.WriteString("(34638)")
				}
			}
		case '%':
			b.WriteByte('%')
		default:
			panic("synthLine: no rendering for %" + string(prefix[i]))
		}
	}
	return b.String() + msg
}

// synthLog is the workload of TestInferPrefixFromServer as prefix prints
// it for these processes: a checkpointer (procs[0]) and sessions of
// alice, postgres and bob (procs[1:], taken in turn).
func synthLog(prefix string, procs []synthProc) string {
	var lines []string
	n := 0
	add := func(p synthProc, authed bool, msg string) {
		n++
		lines = append(lines, synthLine(prefix, p, authed, n, msg))
	}
	ck := procs[0]
	ck.user = ""
	roles := []synthProc{
		{user: "alice", db: "shop", app: "web", client: "127.0.0.1"},
		{user: "postgres", db: "postgres", app: "psql", client: "[local]"},
		{user: "bob", db: "shop", app: "batch job", client: "127.0.0.1"},
	}
	for k, p := range procs[1:] {
		r := roles[k%len(roles)]
		p.user, p.db, p.app, p.client = r.user, r.db, r.app, r.client
		host := "host=" + p.client
		if p.client != "[local]" {
			host += " port=34638"
		}
		add(p, false, "LOG:  connection received: "+host)
		add(p, true, fmt.Sprintf("LOG:  connection authorized: user=%s database=%s application_name=%s", p.user, p.db, p.app))
		add(p, true, "LOG:  duration: 0.169 ms  statement: SELECT 1")
		add(p, true, "ERROR:  division by zero")
		add(p, true, "STATEMENT:  SELECT 1/0")
		if k == 0 {
			add(ck, true, "LOG:  checkpoint starting: immediate force wait")
			add(ck, true, "LOG:  checkpoint complete: wrote 927 buffers (5.7%); 0 WAL file(s) added, 0 removed, 0 recycled")
		}
		add(p, true, "LOG:  duration: 0.056 ms  bind <unnamed>: SELECT $1::int + 1")
		add(p, true, "DETAIL:  parameters: $1 = '41'")
		add(p, true, fmt.Sprintf("LOG:  disconnection: session time: 0:00:00.021 user=%s database=%s %s", p.user, p.db, host))
	}
	return strings.Join(lines, "\n") + "\n"
}

// later returns the start time k seconds after start, or start itself
// past 2106, where a start time would take more than 8 hex digits.
func later(start, k int64) int64 {
	if start+k > 0xffffffff {
		return start
	}
	return start + k
}

// sessionIDPrefixes are the prefixes of realPrefixes that print %c.
func sessionIDPrefixes() []string {
	var out []string
	for _, rp := range realPrefixes {
		if strings.Contains(rp.prefix, "%c") {
			out = append(out, rp.prefix)
		}
	}
	return out
}

// checkSessionIDs infers the prefix of log and checks that it reads
// every line the real prefix reads, with the same fields, the session id
// among them.
func checkSessionIDs(t *testing.T, real, log string) {
	t.Helper()
	lines := HeadLines([]byte(log), MaxSamples)
	inf, err := Infer(lines)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	if n, want := countMatches(inf.Prefix, lines), countMatches(real, lines); n < want || want != len(lines) {
		t.Errorf("inferred %q reads %d lines, the real %q %d of %d", inf.Prefix, n, real, want, len(lines))
	}
	if !strings.Contains(inf.Prefix, "%c") {
		t.Errorf("inferred %q, which reads no session id, from\n%s", inf.Prefix, log)
		return
	}
	compareOnLines(t, real, inf.Prefix, []byte(log))
}

// TestInferSessionIDValues infers the prefixes that print %c from logs
// whose session ids take every length the server prints: a pid of 1 to
// 8 hex digits, start times of 6 to 8 hex digits, hex made only of
// decimal digits ("66000000.1234") or only of letters, and processes of
// different lengths in the same log. TestInferPrefixFromServer once read
// "6b0b8e00.7d9c" as part of the user (see TestInferMixedPrefixes for
// why); this pins that no session id value does so.
func TestInferSessionIDValues(t *testing.T) {
	starts := []int64{
		0x6b0b8e00, // the server of the failing run, 02:29:20 UTC
		0x66000000, // only decimal digits
		0x69999999,
		0x6aaaaaaa, // letters after the first digit
		0xffffffff, // only letters, 2106
		0x5eefe116,
		0x1000000, // 7 digits
		0x100000,  // 6 digits
	}
	pids := []int64{
		0x7d9c, // the failing run's backend
		1, 0x9, 0xa, 0x1f, 0x99, 0xabc, 0x999, 0x1000, 0x9999, 0xffff,
		0x10000, 0x99999, 0x3fffff, 0x400000, 0x7fffffff,
	}
	for _, prefix := range sessionIDPrefixes() {
		t.Run(prefix, func(t *testing.T) {
			for _, start := range starts {
				for _, pid := range pids {
					// The checkpointer started with the server, the
					// backends after it with pids that follow.
					procs := []synthProc{{pid: 0x3e, start: start}}
					for k := range int64(3) {
						procs = append(procs, synthProc{pid: pid + k, start: later(start, k)})
					}
					checkSessionIDs(t, prefix, synthLog(prefix, procs))
				}
			}
			// Mixes: every length of pid and start in one log.
			var procs []synthProc
			for k, pid := range pids {
				procs = append(procs, synthProc{pid: pid, start: starts[k%len(starts)]})
			}
			checkSessionIDs(t, prefix, synthLog(prefix, procs))
		})
	}
}

// FuzzInferSessionID infers the prefix of a log of four processes whose
// session ids are made of the fuzzed pids and start times.
func FuzzInferSessionID(f *testing.F) {
	f.Add(uint32(0x6b0b8e00), uint32(0x7d9c), uint32(0x7d9d), uint32(0x7d9e), uint32(0x7d9f), uint8(0))
	f.Add(uint32(0x66000000), uint32(0x9), uint32(0x99999), uint32(0x1234), uint32(0x7fffffff), uint8(1))
	f.Add(uint32(0x6b0b8e00), uint32(1), uint32(0x7d9c), uint32(0x400000), uint32(0xa), uint8(2))
	prefixes := sessionIDPrefixes()
	f.Fuzz(func(t *testing.T, start, ck, p1, p2, p3 uint32, which uint8) {
		// What the server can print: a start time of 6 to 8 hex
		// digits (1970-01-13 to 2106), pids above 0.
		if start < 0x100000 || ck == 0 || p1 == 0 || p2 == 0 || p3 == 0 {
			t.Skip()
		}
		st := int64(start)
		procs := []synthProc{{pid: int64(ck), start: st}, {pid: int64(p1), start: st}, {pid: int64(p2), start: later(st, 1)}, {pid: int64(p3), start: later(st, 2)}}
		prefix := prefixes[int(which)%len(prefixes)]
		checkSessionIDs(t, prefix, synthLog(prefix, procs))
	})
}

// changedPrefixHead is the head of a log whose prefix changed from old to
// prefix in its first lines, as in TestInferPrefixFromServer when the
// logging collector wrote the lines of the reload late: the sessions that
// set it and the postmaster print old, then procs print prefix.
func changedPrefixHead(old, prefix string, procs []synthProc) string {
	setter := synthProc{pid: 462, start: procs[0].start, user: "postgres", db: "postgres", client: "[local]"}
	postmaster := synthProc{pid: 375, start: procs[0].start}
	var b strings.Builder
	for k, l := range []struct {
		p      synthProc
		authed bool
		msg    string
	}{
		{setter, false, "LOG:  connection received: host=[local]"},
		{setter, true, "LOG:  connection authorized: user=postgres database=postgres"},
		{setter, true, "LOG:  duration: 6.198 ms  statement: ALTER SYSTEM SET log_line_prefix = '" + prefix + "'"},
		{setter, true, "LOG:  disconnection: session time: 0:00:00.015 user=postgres database=postgres host=[local]"},
		{setter, false, "LOG:  connection received: host=[local]"},
		{setter, true, "LOG:  connection authorized: user=postgres database=postgres"},
		{setter, true, "LOG:  duration: 5.295 ms  statement: SELECT pg_reload_conf()"},
		{postmaster, true, "LOG:  received SIGHUP, reloading configuration files"},
		{setter, true, "LOG:  disconnection: session time: 0:00:00.020 user=postgres database=postgres host=[local]"},
	} {
		b.WriteString(synthLine(old, l.p, l.authed, k+1, l.msg))
		b.WriteByte('\n')
	}
	b.WriteString(synthLine(prefix, postmaster, true, 10, `LOG:  parameter "log_line_prefix" changed to "`+prefix+`"`))
	b.WriteByte('\n')
	return b.String() + synthLog(prefix, procs)
}

// TestInferChangedPrefix infers the prefix of logs whose first lines
// are in another prefix, the one the log had before: the prefix most
// lines have is inferred. (Not tested: when the old prefix's session
// lines outnumber the new one's background lines, %q goes where it reads
// the old ones, "%m [%p] %u@%d/%a %q%c %e " for "%m [%p] %q%u@%d/%a %c %e ".) TestInferPrefixFromServer's run 35 once got
// nine lines of run 34's prefix, which reads its lines too, taking the
// session id for part of the user ("6b0b8e00.7d9c alice"), but not the
// checkpointer's: it read more lines and won.
func TestInferChangedPrefix(t *testing.T) {
	procs := []synthProc{{pid: 0x3e, start: 0x6b0b8e00}, {pid: 0x7d9c, start: 0x6b0b8e00}, {pid: 0x7d9d, start: 0x6b0b8e00}, {pid: 0x7d9e, start: 0x6b0b8e01}}
	for _, tt := range []struct{ old, prefix string }{
		{"%m [%p] %q%u@%d/%a ", "%m [%p] %c %q%u@%d/%a "}, // the failing run
		{"%m [%p] %c %q%u@%d/%a ", "%m [%p] %q%u@%d/%a "},
		{"%m [%p] %q%u@%d ", "%m [%p] %c %q%u@%d "},
		{"%m [%p] %q%u@%d/%a %c %e ", "%m [%p] %c %q%u@%d/%a "},
		{"%m|%u|%d|", "%m|%u|%d|%c|"},
	} {
		t.Run(tt.old+"to "+tt.prefix, func(t *testing.T) {
			head := changedPrefixHead(tt.old, tt.prefix, procs)
			inf, err := Infer(HeadLines([]byte(head), MaxSamples))
			if err != nil {
				t.Fatalf("%v\n%s", err, head)
			}
			// The prefix may differ where no line of the new prefix
			// tells (a %q that reads old lines too), not in what it
			// reads: the session id is read as one, where there is one.
			if strings.Contains(inf.Prefix, "%c") != strings.Contains(tt.prefix, "%c") {
				t.Errorf("inferred %q, want %q, from\n%s", inf.Prefix, tt.prefix, head)
			}
			compareOnLines(t, tt.prefix, inf.Prefix, []byte(head))
		})
	}
}
