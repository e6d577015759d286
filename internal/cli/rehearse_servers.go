package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/connstr"
	"github.com/pgrehearse/pgrehearse/internal/rehearse"
	"github.com/pgrehearse/pgrehearse/internal/replayrun"
)

// askServers asks each target what it is and how many connections it
// has free (replayrun.AskServer); a target that does not answer is left
// out, for the pre-flight's checks of its logins to say why.
func askServers(ctx context.Context, dsn map[rehearse.Side]string) map[rehearse.Side]*replayrun.Server {
	out := map[rehearse.Side]*replayrun.Server{}
	for _, side := range []rehearse.Side{rehearse.Control, rehearse.Candidate} {
		cctx, cancel := context.WithTimeout(ctx, rehearse.CheckTimeout)
		if s, err := replayrun.AskServer(cctx, dsn[side]); err == nil {
			out[side] = s
		}
		cancel()
	}
	return out
}

// sameServerError refuses a control and a candidate that are one server
// under two spellings (replayrun.SameServer): every round would measure
// it against itself, and the verdict would be a pass whatever the change.
func sameServerError(dsn map[rehearse.Side]string, servers map[rehearse.Side]*replayrun.Server) error {
	c := servers[rehearse.Control]
	if !replayrun.SameServer(c, servers[rehearse.Candidate]) {
		return nil
	}
	who := fmt.Sprintf("port %d, started %s", c.Port, c.Started.UTC().Format(time.RFC3339Nano))
	if c.SystemID != "" {
		who = "system identifier " + c.SystemID + ", " + who
	}
	return usageError("--control %s and --candidate %s are the same server (%s): the candidate must be another target, with the change",
		shownDSN(dsn[rehearse.Control]), shownDSN(dsn[rehearse.Candidate]), who)
}

// shownDSN is a connection string as it may be printed: without its
// password.
func shownDSN(s string) string {
	rest, _, err := connstr.WithoutPassword(s)
	if err != nil {
		return "(a connection string with an sslpassword)"
	}
	return fmt.Sprintf("%q", rest)
}

// scanPeak reads the logs for their peak of sessions open at once, for
// at most replayrun.PreflightScan, as a replay's pre-flight does: nil
// when the input is standard input, which is read once, or cannot be
// read (the first round says why).
func (r *rehearseRun) scanPeak(ctx context.Context) *replayrun.Scanned {
	if r.replay.Input != nil && r.replay.Input.Stdin() {
		return nil
	}
	sctx, cancel := context.WithTimeout(ctx, replayrun.PreflightScan)
	defer cancel()
	sc, err := replayrun.Scan(sctx, r.replay)
	if err != nil {
		return nil
	}
	return sc
}
