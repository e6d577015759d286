// Package pgclustertest starts throwaway PostgreSQL clusters (package
// pgcluster) from tests and benchmarks, tied to the test's lifetime.
//
// It is a package of its own because it imports package testing: kept in
// pgcluster, which the demo uses, it would link testing (and its flags)
// into the pgrehearse binary. Only _test.go files may import it.
package pgclustertest
