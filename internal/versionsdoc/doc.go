// Package versionsdoc holds the test that writes docs/versions.md, the
// table of the PostgreSQL versions pgrehearse is tested on and of what
// was tested on each, from the results of the per-version tests (those
// named TestVersions*, in the packages of VersionPackages).
//
// It writes only what a run reported: `make test-versions` runs the suite
// with go test -json into .cache/test-versions.json and then this
// package's test with -update, which renders that file. Without -update
// the test checks that the document is current: that it names the
// versions hack/pg-versions.txt pins and exactly the per-version tests
// that exist, so that a new test or version cannot go unreported.
//
// It has no code besides the test: nothing in pgrehearse imports it.
package versionsdoc
