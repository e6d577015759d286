package replayrun

import (
	"context"
	"errors"
	"os"
	"slices"
	"time"

	capfile "github.com/pgrehearse/pgrehearse/internal/capture"
	"github.com/pgrehearse/pgrehearse/internal/catalog"
	"github.com/pgrehearse/pgrehearse/internal/replay"
	"github.com/pgrehearse/pgrehearse/internal/replay/targetlog"
	"github.com/pgrehearse/pgrehearse/internal/source"
)

// Preflight is what the pre-flight found before the replay: whether the
// target takes the replay's logins, which destructive statements the log
// holds, whether the target's log files can be read.
type Preflight struct {
	// Checks are the logins checked, in order of first appearance; Own
	// is the index of the target DSN's own login among them, -1 when it
	// was not checked apart. OwnNeeded: the run needs the DSN's own login
	// (the target log's end marker), so its failure fails the pre-flight;
	// otherwise only the evidence is lost.
	Checks    []replay.Check
	Own       int
	OwnNeeded bool
	// TargetLogs are the target's log files that cannot be read, with
	// why (os.ErrNotExist for a missing one).
	TargetLogs []FileProblem
	// LogSettings are the settings the target's log lacks to give
	// server-side durations (targetlog.Check), each with what to set:
	// without them the replay would run whole before its log is found
	// wanting.
	LogSettings []string
	// Destructive counts the destructive statements of the part of the
	// logs read, by kind; Complete says the logs were read whole.
	Destructive map[string]int64
	Complete    bool
	Took        time.Duration

	// StartState is the starting point the input's captures recorded,
	// from the capture StartFrom; nil for logs, and for captures taken
	// without a monitoring connection. StartCheck is the target compared
	// with it (nil when not compared), StartErr why it could not be.
	StartState *capfile.StartState
	StartFrom  string
	StartCheck *catalog.StartCheck
	StartErr   error
	// Digests are the target's table digests, read on the ranges of
	// those StartState stored (nil without them, or when they could
	// not be read: DigestErr); DigestDiffs the tables that differ,
	// proven or not (catalog.DigestDiff.Proven).
	Digests     *capfile.TableDigests
	DigestErr   error
	DigestDiffs []catalog.DigestDiff

	// Peak is the most sessions of the part of the logs read open at
	// once (replay.Scan's, times Options.Multiply), PeakAt when (log
	// time, µs since the epoch). Server is what the target said of its
	// connection slots before the logins were checked; nil when it
	// could not be asked (ServerErr says why) or was not.
	// SlotsIgnored: IgnoreConnectionLimit, too few slots only warn.
	Peak         int
	PeakAt       int64
	Server       *Server
	ServerErr    error
	SlotsIgnored bool
}

// TooFewSlots reports whether the target has fewer free connection
// slots than the replay will hold connections at its peak.
func (p *Preflight) TooFewSlots() bool {
	return p.Server != nil && p.Peak > p.Server.FreeSlots()
}

// FileProblem is a file that cannot be read, and why.
type FileProblem struct {
	Path string
	Err  error
}

// Failed reports whether the target does not take the replay's
// connections: the replay would fail, so it is not started.
func (p *Preflight) Failed() bool {
	if len(p.TargetLogs) > 0 || len(p.LogSettings) > 0 || p.TooFewSlots() && !p.SlotsIgnored {
		return true
	}
	for i, c := range p.Checks {
		if c.Problem != replay.ProblemNone && (i != p.Own || p.OwnNeeded || len(p.Checks) == 1) {
			return true
		}
	}
	return false
}

// Accepted counts the logins the target accepted.
func (p *Preflight) Accepted() int {
	n := 0
	for _, c := range p.Checks {
		if c.Problem == replay.ProblemNone {
			n++
		}
	}
	return n
}

// PreflightError is Run's error when the pre-flight failed: nothing was
// replayed.
type PreflightError struct{ Preflight *Preflight }

func (e *PreflightError) Error() string {
	return "pre-flight failed: the target does not take the replay's connections; nothing was replayed"
}

// InterruptedError is Run's error when its context ended (Ctrl-C,
// SIGTERM) during the pre-flight: the checks the interruption cut short
// are not the target's refusal. Nothing was replayed.
type InterruptedError struct{ Err error }

func (e *InterruptedError) Error() string {
	return "interrupted during the pre-flight; nothing was replayed"
}

func (e *InterruptedError) Unwrap() error { return e.Err }

// preflight checks, before the schedule starts, that the target takes the
// connections the replay will make: every login of the logs' beginning
// (the selection and maps applied), and the target DSN's own login when
// something else connects with it (the observer, the target log's
// marker).
func preflight(ctx context.Context, cfg Config, r *replay.Replayer, set *source.Set, ahead *source.Lookahead) (*Preflight, error) {
	start := time.Now()
	pf := &Preflight{Own: -1, OwnNeeded: len(cfg.TargetLogs) > 0}
	var logins []replay.Login
	if cfg.Input != nil && cfg.Input.Stdin() {
		// Only what was read of standard input is kept; its logins are
		// checked as its sessions connect.
		pf.Complete = false
	} else {
		scan, cancel := context.WithTimeout(ctx, PreflightScan)
		sc, err := r.Scan(scan, ahead.First(), 0)
		cancel()
		if err != nil && !errors.Is(err, source.ErrLookaheadFull) {
			return nil, err
		}
		logins, pf.Complete, pf.Destructive = sc.Logins, sc.Complete, sc.Destructive
		pf.Peak, pf.PeakAt = sc.Peak*max(1, cfg.Replay.Multiply), sc.PeakAt
	}
	if pf.Peak > 0 {
		// Asked before the logins' checks, whose connections would
		// count as in use while they close.
		ask, cancel := context.WithTimeout(ctx, PreflightTimeout)
		pf.Server, pf.ServerErr = AskServer(ask, cfg.Replay.Target)
		cancel()
		pf.SlotsIgnored = cfg.IgnoreConnectionLimit
	}
	// The DSN's own login: the target log's marker needs it (without it
	// the server-side durations are lost after the whole replay ran); the
	// observer's evidence is only lost.
	if (cfg.Observe != nil || len(cfg.TargetLogs) > 0 || len(logins) == 0) && !slices.Contains(logins, replay.Login{}) {
		pf.Own = len(logins)
		logins = append(logins, replay.Login{})
	}
	for _, p := range cfg.TargetLogs {
		if err := readable(p); err != nil {
			pf.TargetLogs = append(pf.TargetLogs, FileProblem{Path: p, Err: err})
		}
	}
	pf.Checks = r.Preflight(ctx, logins, PreflightTimeout)
	if own := slices.Index(logins, replay.Login{}); len(cfg.TargetLogs) > 0 && own >= 0 && pf.Checks[own].Problem == replay.ProblemNone {
		// The DSN's own login works: it reads the settings.
		check, cancel := context.WithTimeout(ctx, PreflightTimeout)
		missing, err := targetlog.Check(check, cfg.Replay.Target)
		cancel()
		if err != nil {
			missing = []string{err.Error()}
		}
		pf.LogSettings = missing
	}
	if pf.Failed() {
		pf.Took = time.Since(start)
		return nil, &PreflightError{Preflight: pf}
	}
	if cfg.StartCheck != StartCheckSkip {
		checkStart(ctx, cfg, set, logins, pf)
	}
	pf.Took = time.Since(start)
	if pf.startFailed(cfg.StartCheck) {
		return nil, &StartStateError{Preflight: pf}
	}
	if len(catalog.ProvenDiffs(pf.DigestDiffs)) > 0 {
		return nil, &DataDiffersError{Preflight: pf}
	}
	r.SetStartProven(provenTables(cfg, pf, logins))
	return pf, nil
}

// readable reports why a file cannot be read.
func readable(path string) error {
	fh, err := os.Open(path)
	if err != nil {
		return err
	}
	return fh.Close()
}

// CheckLogins connects to target as each of logins (a Scan's), with cfg's
// replay options (maps, timeouts), as a round's pre-flight does, and
// returns the checks that failed: for a caller that checks several
// targets before any round, all at once.
func CheckLogins(ctx context.Context, cfg Config, target string, logins []replay.Login) ([]replay.Check, error) {
	opts := cfg.Replay
	opts.Target = target
	r, err := replay.New(opts)
	if err != nil {
		return nil, &OptionsError{Err: err}
	}
	var failed []replay.Check
	for _, c := range r.Preflight(ctx, logins, PreflightTimeout) {
		if c.Problem != replay.ProblemNone {
			failed = append(failed, c)
		}
	}
	return failed, nil
}
