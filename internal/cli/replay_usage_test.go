package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestReplayUsageErrors: options replay refuses are usage errors (exit 2),
// found before any log is read.
func TestReplayUsageErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"/no/such.log"}, "no target"},
		{[]string{"--target", "host=/tmp", "--speed", "-1", "/no/such.log"}, "speed must be 0"},
		{[]string{"--target", "host=/tmp", "--lock-timeout", "-1s", "/no/such.log"}, "must not be negative"},
		{[]string{"--target", "host=/tmp", "--statement-timeout", "-1s", "/no/such.log"}, "must not be negative"},
		{[]string{"--dry-run", "--target-log", "x.log", "/no/such.log"}, "--target-log needs a replay that runs"},
		{[]string{"--dry-run", "--max-error-rate", "-1", "/no/such.log"}, "--max-error-rate"},
		{[]string{"--dry-run", "--start", "2024-01-02", "--end", "2024-01-01", "/no/such.log"}, "--end must be after --start"},
		{[]string{"--target", "host=/tmp", "--require-start-state", "--skip-preflight", "/no/such.log"}, "--require-start-state is checked by the pre-flight"},
		{[]string{"--dry-run", "--batch-inserts", "-1", "/no/such.log"}, "--batch-inserts must be 1 or more"},
		// A quoted pattern is expanded as rehearse's --control-log is;
		// one that matches nothing is refused before any statement.
		{[]string{"--target", "host=/tmp", "--target-log", "/no/such/dir/*.log", "/no/such.log"}, `target log "/no/such/dir/*.log" matches no file`},
	} {
		var stdout, stderr bytes.Buffer
		code := Run(context.Background(), IO{Stdout: &stdout, Stderr: &stderr}, append([]string{"replay"}, tt.args...))
		if code != ExitUsage || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("replay %v: exit %d, stderr %q; want %d and %q", tt.args, code, stderr.String(), ExitUsage, tt.want)
		}
	}
}
