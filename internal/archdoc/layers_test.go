package archdoc

// A layer is a group of packages that may import each other and the
// packages of the layers before it, never those after it. The order is
// that of imports, not of the data's flow: the data flows from a source
// through events and a replay or an analysis into results, which are
// judged and rendered; the types that carry it (event, results) sit in
// the first layers because every stage imports them.
type layer struct {
	name     string
	about    string
	packages []string // paths inside the module
}

// layers places every package of the module (go list ./...). A new
// package goes into the lowest layer whose packages it may import and
// that says what it is; TestLayers fails until it has one.
var layers = []layer{
	{
		name:  "helpers",
		about: "Know nothing of workloads: they import no package of pgrehearse.",
		packages: []string{
			"internal/connstr", "internal/htmlreport", "internal/numfmt",
			"internal/outfile", "internal/pgcluster", "internal/redact",
			"internal/rawio", "internal/replay/connlog", "internal/rowdigest", "internal/sqlstate", "internal/stats",
			"internal/tailbuf", "internal/texttable", "internal/wire",
		},
	},
	{
		name:  "vocabulary",
		about: "The types that cross stages: events in, results out, plans, per-query statistics.",
		packages: []string{
			"internal/event", "internal/plan", "internal/querystats",
			"internal/results", "internal/timeline",
		},
	},
	{
		name:  "statements",
		about: "What a statement is (from PostgreSQL's parser) and which commits it waits for.",
		packages: []string{
			"internal/fingerprint", "internal/syncdep",
		},
	},
	{
		name:  "sources",
		about: "From bytes to events: server logs, captures and the proxy that records them, selection and shards.",
		packages: []string{
			"internal/batch", "internal/capture", "internal/logread", "internal/logread/prefix",
			"internal/proxy", "internal/proxy/midstream", "internal/shard", "internal/source",
		},
	},
	{
		name:  "engines",
		about: "Work on events or on a server: analysis, replay, a capture run, catalog, evidence, plans, resets.",
		packages: []string{
			"internal/analyze", "internal/capturerun", "internal/catalog",
			"internal/coord", "internal/explain", "internal/observe",
			"internal/promsink", "internal/replay", "internal/replay/targetlog",
			"internal/reset", "internal/workload",
		},
	},
	{
		name:  "judging",
		about: "Compare results and say why: the comparison and its verdict, the plans behind it, the findings; a load level's verdict against its own 1x.",
		packages: []string{
			"internal/compare", "internal/compareplans", "internal/findings", "internal/fixes", "internal/judge", "internal/stepcurve",
		},
	},
	{
		name:  "runs",
		about: "A whole run as a library: one replay, a rehearsal's rounds, a sweep, a headroom search.",
		packages: []string{
			"internal/demo", "internal/headroom", "internal/rehearse", "internal/replayrun", "internal/rounds", "internal/sweep",
			"internal/sweep/logdriver",
		},
	},
	{
		name:     "rendering",
		about:    "Every sentence and figure a person reads: text, JSON and HTML.",
		packages: []string{"internal/report", "internal/report/rehearsal"},
	},
	{
		name:     "commands",
		about:    "Flags, exit codes and the process.",
		packages: []string{"cmd/pgrehearse", "internal/cli"},
	},
	{
		name:  "tools and tests",
		about: "Benchmarks, checks, manifests and test helpers; nothing above imports them outside tests.",
		packages: []string{
			"bench/aafloors", "bench/forecast", "bench/genlog", "bench/sameheadroom", "bench/samejson", "bench/samerehearse", "deploy", "hack/samereplay",
			"internal/archdoc", "internal/fixes/fixestest", "internal/goldentest", "internal/htmlreport/htmltest", "internal/logread/logreadtest",
			"internal/pgclustertest", "internal/proctest", "internal/testgate", "internal/results/resultstest",
			"internal/sweep/sweeptest", "internal/synthlog", "internal/versionsdoc",
		},
	},
}
