// Package archdoc holds the tests that keep docs/architecture.md and the
// README's layout in step with the package graph.
//
// The package table of docs/architecture.md is generated, between two
// marker comments, from `go list -json ./...`: each package's purpose is
// the first sentence of its package comment, and its imports are the
// packages of this module it imports (tests left out). Packages are
// grouped by the layers that layers_test.go assigns them. Without -update
// the tests fail when that table is stale, when a package has no layer
// or imports a package of a higher layer, or when the README's "Layout"
// section leaves a package out; with -update the table is written again:
//
//	go test ./internal/archdoc -run TestArchitectureDoc -update
//
// TestDocIdentifiers (idents_test.go) parses the module's Go files and
// fails when README.md or a page of docs/ names, in backquotes, an
// identifier of the module that the code does not have: `pkg.Name` or
// `pkg.Type.Member`, pkg being the last element of one of the module's
// package paths.
//
// It has no code besides the tests: nothing in pgrehearse imports it.
package archdoc
