package judge

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/results/resultstest"
)

// analysis is one replay's result: what the findings read.
func analysis(t *testing.T) *results.Result {
	return resultstest.Replay(t, "one", nil, resultstest.ServerRows(), nil)
}

// unreachable is a server no test runs: the catalog cannot be read.
const unreachable = "host=/nonexistent-pgrehearse-socket-dir port=1 connect_timeout=1"

func TestJudgeStages(t *testing.T) {
	ctx := context.Background()
	base := []Run{NewRun(analysis(t))}
	if base[0].Workload == nil {
		t.Fatal("the analysis holds no workload for the findings")
	}
	for _, tc := range []struct {
		name     string
		cat      Catalog
		catErr   bool
		findErr  bool
		findings bool
	}{
		{name: "no catalog", findings: true},
		{name: "catalog unreachable, not required", cat: Catalog{DSN: unreachable}, catErr: true, findings: true},
		{name: "catalog unreachable, required", cat: Catalog{DSN: unreachable, Required: true}, findErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stages []Stage
			v, err := Judge(ctx, base, nil, Options{
				Findings: &FindingsOptions{Catalog: tc.cat},
				OnStage: func(s Stage, v *Verdict) error {
					stages = append(stages, s)
					if s == StageCompared && v.Comparison == nil {
						t.Error("compared without a comparison")
					}
					return nil
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			if want := []Stage{StageCompared, StageFindings}; !slices.Equal(stages, want) {
				t.Errorf("stages %v, want %v", stages, want)
			}
			if (v.CatalogErr != nil) != tc.catErr || (v.FindingsErr != nil) != tc.findErr || (v.Findings != nil) != tc.findings {
				t.Errorf("catalog error %v, findings error %v, findings %v; want %v, %v, %v",
					v.CatalogErr, v.FindingsErr, v.Findings != nil, tc.catErr, tc.findErr, tc.findings)
			}
		})
	}
}

// A stage's error stops the judging there, with the verdict so far.
func TestJudgeStageError(t *testing.T) {
	stop := errors.New("disk full")
	v, err := Judge(context.Background(), []Run{NewRun(analysis(t))}, nil, Options{
		Findings: &FindingsOptions{},
		OnStage: func(s Stage, v *Verdict) error {
			if s == StageCompared {
				return stop
			}
			t.Errorf("stage %v after the error", s)
			return nil
		},
	})
	if !errors.Is(err, stop) || v == nil || v.Comparison == nil || v.Findings != nil {
		t.Fatalf("got %v, %+v; want the stage's error and the comparison alone", err, v)
	}
}

// A run with nothing to judge is refused, unless the options allow it.
func TestJudgeRefused(t *testing.T) {
	part := resultstest.Replay(t, "empty", map[string]any{"statements": map[string]int64{"total": 0}}, nil, nil)
	if _, err := Judge(context.Background(), []Run{NewRun(part)}, nil, Options{}); !errors.Is(err, compare.ErrIncomplete) {
		t.Fatalf("err %v, want compare.ErrIncomplete", err)
	}
	v, err := Judge(context.Background(), []Run{NewRun(part)}, nil, Options{AllowIncomplete: true})
	if err != nil || v.Comparison == nil {
		t.Fatalf("allowed: %v, %+v", err, v)
	}
}
