package cli

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/replay"
)

// helpExitCodes reads the codes listed in the "Exit codes:" section of a
// command's help.
func helpExitCodes(t *testing.T, args ...string) []int {
	t.Helper()
	var out, errb bytes.Buffer
	if code := Run(context.Background(), IO{Stdout: &out, Stderr: &errb}, append(args, "--help")); code != ExitOK {
		t.Fatalf("%v --help: exit %d: %s", args, code, errb.String())
	}
	help := out.String()
	i := strings.Index(help, "\nExit codes:\n")
	if i < 0 {
		t.Fatalf("%v --help has no exit codes:\n%s", args, help)
	}
	var codes []int
	for _, line := range strings.Split(help[i+len("\nExit codes:\n"):], "\n") {
		m := regexp.MustCompile(`^  (\d)  \S`).FindStringSubmatch(line)
		if m == nil {
			if line == "" || strings.HasPrefix(line, "Usage:") {
				break
			}
			continue
		}
		n, _ := strconv.Atoi(m[1])
		codes = append(codes, n)
	}
	return codes
}

// TestHelpListsOwnExitCodes checks that each command's help lists only
// the codes that command returns (issue 19: a report's "diverged" has no
// place in analyze's help), each once and in order, and the root's help
// all of them.
func TestHelpListsOwnExitCodes(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		want []int
	}{
		{"", []int{0, 1, 2, 3, 4, 5, 6, 7}},
		{"analyze", []int{0, 1, 2, 4, 5}},
		{"events", []int{0, 1, 2, 4, 5}},
		{"findings", []int{0, 1, 2, 4}},
		{"merge", []int{0, 1, 2, 5}},
		{"observe", []int{0, 1, 2}},
		{"plan", []int{0, 1, 2, 4}},
		{"replay", []int{0, 1, 2, 3, 4, 5, 6}},
		{"report", []int{0, 1, 2, 3, 5, 6}},
		{"sweep", []int{0, 1, 2, 4}},
		{"demo", []int{0, 1, 2, 4, 5, 6}},
		{"rehearse", []int{0, 1, 2, 3, 4, 5, 6, 7}},
	} {
		var args []string
		if tc.cmd != "" {
			args = []string{tc.cmd}
		}
		if got := helpExitCodes(t, args...); !slices.Equal(got, tc.want) {
			t.Errorf("pgrehearse %s --help lists exit codes %v, want %v", tc.cmd, got, tc.want)
		}
	}
}

// TestExitHelpJoinsOneCode checks that two explanations of one code make
// one line, so that a code is never listed twice.
func TestExitHelpJoinsOneCode(t *testing.T) {
	h := exitHelp(exitDocNoInput, exitDoc{ExitNoInput, "second reason"})
	if n := strings.Count(h, "\n  4  "); n != 1 {
		t.Errorf("code 4 listed %d times:\n%s", n, h)
	}
	if !strings.Contains(h, "; or second reason") {
		t.Errorf("second reason not joined:\n%s", h)
	}
	for _, line := range strings.Split(h, "\n") {
		if len(line) > 76 {
			t.Errorf("line longer than 76 columns: %q", line)
		}
	}
}

// TestHelpStatesReadAheadCap: replay's and rehearse's help state the cap
// on the statements read ahead of their sessions, as the replay applies
// it, and the line the summary then shows (issue 57 item 9).
func TestHelpStatesReadAheadCap(t *testing.T) {
	want := fmt.Sprintf("held to %d MiB in all", replay.DefaultBudget>>20)
	for _, cmd := range []string{"replay", "rehearse"} {
		var out, errb bytes.Buffer
		if code := Run(context.Background(), IO{Stdout: &out, Stderr: &errb}, []string{cmd, "--help"}); code != ExitOK {
			t.Fatalf("%s --help: exit %d: %s", cmd, code, errb.String())
		}
		help := strings.Join(strings.Fields(out.String()), " ")
		for _, w := range []string{want, fmt.Sprintf(`"read-ahead held at %d MiB: the dispatcher waited X s for the target"`, replay.DefaultBudget>>20)} {
			if !strings.Contains(help, w) {
				t.Errorf("%s --help does not say %q", cmd, w)
			}
		}
	}
}
