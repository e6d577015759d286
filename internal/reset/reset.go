package reset

import (
	"context"
	"fmt"
	"io"
	"maps"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
)

// Mode is a way of resetting a target.
type Mode string

// Modes.
const (
	// ModeTemplate: each database is copied from a pristine template
	// before the round and dropped after it.
	ModeTemplate Mode = "template"
	// ModeCommand: the user's command resets the target.
	ModeCommand Mode = "command"
	// ModeNone: nothing is reset; the state drifts from round to round.
	ModeNone Mode = "none"
	// ModeDataDir: a throwaway cluster's data directory is restored
	// from a copy.
	ModeDataDir Mode = "datadir"
)

// Valid reports whether m is a known mode.
func (m Mode) Valid() bool {
	switch m {
	case ModeTemplate, ModeCommand, ModeNone, ModeDataDir:
		return true
	}
	return false
}

// ParseMode reads a mode a user may name: template, none, or datadir
// (for throwaway clusters only, whose directories the caller must then
// name). A command reset is given by its command.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeTemplate, ModeNone, ModeDataDir:
		return m, nil
	}
	return "", fmt.Errorf("unknown reset %q: use template, none or datadir", s)
}

// State is what one reset did, for the round that follows it.
type State struct {
	Mode Mode `json:"mode"`
	// Round is the target's round the reset was for, from 1.
	Round int `json:"round"`
	// Databases maps a database of the target to the fresh copy the
	// round must use instead (template resets only).
	Databases map[string]string `json:"databases,omitempty"`
	// Drifted: the target was not returned to its starting state, so
	// the round starts from what the rounds before it left.
	Drifted bool `json:"drifted,omitempty"`
	// Seconds is how long the reset took.
	Seconds float64 `json:"seconds"`
}

// Resetter returns one target to its starting state. A rehearsal calls
// Prepare once, then Reset before and Release after each of the target's
// rounds, and Close once at the end, also after an error or an
// interruption (with a context that is not cancelled).
type Resetter interface {
	Mode() Mode
	// Prepare records the starting state: the target as it is now.
	Prepare(ctx context.Context) error
	// Reset returns the target to the starting state before its round
	// (counted from 1).
	Reset(ctx context.Context, round int) (State, error)
	// Release undoes what Reset made for the round once the round is
	// over (the template reset drops the round's copies).
	Release(ctx context.Context, st State) error
	// Close removes what Prepare made.
	Close(ctx context.Context) error
}

// since returns the seconds elapsed since t.
func since(t time.Time) float64 { return time.Since(t).Seconds() }

// None leaves the target as it is: for workloads that do not write, or
// when drift is accepted. Every round after the first is marked drifted.
type None struct{}

// Mode is ModeNone.
func (None) Mode() Mode { return ModeNone }

// Prepare does nothing.
func (None) Prepare(context.Context) error { return nil }

// Reset does nothing and says, from the second round on, that the state
// drifted.
func (None) Reset(_ context.Context, round int) (State, error) {
	return State{Mode: ModeNone, Round: round, Drifted: round > 1}, nil
}

// Release does nothing.
func (None) Release(context.Context, State) error { return nil }

// Close does nothing.
func (None) Close(context.Context) error { return nil }

// DatabaseMap is the database map of the round that follows the reset:
// the user's map (logged database to target database) followed by the
// reset's copies, so that a logged database goes where the user's map
// sends it, and from there to its copy.
func (s State) DatabaseMap(user map[string]string) map[string]string {
	copies := s.Databases
	if len(copies) == 0 {
		return maps.Clone(user)
	}
	m := make(map[string]string, len(user)+len(copies))
	for from, to := range user {
		if c, ok := copies[to]; ok {
			to = c
		}
		m[from] = to
	}
	for db, c := range copies {
		if _, ok := user[db]; !ok {
			m[db] = c
		}
	}
	return m
}

// Target is what a reset of any mode needs of one target: its
// connection string, the databases the template reset copies, the
// command of a command reset (named Name, writing to Output), the
// throwaway cluster of a data-directory reset.
type Target struct {
	DSN       string
	Databases []string
	Command   string
	Name      string
	Output    io.Writer
	Cluster   *pgcluster.Cluster
}

// For is the reset of mode for t: None for ModeNone or a mode it does
// not know.
func For(mode Mode, t Target) Resetter {
	switch mode {
	case ModeTemplate:
		return &Template{DSN: t.DSN, Databases: t.Databases}
	case ModeCommand:
		return &Command{Command: t.Command, DSN: t.DSN, Name: t.Name, Output: t.Output}
	case ModeDataDir:
		return &DataDir{Cluster: t.Cluster}
	}
	return None{}
}
