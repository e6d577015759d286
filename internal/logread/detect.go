package logread

import (
	"bytes"
	"fmt"
)

// commonPrefixes are log_line_prefix settings seen in the wild: defaults of
// PostgreSQL versions and distributions, pgbadger's and managed services'
// recommendations. Detection tries each on the first lines of the log.
var commonPrefixes = []string{
	"%m [%p] ",                // PostgreSQL 10+ default
	"%m [%p] %q%u@%d ",        // Debian and Ubuntu
	"%m [%p] %q%u@%d/%a ",     //
	"%m [%p] %q%u@%d/%a %c ",  //
	"%m [%p] %c %q%u@%d/%a ",  //
	"%m [%p] [%l-1] %q%u@%d ", //
	"%m [%p] [queryid=%Q] %q%u@%d ",
	"%m [%p] %q[user=%u,db=%d,app=%a] ",
	"%m [%p]: [%l-1] user=%u,db=%d,app=%a,client=%h ",
	"%t [%p]: [%l-1] user=%u,db=%d,app=%a,client=%h ", // pgbadger's recommendation
	"%t [%p]: [%l-1] user=%u,db=%d,host=%h,app=%a",
	"%t [%p]: [%l-1] user=%u,db=%d ",
	"%t [%p]: [%l-1] [%x] usr=%u,db=%d,appli=%a",
	"%t [%p]: [%l-1] ",
	"%t [%p]: db=%d,user=%u,app=%a,client=%h ",
	"%t [%p]: user=%u,db=%d,app=%a,client=%h ",
	"%t [%p-%l] %q%u@%d ",
	"%m [%p-%l] %q%u@%d ",
	"%t:%r:%u@%d:[%p]:", // Amazon RDS
	"%m:%r:%u@%d:[%p]:",
	"%t:%h:%u@%d:[%p]:",
	"%m %u %d [%p]: ",
	"%m %c %p ",
	"%m %p ",
	"%t [%p] ",
	"%t [%p] %q%u@%d ",
	"%t %p ",
	"< %m > ", // PostgreSQL 9 packaged default
	"< %t > ",
	"%m ",
	"%t ",
	"",
}

// detectPrefix picks the common prefix that matches most lines of head
// that look like the start of a message. Among prefixes matching equally
// many, the one that extracts the most fields wins.
func detectPrefix(head []byte) (string, error) {
	var lines [][]byte
	for len(head) > 0 && len(lines) < 2000 {
		i := bytes.IndexByte(head, '\n')
		if i < 0 {
			break // the last, possibly cut, line
		}
		line := head[:i]
		head = head[i+1:]
		if len(line) == 0 || line[0] == '\t' {
			continue
		}
		lines = append(lines, line)
	}
	if len(lines) == 0 {
		return "", fmt.Errorf("%w (the log is empty)", ErrUnknownPrefix)
	}
	// Candidates: the common prefixes, then guesses read off the lines.
	cands := append([]string(nil), commonPrefixes...)
	seen := make(map[string]bool)
	for _, l := range lines[:min(len(lines), 50)] {
		if ps, ok := inferPrefix(l); ok && !seen[ps] {
			seen[ps] = true
			cands = append(cands, ps, withQ(ps))
		}
	}
	best, bestN, bestFields := "", 0, -1
	var f prefixFields
	for _, ps := range cands {
		p, err := compilePrefix(ps)
		if err != nil {
			continue
		}
		n := 0
		for _, l := range lines {
			if rest, ok := p.match(l, &f); ok {
				if _, _, ok := splitSeverity(rest); ok {
					n++
				}
			}
		}
		fields := 0
		for _, it := range p.items {
			if it.esc != 0 && it.esc != 'q' { // %q adds no field: it must not win ties
				fields++
			}
		}
		if n > bestN || n == bestN && n > 0 && fields > bestFields {
			best, bestN, bestFields = ps, n, fields
		}
	}
	if bestN == 0 || bestN*2 < len(lines) {
		return "", fmt.Errorf("%w: no common prefix matches the first lines, e.g. %q", ErrUnknownPrefix, truncate(lines[0], 120))
	}
	return best, nil
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}
