package explain

import (
	"context"
	"slices"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/catalog"
	"github.com/pgrehearse/pgrehearse/internal/plan"
	"github.com/pgrehearse/pgrehearse/internal/redact"
)

// Options configure Run.
type Options struct {
	// ControlDSN and CandidateDSN are connection strings of the two
	// servers; an empty one means no connection to that side (the
	// control's plans may then come from its log). The database of a
	// statement replaces the DSN's.
	ControlDSN, CandidateDSN string
	// Analyze allows EXPLAIN (ANALYZE, BUFFERS) of plain SELECTs with
	// known values, which runs them (twice: the first warms the cache).
	Analyze bool
	// StatementTimeout bounds each statement sent (default 10 s);
	// LockTimeout each lock wait (default 1 s).
	StatementTimeout time.Duration
	LockTimeout      time.Duration
	// NoVerify skips re-planning the candidate with the control's
	// settings to verify which of them explain a change.
	NoVerify bool
	// Progress, when set, is called after each statement.
	Progress func(done, total int)
	// Examples, when set, gives a real execution of a fingerprint from
	// the log (results.SampleExample), or nil: a statement without
	// samples whose normalized text the servers (or the parser) refuse
	// ("interval $2", a text cut short) is explained with it instead,
	// never analyzed, its plans redacted as every plan is.
	Examples func(fingerprint string) *Sample
	// Databases map, per side, a statement's database to the one to
	// connect to instead: a rehearsal's last round's copy, which holds
	// what its replay left. The report still names the statement's.
	Databases map[Side]map[string]string
}

// Report is what Run found.
type Report struct {
	// Snapshots of each side, by database.
	Control   map[string]*Snapshot `json:"control"`
	Candidate map[string]*Snapshot `json:"candidate"`
	Outcomes  []Outcome            `json:"outcomes"`
}

// Run explains stmts on both servers and attributes each difference. It
// fails only when ctx ends; a server that cannot be reached makes
// Problems of its statements.
func Run(ctx context.Context, stmts []Statement, opts Options) (*Report, error) {
	r := &runner{opts: &opts, sessions: map[sessionKey]*sessionOrErr{}}
	defer r.closeAll(ctx)
	rep := &Report{Control: map[string]*Snapshot{}, Candidate: map[string]*Snapshot{}, Outcomes: []Outcome{}}
	for i, st := range stmts {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		rep.Outcomes = append(rep.Outcomes, r.statement(ctx, st))
		if opts.Progress != nil {
			opts.Progress(i+1, len(stmts))
		}
	}
	for k, s := range r.sessions {
		if s.s == nil {
			continue
		}
		if k.db != "" {
			// The statement's database, also where it was mapped.
			s.s.snap.Database = k.db
		}
		if k.side == Control {
			rep.Control[s.s.snap.Database] = s.s.snap
		} else {
			rep.Candidate[s.s.snap.Database] = s.s.snap
		}
	}
	return rep, ctx.Err()
}

type sessionKey struct {
	side Side
	db   string
}

type sessionOrErr struct {
	s   *session
	err error
}

type runner struct {
	opts     *Options
	sessions map[sessionKey]*sessionOrErr
}

func (r *runner) closeAll(ctx context.Context) {
	for _, s := range r.sessions {
		if s.s != nil {
			s.s.close(ctx)
		}
	}
}

// session returns the side's session on db, connecting once; nil and a
// Problem when the side has no DSN or cannot be reached.
func (r *runner) session(ctx context.Context, side Side, db string) (*session, *Problem) {
	dsn := r.opts.ControlDSN
	if side == Candidate {
		dsn = r.opts.CandidateDSN
	}
	if dsn == "" {
		return nil, &Problem{Side: side, Kind: ProblemNoConnection}
	}
	k := sessionKey{side, db}
	s := r.sessions[k]
	if s == nil {
		s = &sessionOrErr{}
		to := db
		if m, ok := r.opts.Databases[side][db]; ok {
			to = m
		}
		s.s, s.err = connect(ctx, side, dsn, to, r.opts)
		r.sessions[k] = s
	}
	if s.err != nil {
		return nil, &Problem{Side: side, Kind: ProblemConnect, Message: redact.Message(s.err.Error())}
	}
	return s.s, nil
}

// statement explains one statement on both sides.
func (r *runner) statement(ctx context.Context, st Statement) Outcome {
	out := Outcome{Fingerprint: st.Fingerprint, Database: st.Database, Query: st.Query, Verdict: NotCompared,
		Explained: []Explained{}, Causes: []Cause{}}
	if st.Database == "" && len(st.Samples) > 0 {
		st.Database = st.Samples[0].Database
		out.Database = st.Database
	}
	kind, funcs, prob := classify(st.Query)
	var example *Sample
	if prob == ProblemUnparsable && r.mayUseExample(st) {
		// A text cut short, or a normalization the parser refuses.
		if e := r.opts.Examples(st.Fingerprint); e != nil {
			if k, f, p := classify(e.Query); p == "" {
				kind, funcs, prob, example = k, f, "", e
			}
		}
	}
	if prob != "" {
		out.Problems = append(out.Problems, Problem{Side: Control, Kind: prob}, Problem{Side: Candidate, Kind: prob})
		return out
	}
	ctl, ctlProb := r.session(ctx, Control, st.Database)
	cand, candProb := r.session(ctx, Candidate, st.Database)
	if ctl == nil && st.Logged != nil {
		ctlProb = nil
	}
	for _, p := range []*Problem{ctlProb, candProb} {
		if p != nil {
			out.Problems = append(out.Problems, *p)
		}
	}

	ways := explainWays(st, ctl == nil && st.Logged != nil, example, &out)
	skip, volatileFn := r.analyzeSkips(ctx, kind, funcs, ctl, cand)

	if example != nil {
		skip[Control], skip[Candidate] = SkipExample, SkipExample
	}
	explainWay := func(w way) {
		ex := Explained{Sample: w.sample, req: w.req}
		for _, side := range []Side{Control, Candidate} {
			s := map[Side]*session{Control: ctl, Candidate: cand}[side]
			if s == nil {
				if side == Control && st.Logged != nil {
					sp := &SidePlan{Mode: ModeLogged, Plan: st.Logged}
					if !st.Logged.Analyzed {
						sp.NotAnalyzed = SkipLogged
					}
					ex.Control = sp
				}
				continue
			}
			sp, p := r.explainSide(ctx, s, w.req, skip[side], volatileFn[side])
			if p != nil {
				out.Problems = appendProblem(out.Problems, *p)
				continue
			}
			if side == Control {
				ex.Control = sp
			} else {
				ex.Candidate = sp
			}
		}
		if ex.Control != nil && ex.Candidate != nil {
			ex.Diff = plan.Compare(ex.Control.Plan, ex.Candidate.Plan)
			for _, g := range plan.Growths(ex.Control.Plan, ex.Candidate.Plan, ex.Diff) {
				if g.Grew(minGrowthMS) {
					ex.Growths = append(ex.Growths, g)
				}
			}
		}
		if ex.Control != nil || ex.Candidate != nil {
			out.Explained = append(out.Explained, ex)
		}
	}
	for _, w := range ways {
		explainWay(w)
	}
	if len(out.Explained) == 0 && example == nil && textRefused(out.Problems) && r.mayUseExample(st) {
		// The servers refused the normalized text ("syntax error at
		// or near $2", a parameter whose type cannot be inferred): a
		// real execution from the log has its values where they go.
		if e := r.opts.Examples(st.Fingerprint); e != nil {
			refused := out.Problems
			out.Problems = nil
			skip[Control], skip[Candidate] = SkipExample, SkipExample
			explainWay(way{SampleExample, exampleRequest(e)})
			if len(out.Explained) == 0 {
				out.Problems = append(refused, out.Problems...)
			} else {
				out.Generic = false
			}
		} else if out.Generic {
			out.Problems = noSample(out.Problems)
		}
	} else if len(out.Explained) == 0 && example == nil && len(st.Samples) == 0 && out.Generic && textRefused(out.Problems) {
		out.Problems = noSample(out.Problems)
	}
	main := out.Main()
	if main == nil {
		return out
	}
	out.Verdict = SamePlan
	if !main.Diff.Same {
		out.Verdict = PlanChanged
	}
	r.attribute(ctx, &out, main, ctl, cand, st.MoreWork)
	return out
}

// way is one way to explain a statement: with a sample's values, or
// generic.
type way struct {
	sample SampleRole
	req    request
}

// explainWays are the ways to explain st: each sample with its values,
// else the generic plan (or the statement itself when it has no
// parameter), of which only the first when the log's plan stands for
// the control's (logged), or example's values alone when it is given.
// out.Generic says whether the plan explained is generic.
func explainWays(st Statement, logged bool, example *Sample, out *Outcome) []way {
	var ways []way
	for _, s := range st.Samples {
		mode := ModeCustom
		if len(s.Params) == 0 {
			mode = ModeLiteral
		}
		ways = append(ways, way{s.Role, request{query: s.Query, params: s.Params, mode: mode}})
	}
	if len(ways) == 0 {
		mode := ModeGeneric
		if catalog.MaxParam(st.Query) == 0 {
			mode = ModeLiteral
		}
		out.Generic = mode == ModeGeneric
		ways = append(ways, way{"", request{query: st.Query, mode: mode}})
	}
	if logged {
		// The log's plan is the control's: one comparison, with the
		// first way for the candidate.
		ways = ways[:1]
	}
	if example != nil {
		ways = []way{{SampleExample, exampleRequest(example)}}
		out.Generic = false
	}
	return ways
}

// analyzeSkips say, per side with a session, why ANALYZE may not run
// (none when it may), decided once per statement of kind calling funcs,
// and the volatile function that stops it.
func (r *runner) analyzeSkips(ctx context.Context, kind stmtKind, funcs []string, ctl, cand *session) (map[Side]AnalyzeSkip, map[Side]string) {
	skip := map[Side]AnalyzeSkip{}
	volatileFn := map[Side]string{}
	for _, s := range []*session{ctl, cand} {
		if s == nil {
			continue
		}
		switch {
		case !r.opts.Analyze:
			skip[s.side] = SkipNotAllowed
		case kind != kindSelect:
			skip[s.side] = SkipNotSelect
		default:
			fn, err := s.volatile(ctx, funcs)
			if err != nil || fn != "" {
				skip[s.side], volatileFn[s.side] = SkipVolatile, fn
			}
		}
	}
	return skip, volatileFn
}

// noSample is the problems of a statement whose normalized text the
// servers refused and of which no execution is known: one ProblemNoSample
// a side, alike (said once), with the first server's refusal.
func noSample(ps []Problem) []Problem {
	msg := ""
	if len(ps) > 0 {
		msg = ps[0].Message
	}
	return []Problem{{Side: Control, Kind: ProblemNoSample, Message: msg}, {Side: Candidate, Kind: ProblemNoSample, Message: msg}}
}

// mayUseExample reports whether st may be explained with an example
// from the log: it has no samples of its own, no logged plan stands for
// the control's, and the caller gives examples.
func (r *runner) mayUseExample(st Statement) bool {
	return r.opts.Examples != nil && len(st.Samples) == 0 && st.Logged == nil
}

// exampleRequest explains an example with its values (custom plan), or
// its text alone when it has none.
func exampleRequest(e *Sample) request {
	mode := ModeCustom
	if len(e.Params) == 0 {
		mode = ModeLiteral
	}
	return request{query: e.Query, params: e.Params, mode: mode}
}

// textRefused reports whether every problem is the servers refusing the
// text itself: an error of the server (a syntax error) or parameters
// whose types cannot be inferred; not a connection, a timeout or a
// missing relation, which an example would not mend.
func textRefused(ps []Problem) bool {
	for _, p := range ps {
		if p.Kind != ProblemError && p.Kind != ProblemNoParams {
			return false
		}
	}
	return len(ps) > 0
}

// minGrowthMS is the least own time a node must add to count as grown
// (with no more reads, temporary blocks or spill).
const minGrowthMS = 0.5

func appendProblem(ps []Problem, p Problem) []Problem {
	if slices.Contains(ps, p) {
		return ps
	}
	return append(ps, p)
}

// explainSide explains r on s, analyzed unless skip says why not; a
// failed ANALYZE falls back to the estimate.
func (r *runner) explainSide(ctx context.Context, s *session, req request, skip AnalyzeSkip, fn string) (*SidePlan, *Problem) {
	sp := &SidePlan{Mode: req.mode, NotAnalyzed: skip, VolatileFunction: fn}
	if req.mode == ModeGeneric && r.opts.Analyze {
		sp.NotAnalyzed = SkipGeneric
	}
	req.analyze = sp.NotAnalyzed == ""
	p, err := s.explain(ctx, req)
	if err != nil && req.analyze {
		req.analyze = false
		sp.NotAnalyzed = SkipFailedRerun
		p, err = s.explain(ctx, req)
	}
	if err != nil {
		pr := problemOf(s.side, req.mode, err)
		return nil, &pr
	}
	sp.Plan = p
	return sp, nil
}
