package plan

import (
	"fmt"
	"regexp"
	"strings"
)

// durationLine is the start of auto_explain's message, which a reader may
// pass along with the plan: "duration: 12.345 ms  plan:".
var durationLine = regexp.MustCompile(`^(?:LOG:\s+)?duration: \d+(?:\.\d+)? ms\s+plan:\s*$`)

// rootLine matches the first line of a plan in auto_explain's text
// format, which always has its estimates.
var rootLine = regexp.MustCompile(`^\S.*  \(cost=\d+(?:\.\d+)?\.\.\d+(?:\.\d+)? rows=\d+(?:\.\d+)? width=\d+\)`)

// ParseAutoExplain reads the plan of one auto_explain log entry, in its
// text or JSON format (auto_explain.log_format), as a log holds it: the
// message after "plan:" (the "duration: ... plan:" line itself may be
// included), its lines possibly led by the tab a stderr log puts before
// each continuation line. The statement's text, which auto_explain writes
// first ("Query Text: ..."), goes to QueryText.
func ParseAutoExplain(raw string) (*Plan, error) {
	lines := strings.Split(strings.ReplaceAll(raw, "\r\n", "\n"), "\n")
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
	}
	if len(lines) > 0 && durationLine.MatchString(strings.TrimSpace(lines[0])) {
		lines = lines[1:]
	}
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, "\t")
	}
	body := strings.TrimSpace(strings.Join(lines, "\n"))
	if body == "" {
		return nil, fmt.Errorf("auto_explain: %w: empty", ErrNotPlan)
	}
	if body[0] == '{' || body[0] == '[' {
		return ParseJSON([]byte(body))
	}
	lines = strings.Split(body, "\n")
	query := ""
	if q, ok := strings.CutPrefix(lines[0], "Query Text: "); ok {
		// The statement may span lines; the plan starts at the first
		// line that is a node with its estimates.
		root := -1
		for i := 1; i < len(lines); i++ {
			if rootLine.MatchString(lines[i]) {
				root = i
				break
			}
		}
		if root < 0 {
			return nil, fmt.Errorf("auto_explain: %w: no plan after the query text", ErrNotPlan)
		}
		qlines := append([]string{q}, lines[1:root]...)
		// PostgreSQL 16's auto_explain.log_parameter_max_length adds
		// the parameters after the text.
		if n := len(qlines); n > 1 && strings.HasPrefix(qlines[n-1], "Query Parameters: ") {
			qlines = qlines[:n-1]
		}
		query = strings.Join(qlines, "\n")
		lines = lines[root:]
	}
	p, err := ParseText(strings.Join(lines, "\n"))
	if err != nil {
		return nil, err
	}
	p.QueryText = query
	return p, nil
}
