// Package logread reads PostgreSQL server logs into events: sessions
// connecting and disconnecting, statements and extended-protocol
// executions with their parameters, durations and the plans auto_explain
// logged for them, and errors.
//
// It takes every log a DBA is likely to have: the server's stderr log with
// any log_line_prefix (inferred from the first lines when not given, by
// the subpackage prefix), csvlog and jsonlog, syslog in its common shapes
// (the server's "[N-M]" parts joined again), Heroku's logplex, the exports
// of Amazon RDS and Aurora (CloudWatch, S3), of Azure (diagnostic records,
// Event Hub, Log Analytics) and of Google Cloud SQL (Cloud Logging),
// compressed or not. What wraps the server's stderr lines (a syslog
// header, an ISO time column, a Cloud Logging entry, an Azure record) is
// an envelope around one stderr reader, which joins a message's lines
// whatever carried them. The format, the envelope and the prefix are
// detected from the head of the file; what could not be decided for sure
// is refused with an error that says why (ErrUnknownPrefix,
// ErrAmbiguousPrefix, ErrNotEnglish, ErrPgbouncer, ErrEmptyLog, and
// ErrNotALog for a file that is no log at all, saying what it looks
// like: an executable, an archive, an unknown compression), and what
// was assumed is kept as a warning (Reader.Warnings).
//
// A Reader reads one file front to back, once, in memory that does not
// grow with the file (a plain file on Linux from a mapping of it, whose
// pages it gives back as it goes; a file that shrinks under it is an
// error, not a crash): events come out in the order of the lines that
// complete them. Every physical line is accounted for in Counters, as
// parsed or skipped for a reason; Unparseable tells the reasons that mean
// lines the reader failed to read from those it had no use for (blank
// lines, what the server writes without its prefix, plans of no logged
// statement, ...). OpenSplit reads a large plain file in parts at once.
// The Reader's Timing, TimeRange and Origin, and ProbeLog without reading
// a log whole, say how it is timed, when it was written and by which
// server, for a caller to refuse logs that are not one workload (package
// source, which opens the logs, also tells copies of one log apart).
//
// The package reads; it does not decide what a run makes of what it read.
// It never fails a run for lines it skipped, never prints, and names no
// command-line flag: the CLI turns its errors, counters, warnings and
// facts into messages and exit codes. It does not aggregate or replay
// events either, nor parse the plans it attaches: that is analyze's,
// replay's and plan's.
package logread
