package findings

// Fix is the change a finding suggests, as a rehearsal can try it in fix
// rounds on a reset copy of the candidate (package fixes), or why it
// cannot be.
type Fix struct {
	// SQL is the change, to run as given in the copy of the workload's
	// database; empty when the fix cannot be tried (Untried).
	SQL string `json:"sql,omitempty"`
	// Relation is the table it changes, schema-qualified.
	Relation string `json:"relation,omitempty"`
	// Untried says why the fix cannot be tried on a copy: it changes
	// the application's statements, its data or what is measured,
	// while fix rounds replay the same traffic onto a copy of the
	// same data.
	Untried string `json:"untried,omitempty"`
}

// untriedFixes are, by finding id, why the fix a finding of that id
// recommends cannot be tried on a copy.
var untriedFixes = map[string]string{
	IDBatchInserts: "batching changes the application's statements, which fix rounds replay as captured; " +
		"measure what it saves on this traffic with pgrehearse rehearse --batch-inserts 50, rounds replayed with and without it (docs/rehearse.md)",
	IDRandomKeys: "time-ordered keys change the application's keys and the data, and fix rounds replay the same values onto a copy of the same data",
	IDHotQueryID: "calling the statement less often changes the application, and fix rounds replay its calls as captured",
	IDQueue:      "SKIP LOCKED changes the application's statement, and fix rounds replay it as captured",
}

// untriedBatchMeasured is the batch-inserts fix once rehearse
// --batch-inserts measured it (its summary says what).
const untriedBatchMeasured = "batching changes the application's statements, which fix rounds replay as captured; " +
	"rehearse --batch-inserts measured it in rounds of its own, above"

// untriedTrackPlanning is why turning track_planning on is not tried: it
// changes what pg_stat_statements counts, not how fast anything runs.
const untriedTrackPlanning = "pg_stat_statements.track_planning changes what is measured, not how fast the statements run: a fix round has nothing to verify"

// untriedPrepared is why a planning-heavy query's fix is not tried.
const untriedPrepared = "prepared statements change how the application sends the statement, and fix rounds replay it as captured"

// withFix gives f the fix of its id when no check of its own gave it
// one: why a change of the application's cannot be tried on a copy.
func withFix(f Finding) Finding {
	if f.Fix != nil {
		return f
	}
	switch {
	case f.ID == IDPlanningHeavy && f.Subject == trackPlanningSubject:
		f.Fix = &Fix{Untried: untriedTrackPlanning}
	case f.ID == IDPlanningHeavy:
		f.Fix = &Fix{Untried: untriedPrepared}
	case untriedFixes[f.ID] != "":
		f.Fix = &Fix{Untried: untriedFixes[f.ID]}
	}
	return f
}
