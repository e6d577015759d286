package logread

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/event"
)

// The stderr reader's hot path has shortcuts for what most lines look
// like. These tests hold each shortcut to the plain code it stands for.

// refParseDuration is parseDuration without its shortcuts.
func refParseDuration(s string) (int64, string, bool) {
	i := 0
	var whole, frac int64
	var fracDigits int
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		whole = whole*10 + int64(s[i]-'0')
		i++
	}
	if i == 0 {
		return 0, "", false
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			if fracDigits < 3 {
				frac = frac*10 + int64(s[i]-'0')
				fracDigits++
			}
			i++
		}
	}
	for ; fracDigits < 3; fracDigits++ {
		frac *= 10
	}
	rest, ok := strings.CutPrefix(s[i:], " ms")
	if !ok {
		return 0, "", false
	}
	return whole*1000 + frac, rest, true
}

var durationSeeds = []string{
	"0.123 ms", "0.123 ms  statement: SELECT 1", "9.999 ms", "1.5 ms", "12.345 ms  execute S_1: x",
	"0.12 ms", "0.1234 ms", "1 ms", "0.12a ms", "0.123 mx", "0.123ms", "a.123 ms", "0/123 ms",
	"0.123 m", "", "0", "0.", "0. ms", ".5 ms", "99999999999999999999.9 ms",
}

func TestParseDuration(t *testing.T) {
	for _, s := range durationSeeds {
		d, rest, ok := parseDuration(s)
		wd, wrest, wok := refParseDuration(s)
		if d != wd || rest != wrest || ok != wok {
			t.Errorf("parseDuration(%q) = %d, %q, %v; want %d, %q, %v", s, d, rest, ok, wd, wrest, wok)
		}
	}
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range durationSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, rest, ok := parseDuration(s)
		wd, wrest, wok := refParseDuration(s)
		if d != wd || rest != wrest || ok != wok {
			t.Fatalf("parseDuration(%q) = %d, %q, %v; want %d, %q, %v", s, d, rest, ok, wd, wrest, wok)
		}
	})
}

// FuzzTailCache: whatever the lines, the tail cache (with its shortcuts
// for the time, the tail and the session) gives the events and counts of
// matching every line's prefix.
func FuzzTailCache(f *testing.F) {
	const ts = "2026-11-22 08:11:02.123 UTC"
	f.Add([]byte(ts+" [1] app@shop/web 6571e2a3.1 LOG:  duration: 0.100 ms  statement: SELECT 1\n"+
		ts+" [2] app@shop/web 6571e2a3.2 LOG:  duration: 1.000 ms  execute S_1: SELECT $1\n"+
		ts+" [2] app@shop/web 6571e2a3.2 DETAIL:  parameters: $1 = 'a\n\tb'\n"+
		"2026-11-22 08:11:02.124 UTC [1] app@shop/web 6571e2a3.1 ERROR:  division by zero\n"+
		"2026-11-22 08:11:02.124 UTC [1] app@shop/web 6571e2a3.1 STATEMENT:  SELECT 1/0\n"+
		"2026-11-22 08:11:03.1 UTC [1] app@shop/web 6571e2a3.1 LOG:  disconnection: session time: 0:00:01.234\n"+
		"2026-11-22 08:11:03.125 CEST [3] app@shop/web 6571e2a3.3 LOG:  duration: 0.020 ms  bind <unnamed>: SELECT 2\n"), uint8(0))
	f.Add(syntheticLog(4<<10), uint8(0))
	f.Add([]byte(ts+" [1] LOG:  statement: SELECT 1\n"+ts+" [1] LOG:  duration: 0.1 ms\n"), uint8(1))
	f.Fuzz(func(t *testing.T, in []byte, which uint8) {
		prefixes := []string{"%m [%p] %q%u@%d/%a %c ", "%m [%p] ", "%t [%p] %u@%d "}
		ps := prefixes[int(which)%len(prefixes)]
		read := func(cache bool) ([]string, [2]int64) {
			r, err := NewReader(bytes.NewReader(in), "fuzz", Options{Format: FormatStderr, Prefix: ps})
			if err != nil {
				// An empty log is refused before the cache is made: the
				// same either way.
				return []string{"open: " + err.Error()}, [2]int64{}
			}
			if !cache {
				r.stderr.tails = nil
			}
			var keys []string
			for ev, err := range event.All(r) {
				if err != nil {
					keys = append(keys, "error: "+err.Error())
					break
				}
				keys = append(keys, fullKey(ev))
			}
			c := r.Counters()
			return keys, [2]int64{c.Total, c.Parsed}
		}
		with, cw := read(true)
		without, cwo := read(false)
		if !slices.Equal(with, without) {
			t.Fatalf("%d events with the cache, %d without; first difference: %s", len(with), len(without), firstDiff(with, without))
		}
		if cw != cwo {
			t.Fatalf("counters differ: %v with the cache, %v without", cw, cwo)
		}
	})
}

// fullKey shows every field of ev.
func fullKey(ev *event.Event) string {
	return fmt.Sprintf("%s|%d|%s|%d|%s|%s|%s|%d|%q|%q|%q|%v|%d|%v|%s|%s|%q|%d", ev.Kind, ev.Time, ev.Session, ev.PID,
		ev.User, ev.Database, ev.Application, ev.Duration, ev.Query, ev.Name, ev.Portal(), ev.Params, ev.ParamState,
		ev.Failed, ev.ErrorSeverity(), ev.SQLState, ev.ErrorMessage(), ev.Line)
}

func FuzzSplitProtocol(f *testing.F) {
	for _, s := range []string{"<unnamed>: SELECT 1", "S_1/C_2: SELECT 1", "S_1: a: b", "a/b/c: x", "/: x", "x:y: z", "no colon", ": ", "a:", "<unnamed>/: q"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		stmt, portal, query, ok := splitProtocol(s)
		name, wquery, wok := splitNameQuery(s)
		wstmt, wportal := splitPortal(name)
		if ok != wok || ok && (stmt != wstmt || portal != wportal || query != wquery) {
			t.Fatalf("splitProtocol(%q) = %q, %q, %q, %v; want %q, %q, %q, %v", s, stmt, portal, query, ok, wstmt, wportal, wquery, wok)
		}
	})
}

// TestEndedSessionsKeepNoText: the tail cache keeps the state of sessions
// that ended (as a hint for the interpreter), so an ended session must
// not keep the log text it referred to, nor with it its 1 MiB chunk: a
// log of many short sessions would keep the whole log in memory.
func TestEndedSessionsKeepNoText(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 200; i += 2 {
		// Two sessions at a time, their lines interleaved.
		var pre [2]string
		for k := range pre {
			pre[k] = fmt.Sprintf("2026-11-22 00:00:01.%03d UTC [%d] app@shop/web 6571e2a3.%x ", i%1000, 10000+i+k, 10000+i+k)
		}
		for _, f := range []string{
			"LOG:  connection authorized: user=app database=shop\n",
			"LOG:  duration: 0.020 ms  parse <unnamed>: SELECT $1\n",
			"LOG:  duration: 0.020 ms  bind <unnamed>: SELECT $1\n",
			"DETAIL:  parameters: $1 = '1'\n",
			"LOG:  disconnection: session time: 0:00:01.234 user=app database=shop host=[local]\n",
		} {
			for k := range pre {
				b.WriteString(pre[k] + f)
			}
		}
	}
	r, err := NewReader(strings.NewReader(b.String()), "sessions", Options{Format: FormatStderr, Prefix: benchPrefix})
	if err != nil {
		t.Fatal(err)
	}
	countEvents(t, r)
	hinted := 0
	for _, lf := range r.stderr.tails {
		s := lf.sess
		if s == nil {
			continue
		}
		hinted++
		if !s.gone {
			t.Errorf("session %s ended but is not gone", s.key)
		}
		if s.bindEv != nil || s.lastBind != nil || s.bindDetail != "" || s.parseQuery != "" || s.parseName != "" || s.pending != nil {
			t.Errorf("ended session %s still holds log text: %+v", s.key, s)
		}
	}
	if hinted == 0 {
		t.Fatal("no session was hinted: the test does not test what it should")
	}
}
