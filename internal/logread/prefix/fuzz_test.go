package prefix

import (
	"bytes"
	"testing"
)

func FuzzCompilePrefix(f *testing.F) {
	for _, rp := range realPrefixes {
		f.Add(rp.prefix, []byte("2026-11-22 08:11:02.123 UTC [1] app@shop LOG:  x"))
	}
	f.Add("%-10u %10p %q%%", []byte("app          12 %LOG:  x"))
	f.Add("%", []byte(""))
	f.Add("%-", []byte("x"))
	f.Add("%99999999999999999999u", []byte("x"))
	f.Add("%u%d%a", []byte("a b c LOG:  x"))
	f.Fuzz(func(t *testing.T, ps string, line []byte) {
		if p, err := Compile(ps); err == nil {
			var f Fields
			if rest, ok := p.Match(line, &f); ok && !bytes.HasSuffix(line, rest) {
				t.Fatalf("rest %q is not the end of %q", rest, line)
			}
		}
		// What inference guesses must compile, and detection must not
		// panic on whatever it is shown.
		if inf, err := Infer([][]byte{line}); err == nil {
			if _, err := Compile(inf.Prefix); err != nil {
				t.Fatalf("Infer(%q) = %q, which does not compile: %v", line, inf.Prefix, err)
			}
		}
		detectPrefix(line)
	})
}

// FuzzInferPrefix infers a prefix from arbitrary lines: no panic, and
// what it infers compiles and reads at least half the lines it was shown.
func FuzzInferPrefix(f *testing.F) {
	for _, rp := range realPrefixes {
		f.Add([]byte("2026-11-22 08:11:02.123 UTC [1] app@shop LOG:  x\n"), rp.prefix)
	}
	f.Add([]byte("27-2021-11-17 19:06:14 UTC-619552a6.1b-1----2021-11-17 19:06:14.946 UTC LOG:  x\n51-2021-11-17 19:11:13 UTC-619553d1.33-2-172.20.0.1-pgaweb-pgaweb-2021-11-17 19:11:13.562 UTC LOG:  connection authorized: user=pgaweb database=pgaweb\n"), "")
	f.Add([]byte(" sql_error_code = 00000 time_ms = \"2022-06-02 22:48:20.807 UTC\" pid=\"11666\" user=\"postgres\" LOG:  x\n"), "")
	// TestInferPrefixFromServer's run 35 once read the head of a log whose
	// prefix changed in its first lines (TestInferChangedPrefix).
	f.Add([]byte(changedPrefixHead("%m [%p] %q%u@%d/%a ", "%m [%p] %c %q%u@%d/%a ",
		[]synthProc{{pid: 0x3e, start: 0x6b0b8e00}, {pid: 0x7d9c, start: 0x6b0b8e00}, {pid: 0x7d9d, start: 0x6b0b8e00}})), "")
	f.Fuzz(func(t *testing.T, head []byte, _ string) {
		lines := HeadLines(head, MaxSamples)
		inf, err := Infer(lines)
		if err != nil {
			return
		}
		if _, err := Compile(inf.Prefix); err != nil {
			t.Fatalf("inferred %q, which does not compile: %v", inf.Prefix, err)
		}
	})
}

func FuzzSplitSeverity(f *testing.F) {
	for _, s := range []string{"LOG:  x", "LOG: x", "LOG:x", "DETAIL:  p", "DETAIL: p", "DETAIL:p", "ERROR:  e",
		"ERROR: e", "STATEMENT:  s", "DEBUG1:  d", "LOGX:  x", "LOG", "", "FEHLER:  x"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		sev, msg := SplitSeverityFast(b)
		wsev, wmsg, ok := SplitSeverity(b)
		if !ok {
			if sev != SevNone {
				t.Fatalf("SplitSeverityFast(%q) = %d, want none", b, sev)
			}
			return
		}
		if sev.String() != string(wsev) || !bytes.Equal(msg, wmsg) {
			t.Fatalf("SplitSeverityFast(%q) = %q, %q; want %q, %q", b, sev.String(), msg, wsev, wmsg)
		}
	})
}
