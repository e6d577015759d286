package judge

import "testing"

func TestParseSLO(t *testing.T) {
	s, err := ParseSLO("p95<+50%, errors<+0.1pp,p99<2x")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.String(); got != "p95<+50%,errors<+0.1pp,p99<+100%" {
		t.Errorf("String() = %q", got)
	}
	for _, bad := range []string{"", "p95>+50%", "p95<50", "errors<+1%", "cpu<+5%", "p95<+5%,p95<+6%", "p95<0.5x"} {
		if _, err := ParseSLO(bad); err == nil {
			t.Errorf("ParseSLO(%q): no error", bad)
		}
	}
}
