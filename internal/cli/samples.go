package cli

// keepSamplesUsage is --keep-samples' one line, the same on every
// command that has it.
const keepSamplesUsage = "keep each query's slowest and median executions, with their parameter values (personal data), in the JSON: report then explains the plans made for those values rather than generic plans"

// keepSamplesHelp says in --help what --keep-samples stores.
const keepSamplesHelp = `--keep-samples keeps, in the JSON result ("samples"), each query's slowest
execution and one of median duration with their text as sent, their
parameter values, duration and database, and keeps the values in the plans
the log holds (auto_explain). report --control-dsn/--candidate-dsn then
explains each regressed query with those values: the custom plans the
servers really make. Parameter values are personal data (e-mail addresses,
names, tokens): without --keep-samples the result holds none, the plans are
generic plans made without values, and report says so.

`
