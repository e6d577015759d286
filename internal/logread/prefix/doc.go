// Package prefix reads the front of a PostgreSQL stderr log line: the
// server's log_line_prefix and the severity word that ends it.
//
// It compiles a log_line_prefix as the server documents it (Compile) into
// a matcher that takes a line apart into the fields the prefix prints
// (time, process, session, user, database, application, SQLSTATE), infers
// an unknown log_line_prefix from the first lines of a log by the shape,
// labels and places of what precedes each severity (Infer), and splits the
// severity from the message, telling a severity written in another
// language than English by its shape (SplitSeverity, ForeignSeverity,
// TranslatedMessage).
//
// The package works on bytes of single lines. It does not read files,
// decompress, join the lines of one message, interpret messages or turn
// times into instants: that is logread's. Matching and severity splitting
// run once per line of logs of 100+ GB, so they allocate nothing; Infer
// runs once per file, on its head. What could not be decided is an error
// (ErrUnknownPrefix, ErrAmbiguousPrefix, ErrNotEnglish) and what was
// assumed a warning of the Inference; the package never prints and names
// no command-line flag.
package prefix
