package shard

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
)

// PlanVersion is the version of the plan's JSON form that Encode writes
// and Decode reads (docs/shard-plan-json.md).
const PlanVersion = 1

// PlanKind marks a file as a shard plan.
const PlanKind = "pgrehearse-shard-plan"

// Plan says which shard replays each session of a log.
type Plan struct {
	Version int    `json:"version"`
	Kind    string `json:"kind"`
	// ID names the plan: a hash of its shard count, input and sessions,
	// so that two plans with the same split have the same id.
	ID     string `json:"id"`
	Shards int    `json:"shards"`
	// Input is the log the plan was made from.
	Input Input `json:"input"`
	// Loads is what each shard was given, in shard order.
	Loads []Load `json:"loads"`
	// Dependencies are the sync dependencies between sessions that the
	// read found, and how many cross shards.
	Dependencies Dependencies `json:"dependencies"`
	// Hashed counts the sessions beyond Options.MaxSessions, placed by
	// Of and not listed in Sessions.
	Hashed int64 `json:"hashed_sessions,omitempty"`
	// Forced counts the sessions placed by Options.Force.
	Forced int `json:"forced_sessions,omitempty"`
	// Sessions maps each listed session id to its shard. A session not
	// listed goes to Of(id, Shards).
	Sessions map[string]int `json:"sessions"`
}

// Input names the logs a plan was made from: every shard must replay the
// same ones.
type Input struct {
	Files []File `json:"files"`
}

// File is one log: its name as given, its size, and a hash of its first
// and last bytes (see FileHash), which tells a copy of the same log from
// another one without reading it all.
type File struct {
	Name string `json:"name"`
	Size int64  `json:"size"`
	Hash string `json:"head_tail_sha256,omitempty"`
}

// Load is the work given to one shard.
type Load struct {
	Shard      int   `json:"shard"`
	Sessions   int64 `json:"sessions"`
	Statements int64 `json:"statements"`
	// BusyMS is the server time of its statements in the log, ms.
	BusyMS float64 `json:"busy_ms"`
	// Share is its part of the whole, by the measure the plan balances
	// (the mean of its shares of statements and of busy time).
	Share float64 `json:"share"`
}

// Dependencies counts sync dependencies: a statement that reaches a
// relation whose last commit in the log, before the statement started,
// was another session's. The waits of a synchronized replay follow them.
type Dependencies struct {
	Total int64 `json:"total"`
	// Cross counts those whose two sessions are in different shards,
	// CrossShare their share of Total (0 when there are none).
	Cross      int64   `json:"cross_shard"`
	CrossShare float64 `json:"cross_shard_share"`
	// HashCrossShare is the share that a split by hash (Of) would have
	// left across shards, for comparison.
	HashCrossShare float64 `json:"hash_cross_shard_share"`
	// Untracked counts dependencies beyond Options.MaxEdges between
	// sessions the plan placed: they are in Total but neither in Cross
	// nor out of it.
	Untracked int64 `json:"untracked,omitempty"`
}

// ShardOf returns the shard of a session: its place in the plan, else
// Of(sessionID, p.Shards).
func (p *Plan) ShardOf(sessionID string) int {
	if k, ok := p.Sessions[sessionID]; ok {
		return k
	}
	return Of(sessionID, p.Shards)
}

// Assign returns the shard of a session the plan lists, and false for one
// it does not (which then goes to Of): the form a session selector takes.
func (p *Plan) Assign(sessionID string) (int, bool) {
	k, ok := p.Sessions[sessionID]
	return k, ok
}

// Encode writes the plan as indented JSON.
func (p *Plan) Encode(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(p)
}

// ErrNotPlan is returned by Decode for JSON that is not a shard plan.
var ErrNotPlan = errors.New("not a pgrehearse shard plan")

// Decode reads a plan written by Encode and checks it: known version,
// every session in a shard that exists, and an id that matches the
// content (a plan edited by hand must get a new id, or two shards could
// replay different splits under one name).
func Decode(r io.Reader) (*Plan, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var p Plan
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotPlan, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: more than one JSON value", ErrNotPlan)
	}
	if p.Kind != PlanKind {
		return nil, fmt.Errorf("%w: its kind is %q", ErrNotPlan, p.Kind)
	}
	if p.Version != PlanVersion {
		return nil, fmt.Errorf("shard plan version %d: this pgrehearse reads version %d; make the plan again with it", p.Version, PlanVersion)
	}
	if p.Shards < 1 {
		return nil, fmt.Errorf("shard plan: %d shards", p.Shards)
	}
	for id, k := range p.Sessions {
		if k < 0 || k >= p.Shards {
			return nil, fmt.Errorf("shard plan: session %q is in shard %d of %d", id, k, p.Shards)
		}
	}
	if p.Sessions == nil {
		p.Sessions = map[string]int{}
	}
	if want := p.contentID(); p.ID != want {
		return nil, fmt.Errorf("shard plan: its id %q does not match its content (%q): it was edited; make it again", p.ID, want)
	}
	return &p, nil
}

// contentID hashes what decides the split: the shard count, the input,
// and every session's shard.
func (p *Plan) contentID() string {
	h := sha256.New()
	fmt.Fprintf(h, "v%d\nshards %d\n", PlanVersion, p.Shards)
	for _, f := range p.Input.Files {
		fmt.Fprintf(h, "file %q %d %s\n", f.Name, f.Size, f.Hash)
	}
	var b bytes.Buffer
	for _, id := range slices.Sorted(maps.Keys(p.Sessions)) {
		b.Reset()
		fmt.Fprintf(&b, "%q %d\n", id, p.Sessions[id])
		h.Write(b.Bytes())
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
