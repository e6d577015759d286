// Package logreadtest holds what the tests of logread and of its prefix
// package share about the shared fixtures (logread's testdata/pgbadger).
package logreadtest

// ReadmePrefixes are the log_line_prefix settings of the shared stderr
// fixtures, from their README.
var ReadmePrefixes = map[string]string{
	"begin_end.log":              "%t [%p]: db=%d,user=%u,app=%a,client=%h ",
	"light.postgres.log.bz2":     "%t [%p]: [%l-1] user=%u,db=%d,app=%a,client=%h ",
	"multiline_param.log":        "%m [%p] user=%u,db=%d ",
	"pg-timezones.log":           "%t:%h:%u@%d:[%p]:",
	"pg_rawcsv.log":              "%m [%p] %q%u@%d ",
	"pg_vacuums.log.gz":          "%t [%p]: [%l-1] user=%u,db=%d,host=%h,app=%a",
	"postgresql_param_range.log": "%t [%p]: [%l-1] [%x] usr=%u,db=%d,appli=%a",
	"queryid.log.gz":             "%m [%p] [queryid=%Q] %q%u@%d ",
	"stmt_type.log":              "%m [%p] ",
	"tempfile_only.log.gz":       "%t [%p]: [%l-1] user=%u,db=%d ",
}
