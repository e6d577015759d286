package coord

import (
	"strconv"
	"strings"
)

// maxPayload keeps a notification under PostgreSQL's 8000 bytes.
const maxPayload = 7900

// progressPayloads encodes a shard's progress: "p SHARD LOW D..." where
// each D is a position at or after LOW, in base 36 as its distance from
// LOW. More positions than fit in one notification go in several, each
// with the same LOW.
func progressPayloads(shard int, low int64, done []int64) []string {
	head := "p " + strconv.Itoa(shard) + " " + strconv.FormatInt(low, 10)
	var out []string
	var b strings.Builder
	b.WriteString(head)
	for _, d := range done {
		tok := strconv.FormatInt(d-low, 36)
		if b.Len()+1+len(tok) > maxPayload {
			out = append(out, b.String())
			b.Reset()
			b.WriteString(head)
		}
		b.WriteByte(' ')
		b.WriteString(tok)
	}
	return append(out, b.String())
}

// parseProgress reads a payload of progressPayloads; ok is false for
// anything else (the barrier's notices).
func parseProgress(s string) (shard int, low int64, done []int64, ok bool) {
	f := strings.Fields(s)
	if len(f) < 3 || f[0] != "p" {
		return 0, 0, nil, false
	}
	shard, err := strconv.Atoi(f[1])
	if err != nil || shard < 0 {
		return 0, 0, nil, false
	}
	if low, err = strconv.ParseInt(f[2], 10, 64); err != nil {
		return 0, 0, nil, false
	}
	done = make([]int64, 0, len(f)-3)
	for _, t := range f[3:] {
		d, err := strconv.ParseInt(t, 36, 64)
		if err != nil || d < 0 || low+d < low {
			return 0, 0, nil, false
		}
		done = append(done, low+d)
	}
	return shard, low, done, true
}

// failedPayload says that a shard failed: its commits will not run.
func failedPayload(shard int) string { return "f " + strconv.Itoa(shard) }

func parseFailed(s string) (int, bool) {
	f := strings.Fields(s)
	if len(f) != 2 || f[0] != "f" {
		return 0, false
	}
	k, err := strconv.Atoi(f[1])
	return k, err == nil && k >= 0
}
