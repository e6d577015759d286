package report

import (
	"github.com/pgrehearse/pgrehearse/internal/fixes"
	"github.com/pgrehearse/pgrehearse/internal/rehearse"
)

// RehearsalJSON is what rehearse --json writes: the comparison as report
// --json writes it with its plans and findings (none when a side
// finished no round), the rehearsal's index, and the fixes tried.
type RehearsalJSON struct {
	VerdictJSON
	Rehearsal *rehearse.Outcome `json:"rehearsal"`
	// Fixes are the fixes tried and their verdicts (docs/fix-rounds.md).
	Fixes []fixes.Outcome `json:"fixes,omitempty"`
}

// RehearsalDocument words a rehearsal's judgement (rehearse.Judge) for
// its JSON form.
func RehearsalDocument(j *rehearse.Judgement) RehearsalJSON {
	doc := RehearsalJSON{Rehearsal: j.Outcome, Fixes: j.Fixes}
	if j.Verdict != nil {
		doc.VerdictJSON = VerdictDocument(j.Verdict)
	}
	return doc
}
