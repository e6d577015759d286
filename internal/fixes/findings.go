package fixes

import (
	"slices"
	"strings"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/findings"
)

// FindingPrefix starts the name of every fix a finding recommends
// (FromFindings).
const FindingPrefix = "finding-"

// FromFindings returns the fixes that rep's findings recommend and a
// reset copy can try (findings.Fix.SQL), to run in database db (as the
// workload names it on the target), each aimed at the regressions among
// its finding's queries, largest time added first; a finding with none
// among the regressions is judged by what its fix changed (Changes),
// as the user's own. A finding whose fix cannot be tried (Untried) says
// so itself and gets none here; nor does an index on a table that a fix
// of planned creates one on already: the plans' index is the one tried.
func FromFindings(rep *findings.Report, cmpRep *compare.Report, db string, planned []Fix) []Fix {
	if rep == nil {
		return nil
	}
	var out []Fix
	for _, f := range rep.Findings {
		if f.Fix == nil || f.Fix.SQL == "" || f.Fix.Untried != "" || indexedBy(planned, f.Fix.Relation) {
			continue
		}
		name := FindingPrefix + f.ID + "-" + tidy(fileSafe(f.Subject))
		if len(name) > maxFindingName {
			name = name[:maxFindingName]
		}
		if slices.ContainsFunc(out, func(g Fix) bool { return g.Name == name }) {
			continue
		}
		fix := Fix{Name: name, Kind: Statement, Origin: OriginFinding, SQL: f.Fix.SQL, Relation: f.Fix.Relation,
			Databases: []string{db}, Fingerprints: []string{}}
		if strings.HasPrefix(f.Fix.SQL, "CREATE INDEX ") {
			fix.Kind = CreateIndex
		}
		var fps []string
		for _, q := range f.Evidence.Queries {
			fps = append(fps, q.Fingerprint)
		}
		if cmpRep != nil {
			for _, fp := range slices.Concat(cmpRep.RegressionsByAddedTime, cmpRep.MoreWork) {
				if q := cmpRep.Query(fp); q != nil && slices.Contains(fps, fp) && !slices.Contains(fix.Fingerprints, fp) {
					fix.Fingerprints = append(fix.Fingerprints, fp)
					fix.AddedMS += max(0, q.ImpactMS)
				}
			}
		}
		out = append(out, fix)
	}
	return out
}

// maxFindingName bounds a finding's fix's name, which names its rounds'
// files.
const maxFindingName = 80

// indexedBy reports whether a fix of planned creates an index on rel
// (schema-qualified or not).
func indexedBy(planned []Fix, rel string) bool {
	_, name, ok := strings.Cut(rel, ".")
	if !ok {
		name = rel
	}
	return slices.ContainsFunc(planned, func(f Fix) bool {
		return f.Kind == CreateIndex && (f.Relation == rel || f.Relation == name)
	})
}

// tidy is a file-safe name without runs of '_' or one at either end
// ("public.jobs__state_": "public.jobs_state").
func tidy(s string) string {
	for strings.Contains(s, "__") {
		s = strings.ReplaceAll(s, "__", "_")
	}
	return strings.Trim(s, "_")
}
