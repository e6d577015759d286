package report

import (
	"strings"

	"github.com/pgrehearse/pgrehearse/internal/findings"
)

// Hints say how to get what a result lacks, in the words of the caller's
// commands: internal/cli fills them with its flags, which this package
// never names. Every field is optional; an empty one leaves its advice out.
type Hints struct {
	// Histograms writes results with latency histograms
	// ("analyze --hist").
	Histograms string
	// TargetLog gives a replay server-side durations
	// ("replay --target-log").
	TargetLog string
	// Observe collects a replay's server-side evidence
	// ("replay --observe").
	Observe string
	// Lacks say, per input a finding lacked, how to provide it (for
	// example the flag --dsn).
	Lacks map[findings.Lack]string
}

// paren is " (h)", or nothing without a hint.
func paren(h string) string {
	if h == "" {
		return ""
	}
	return " (" + h + ")"
}

// skipReason is a finding's reason for not being evaluated, with the hint
// for what it lacked after its first clause: "no connection to the server
// (--dsn): plans cannot be explained".
func skipReason(s findings.Skip, h Hints) string {
	hint := h.Lacks[s.Lacks]
	if s.Lacks == "" || hint == "" {
		return s.Reason
	}
	if what, rest, ok := strings.Cut(s.Reason, ": "); ok {
		return what + paren(hint) + ": " + rest
	}
	return s.Reason + paren(hint)
}
