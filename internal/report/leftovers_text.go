package report

import (
	"fmt"
	"strings"

	"github.com/pgrehearse/pgrehearse/internal/results"
)

// leftoversShown is how many leftovers of each kind are named.
const leftoversShown = 10

// writeLeftovers names what a replay left on the target (prepared
// transactions, and what cleaning them up did) and the advisory locks
// its sessions held as they ended.
func writeLeftovers(b *strings.Builder, l *results.Leftovers) {
	if l == nil {
		return
	}
	if n := len(l.Prepared); n > 0 {
		var rolled, failed int
		names := make([]string, 0, min(n, leftoversShown))
		for i, p := range l.Prepared {
			switch p.Cleanup {
			case results.LeftoverRolledBack:
				rolled++
			case results.LeftoverCleanupFailed:
				failed++
			}
			if i < leftoversShown {
				names = append(names, fmt.Sprintf("%s (database %s, owner %s)", quoteGid(p.Gid), p.Database, p.Owner))
			}
		}
		fmt.Fprintf(b, "  left:       %d %s the replay prepared %s still prepared on the target at its end: %s%s\n",
			n, plural(n, "transaction", "transactions"), plural(n, "was", "were"), strings.Join(names, ", "), more(n))
		switch {
		case rolled == n:
			b.WriteString("    rolled back at the end, as asked\n")
		case rolled > 0 || failed > 0:
			fmt.Fprintf(b, "    %d rolled back at the end, as asked; %d could not be: %s\n", rolled, failed, firstCleanupError(l.Prepared))
		default:
			b.WriteString("    they hold their locks until COMMIT PREPARED or ROLLBACK PREPARED runs in their database\n")
		}
	}
	if n := len(l.AdvisoryLocks); n > 0 {
		names := make([]string, 0, min(n, leftoversShown))
		for _, a := range l.AdvisoryLocks[:min(n, leftoversShown)] {
			names = append(names, fmt.Sprintf("key %s (%s) in %s, session %s", a.Key, a.Mode, a.Database, a.Session))
		}
		fmt.Fprintf(b, "  left:       %d advisory %s held by sessions of the replay as they ended (their end released %s): %s%s\n",
			n, plural(n, "lock", "locks"), plural(n, "it", "them"), strings.Join(names, "; "), more(n))
	}
}

func quoteGid(g string) string { return "'" + strings.ReplaceAll(g, "'", "''") + "'" }

func more(n int) string {
	if n > leftoversShown {
		return fmt.Sprintf(" and %d more", n-leftoversShown)
	}
	return ""
}

func firstCleanupError(ps []results.LeftoverPrepared) string {
	for _, p := range ps {
		if p.CleanupError != "" {
			return p.CleanupError
		}
	}
	return ""
}
