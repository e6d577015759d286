package cli

import (
	"github.com/pgrehearse/pgrehearse/internal/report"
)

// Where a summary or a page tells the reader how to get what a result
// lacks, the reporting layer takes the words from these, each in the
// terms of the command that prints it (its pre-flight and failure texts,
// one command's each, name their flags themselves).
var (
	// findingsHints serve analyze and findings, which share the flags
	// that give the findings their server.
	findingsHints = report.Hints{Server: "--dsn", ServerCPUs: "give --server-cpus"}
	replayHints   = report.Hints{TargetLog: "--target-log", Server: "--findings-dsn"}
	// reportHints name the commands that write what report reads.
	reportHints = report.Hints{Histograms: "analyze --hist", TargetLog: "replay --target-log", Observe: "replay --observe",
		Server: "--candidate-dsn", ServerCPUs: "pgrehearse findings --server-cpus"}
)
