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
	// Server gives the findings their server, when one lacked it (for
	// example the flag --dsn).
	Server string
	// ServerCPUs gives the findings the server's CPU count, when one
	// lacked it ("give --server-cpus").
	ServerCPUs string
}

// lack is the hint for what a finding lacked; empty when there is none.
func (h Hints) lack(l findings.Lack) string {
	switch l {
	case findings.LackServer:
		return h.Server
	case findings.LackServerCPUs:
		return h.ServerCPUs
	}
	return ""
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
	hint := h.lack(s.Lacks)
	if s.Lacks == "" || hint == "" {
		return s.Reason
	}
	if what, rest, ok := strings.Cut(s.Reason, ": "); ok {
		return what + paren(hint) + ": " + rest
	}
	return s.Reason + paren(hint)
}
