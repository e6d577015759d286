package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// suggestDistance is how far a mistyped flag may be from a flag of its
// command to be suggested: two edits, as cobra suggests commands.
const suggestDistance = 2

// flagError is the root's flag error function: every flag error is a
// usage error, and an unknown flag names the command's flags it may have
// meant, as cobra does for an unknown command.
func flagError(c *cobra.Command, err error) error {
	if name, ok := strings.CutPrefix(err.Error(), "unknown flag: --"); ok {
		if s := suggestFlags(c, name); len(s) > 0 {
			err = fmt.Errorf("%w\n\nDid you mean this?\n\t--%s", err, strings.Join(s, "\n\t--"))
		}
	}
	return &exitError{code: ExitUsage, err: err}
}

// suggestFlags returns c's flags (its own and those it inherits) within
// suggestDistance edits of name, nearest first, hidden ones left out.
func suggestFlags(c *cobra.Command, name string) []string {
	type near struct {
		name string
		d    int
	}
	var found []near
	visit := func(f *pflag.Flag) {
		if f.Hidden || slices.ContainsFunc(found, func(n near) bool { return n.name == f.Name }) {
			return
		}
		if d := editDistance(strings.ToLower(name), strings.ToLower(f.Name)); d <= suggestDistance {
			found = append(found, near{f.Name, d})
		}
	}
	c.Flags().VisitAll(visit)
	c.InheritedFlags().VisitAll(visit)
	slices.SortStableFunc(found, func(a, b near) int { return a.d - b.d })
	out := make([]string, len(found))
	for i, n := range found {
		out[i] = n.name
	}
	return out
}

// editDistance is the Levenshtein distance between a and b, in bytes
// (flag names are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
