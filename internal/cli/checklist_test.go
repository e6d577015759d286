package cli

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/rehearse"
	"github.com/pgrehearse/pgrehearse/internal/replay"
	"github.com/pgrehearse/pgrehearse/internal/report"
)

// TestCheckTargetsInterrupted: Ctrl-C during the targets' checks makes
// every login fail alike, which is not the targets' lack: the answer is
// INTERRUPTED with exit 5, not a PRE-FLIGHT FAILED that sends the user
// to fix servers that were never asked. A cancelled context fails each
// login before it dials, so no server is needed to force it.
func TestCheckTargetsInterrupted(t *testing.T) {
	dsn := map[rehearse.Side]string{
		rehearse.Control:   "host=127.0.0.1 port=1 user=app dbname=app connect_timeout=5",
		rehearse.Candidate: "host=127.0.0.1 port=1 user=app dbname=app connect_timeout=5",
	}
	need := rehearse.Needs{Template: true, Databases: []string{"app"}, Logins: []replay.Login{{User: "app", Database: "app"}, {User: "report", Database: "app"}}}
	for _, tc := range []struct {
		name     string
		cancel   bool
		wantCode int
		want     string
	}{
		{"interrupted", true, ExitIncomplete, "INTERRUPTED: during the targets' pre-flight; nothing was replayed"},
		// The same targets, not interrupted: nothing listens on port 1,
		// which is the targets' lack, said once per target.
		{"refused", false, 1, "PRE-FLIGHT FAILED: what the targets need"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancel {
				cancel()
			}
			var stderr bytes.Buffer
			err := checkTargets(ctx, IO{Stdout: &bytes.Buffer{}, Stderr: &stderr}, need, dsn, report.LoginHints{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("checkTargets: %v, want %q", err, tc.want)
			}
			code := 1
			var ee *exitError
			if errors.As(err, &ee) {
				code = ee.code
			}
			if code != tc.wantCode {
				t.Errorf("exit code %d, want %d (%v)", code, tc.wantCode, err)
			}
			if tc.cancel && strings.Contains(err.Error(), "the control target") {
				t.Errorf("an interruption blames the targets: %v", err)
			}
		})
	}
}
