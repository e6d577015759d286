package findings

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/pgrehearse/pgrehearse/internal/catalog"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// Severity ranks findings.
type Severity string

// Severities, from least to most urgent.
const (
	Info     Severity = "info"
	Warning  Severity = "warning"
	Critical Severity = "critical"
)

func (s Severity) rank() int {
	switch s {
	case Critical:
		return 2
	case Warning:
		return 1
	}
	return 0
}

// Finding ids. They are part of the output and never change meaning.
const (
	IDBatchInserts  = "batch-inserts"
	IDMissingIndex  = "missing-index"
	IDPlanningHeavy = "planning-heavy"
	IDHotQueryID    = "hot-queryid"
	IDRandomKeys    = "random-keys"
	IDQueue         = "queue-without-skip-locked"
	IDErrors        = "errors"
	IDReplayOrder   = "replay-order"
	// IDNoStatistics: big tables the workload touches without planner
	// statistics on the server (never analyzed, or upgraded without
	// them), where plans may differ until ANALYZE.
	IDNoStatistics = "no-statistics"
)

// IDs lists every finding id in the order findings are evaluated.
var IDs = []string{IDBatchInserts, IDMissingIndex, IDPlanningHeavy, IDHotQueryID, IDRandomKeys, IDQueue, IDNoStatistics, IDErrors, IDReplayOrder}

// Finding is one trap the workload falls into.
type Finding struct {
	ID       string   `json:"id"`
	Severity Severity `json:"severity"`
	// Subject is what the finding is about (a table, a fingerprint),
	// which tells apart several findings of one id.
	Subject        string   `json:"subject"`
	Title          string   `json:"title"`
	Summary        string   `json:"summary"`
	Evidence       Evidence `json:"evidence"`
	Recommendation string   `json:"recommendation"`
	// Model is set when the finding estimates rather than observes.
	Model *Model `json:"model,omitempty"`
	// Fix is the recommendation's change as a rehearsal's fix rounds
	// can try it, or why they cannot; nil for a finding that suggests
	// no change of the workload or the schema (errors, replay order).
	Fix *Fix `json:"fix,omitempty"`
}

// Evidence is what a finding rests on.
type Evidence struct {
	Figures []Figure   `json:"figures,omitempty"`
	Queries []QueryRef `json:"queries,omitempty"`
	Tables  []Table    `json:"tables,omitempty"`
	Notes   []string   `json:"notes,omitempty"`
}

// Figure is a named number; Text is how it is shown.
type Figure struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit,omitempty"`
	Text  string  `json:"text"`
}

// QueryRef names a query by fingerprint and normalized text.
type QueryRef struct {
	Fingerprint string  `json:"fingerprint"`
	Query       string  `json:"query"`
	Calls       int64   `json:"calls"`
	TotalMS     float64 `json:"total_ms"`
	CallsPerS   float64 `json:"calls_per_s,omitempty"`
}

// Table is a small table of evidence.
type Table struct {
	Title string     `json:"title"`
	Head  []string   `json:"head"`
	Rows  [][]string `json:"rows"`
}

// Model states how a finding estimates: the rule, its inputs and where
// its constants come from.
type Model struct {
	Rule   string   `json:"rule"`
	Inputs []Figure `json:"inputs"`
	Source string   `json:"source"`
}

// Skip says why a finding was not evaluated.
type Skip struct {
	ID string `json:"id"`
	// Lacks is the input whose absence stopped it, when one did; the
	// Reason then starts with what is missing, up to its first ": ".
	Lacks  Lack   `json:"lacks,omitempty"`
	Reason string `json:"reason"`
}

// Lack is an input a finding needed and did not get. A Skip names it so
// that its caller can say how to provide it (a flag of its command): this
// package does not know how its inputs are given.
type Lack string

// Inputs a finding can lack.
const (
	// LackServer: no connection to the server the workload ran on
	// (Input.Catalog, Input.Explainer).
	LackServer Lack = "server"
	// LackServerCPUs: the server's CPU count (Input.ServerCPUs).
	LackServerCPUs Lack = "server_cpus"
)

// Report is the result of Evaluate.
type Report struct {
	Kind     string    `json:"kind"` // always "findings"
	Workload string    `json:"workload,omitempty"`
	Findings []Finding `json:"findings"`
	// NotEvaluated lists findings that lacked an input, or parts of
	// them (a query that could not be explained).
	NotEvaluated []Skip `json:"not_evaluated"`
	// Thresholds are those the evaluation used; the JSON name is the one
	// they had when they were all options.
	Thresholds Thresholds `json:"options"`
}

// Count returns the number of findings of severity s.
func (r *Report) Count(s Severity) int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity == s {
			n++
		}
	}
	return n
}

// Explainer is what missing-index needs of a server; *catalog.Explainer
// is one.
type Explainer interface {
	Explain(ctx context.Context, r catalog.Request) (*catalog.Explained, error)
	Hypothetical(ctx context.Context, r catalog.Request, ddl string) (*catalog.Hypo, error)
}

// Input is what findings are evaluated on. Only Workload is required.
type Input struct {
	Workload *Workload
	// Baseline, when set, is the run Workload is compared with
	// (report): errors then lists statements that failed only in
	// Workload.
	Baseline *Workload
	// Observed is what an EventSampler saw in the events of Workload's
	// logs, or what its result's samples give (ObservedFromResult).
	Observed *Observed
	// Examples, when set, gives a real execution of a fingerprint read
	// from the workload's logs (nil when there is none), for a statement
	// Observed has no sample of and whose normalized text the server
	// refuses ("interval $3"): its plan is made with it, and redacted,
	// for its values are not to be kept.
	Examples func(fingerprint string) *results.Sample
	// Catalog and Explainer come from a connection to the server.
	Catalog   *catalog.Catalog
	Explainer Explainer
	// ServerCPUs is the server's CPU count, 0 when unknown;
	// CPUSource says, in the caller's words, where it comes from (an
	// option, "local server: this machine's CPU count").
	ServerCPUs int
	CPUSource  string
	// Batched, when set, is what batching the single-row INSERTs saved,
	// measured in rounds (judge.BatchInserts): the batch-inserts
	// finding then says it.
	Batched *BatchMeasure
}

// ErrInterrupted is Evaluate's error when its context ended during the
// evaluation (a Ctrl-C): the checks that needed the server then failed
// and say "not evaluated", so the report is not whole and must not be
// shown as if it were.
var ErrInterrupted = errors.New("interrupted while evaluating the findings: they are incomplete and left out")

// Evaluate evaluates every finding on in. When ctx ends during the
// evaluation it returns what was evaluated with an error wrapping
// ErrInterrupted.
func Evaluate(ctx context.Context, in Input, opts Options) (*Report, error) {
	th := opts.thresholds()
	r := &Report{Kind: "findings", Findings: []Finding{}, NotEvaluated: []Skip{}, Thresholds: th}
	if in.Workload == nil {
		in.Workload = &Workload{}
	}
	r.Workload = in.Workload.Name
	e := &eval{ctx: ctx, in: in, th: th, report: r}
	e.batchInserts()
	e.missingIndex()
	e.planningHeavy()
	e.hotQueryID()
	e.randomKeys()
	e.queue()
	e.noStatistics()
	e.errors()
	slices.SortStableFunc(r.Findings, func(a, b Finding) int {
		return cmp.Compare(b.Severity.rank(), a.Severity.rank())
	})
	if err := ctx.Err(); err != nil {
		return r, fmt.Errorf("%w (%w)", ErrInterrupted, err)
	}
	return r, nil
}

// eval carries one evaluation.
type eval struct {
	ctx    context.Context
	in     Input
	th     Thresholds
	report *Report
}

// minSharePct is the least share of the workload's time a finding with
// one must weigh to be more than info: a trap that costs the workload
// almost nothing is worth knowing, not a warning.
const minSharePct = 1.0

func (e *eval) add(f Finding) {
	if share, ok := f.Figure("share_of_total_time_pct"); ok && share.Value < minSharePct && f.Severity != Info {
		f.Evidence.Notes = append(f.Evidence.Notes, fmt.Sprintf("info rather than %s: %.1f%% of the workload's time, under %g%%", f.Severity, share.Value, minSharePct))
		f.Severity = Info
	}
	e.report.Findings = append(e.report.Findings, withFix(f))
}
func (e *eval) skip(id, reason string) {
	e.report.NotEvaluated = append(e.report.NotEvaluated, Skip{ID: id, Reason: reason})
}

// lacking skips id for want of an input: reason says what the finding
// could not do without it.
func (e *eval) lacking(id string, lack Lack, reason string) {
	what := map[Lack]string{LackServer: "no connection to the server", LackServerCPUs: "server CPU count unknown"}[lack]
	e.report.NotEvaluated = append(e.report.NotEvaluated, Skip{ID: id, Lacks: lack, Reason: what + ": " + reason})
}
func (e *eval) w() *Workload                             { return e.in.Workload }
func (e *eval) ref(q *Query) QueryRef                    { return e.w().ref(q) }
func (e *eval) table(schema, name string) *catalog.Table { return e.in.Catalog.Table(schema, name) }
