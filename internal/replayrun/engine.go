package replayrun

import (
	"github.com/pgrehearse/pgrehearse/internal/replay"
	"github.com/pgrehearse/pgrehearse/internal/replay/targetlog"
	"github.com/pgrehearse/pgrehearse/internal/syncdep"
)

// The names of the replay engine (package replay), of its target's log
// (replay/targetlog) and of the commit order (syncdep) that a command
// configures a run with and renders it by, so that it does so without
// importing the engine: a Config's Replay is an Options, its OnStart is
// given the Replayer, a pre-flight's checks are Checks.
type (
	Options    = replay.Options
	Replayer   = replay.Replayer
	Progress   = replay.Progress
	SampleSink = replay.SampleSink
	Login      = replay.Login
	Check      = replay.Check
	Problem    = replay.Problem
	// SyncMode is how a replay keeps the commit order (Options.Sync).
	SyncMode = syncdep.Mode
	// TargetLogError is an error of the target's own log
	// (Config.TargetLogs).
	TargetLogError = targetlog.Error
)

// The engine's defaults and bounds.
const (
	DefaultLookahead   = replay.DefaultLookahead
	DefaultBudget      = replay.DefaultBudget
	DefaultGrace       = replay.DefaultGrace
	DefaultIOTimeout   = replay.DefaultIOTimeout
	DefaultErrorWindow = replay.DefaultErrorWindow
	DefaultSyncTimeout = replay.DefaultSyncTimeout
	SyncWaitLimit      = replay.SyncWaitLimit
	// TargetLogSettings are the settings a target's log needs to give
	// server-side durations.
	TargetLogSettings = targetlog.Settings
)

// Why a pre-flight check failed (Check.Problem).
const (
	ProblemNone        = replay.ProblemNone
	ProblemConfig      = replay.ProblemConfig
	ProblemUnreachable = replay.ProblemUnreachable
	ProblemAuth        = replay.ProblemAuth
	ProblemNoRole      = replay.ProblemNoRole
	ProblemNoDatabase  = replay.ProblemNoDatabase
	ProblemTooMany     = replay.ProblemTooMany
	ProblemNotReady    = replay.ProblemNotReady
	ProblemNoPrivilege = replay.ProblemNoPrivilege
)

// The synchronization modes (SyncMode).
const (
	SyncObject  = syncdep.Object
	SyncOff     = syncdep.Off
	SyncLoad    = syncdep.Load
	SyncAnswers = syncdep.Answers
)

// ParseMap reads a user or database map's FROM=TO pairs;
// ParseSyncMode a synchronization mode's name; ProblemOf the problem of
// a refused login from its SQLSTATE and message; CheckTargetLog what a
// target's settings lack for its log to give server-side durations.
var (
	ParseMap       = replay.ParseMap
	ParseSyncMode  = syncdep.ParseMode
	ProblemOf      = replay.ProblemOf
	CheckTargetLog = targetlog.Check
)

// ServerProblem reports whether p is the server's, whatever the login:
// nothing answers at its address, or it is not ready. Such a server
// refuses every login alike.
func ServerProblem(p Problem) bool {
	return p == ProblemUnreachable || p == ProblemNotReady
}
