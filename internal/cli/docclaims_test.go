package cli

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// docFiles are the pages a user reads as the runbook: README.md and
// every page under docs/ and deploy/.
func docFiles(t *testing.T) map[string]string {
	t.Helper()
	root := filepath.Join("..", "..")
	names := []string{"README.md"}
	for _, pattern := range []string{"docs/*.md", "deploy/*.md", "deploy/*/*.md"} {
		m, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range m {
			rel, _ := filepath.Rel(root, p)
			names = append(names, rel)
		}
	}
	out := map[string]string{}
	for _, n := range names {
		b := readFile(t, filepath.Join(root, n))
		out[n] = string(b)
	}
	if len(out) < 10 {
		t.Fatalf("%d documentation pages found: the walk is broken", len(out))
	}
	return out
}

// commandTree is pgrehearse's commands by name, as Run builds them.
func commandTree() map[string]*cobra.Command {
	out := map[string]*cobra.Command{}
	for _, newCmd := range commands() {
		c := newCmd(context.Background(), IO{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard})
		out[c.Name()] = c
	}
	return out
}

// docInvocation is a command line a page shows: "pgrehearse replay
// --target ..." in a code block or a code span, or a code span that
// starts with a command's name and a flag ("replay --speed").
type docInvocation struct {
	file, text string
}

var (
	fenceRE      = regexp.MustCompile("(?s)```[^\n]*\n(.*?)```")
	spanRE       = regexp.MustCompile("`([^`]+)`")
	invocationRE = regexp.MustCompile(`(?:^|[\s($])pgrehearse\s+([a-z][a-z-]*\b.*)`)
	docFlagRE    = regexp.MustCompile(`(?:^|[\s\[(])--([a-z][a-z0-9-]*)`)
	// shellSep ends a command in a code block: a pipe, a list, a
	// comment.
	shellSep = regexp.MustCompile(`\s\|\s|&&|;|\s#|\)`)
)

// docInvocations finds the command lines of a page.
func docInvocations(file, text string, cmds map[string]*cobra.Command) []docInvocation {
	var out []docInvocation
	for _, m := range fenceRE.FindAllStringSubmatch(text, -1) {
		block := strings.ReplaceAll(m[1], "\\\n", " ")
		for _, line := range strings.Split(block, "\n") {
			for _, inv := range invocationRE.FindAllStringSubmatch(line, -1) {
				cmd := inv[1]
				if loc := shellSep.FindStringIndex(cmd); loc != nil {
					cmd = cmd[:loc[0]]
				}
				out = append(out, docInvocation{file, cmd})
			}
		}
	}
	prose := fenceRE.ReplaceAllString(text, "")
	for _, m := range spanRE.FindAllStringSubmatch(prose, -1) {
		span := strings.Join(strings.Fields(m[1]), " ")
		if rest, ok := strings.CutPrefix(span, "pgrehearse "); ok {
			out = append(out, docInvocation{file, rest})
			continue
		}
		fields := strings.Fields(span)
		if len(fields) < 2 || cmds[fields[0]] == nil {
			continue
		}
		if strings.HasPrefix(fields[1], "--") || slices.ContainsFunc(cmds[fields[0]].Commands(), func(c *cobra.Command) bool { return c.Name() == fields[1] }) {
			out = append(out, docInvocation{file, span})
		}
	}
	return out
}

// resolve finds the command an invocation runs ("capture start ...":
// capture's start) and the flags it names.
func (inv docInvocation) resolve(cmds map[string]*cobra.Command) (*cobra.Command, string, []string) {
	fields := strings.Fields(inv.text)
	c := cmds[fields[0]]
	if c == nil {
		return nil, fields[0], nil
	}
	path := fields[0]
	for _, f := range fields[1:] {
		if strings.HasPrefix(f, "-") {
			continue
		}
		for _, sub := range c.Commands() {
			if sub.Name() == f {
				c, path = sub, path+" "+f
			}
		}
		break
	}
	var flags []string
	for _, m := range docFlagRE.FindAllStringSubmatch(inv.text, -1) {
		flags = append(flags, m[1])
	}
	return c, path, flags
}

// hasFlag says whether c takes --name, its own or inherited.
func hasFlag(c *cobra.Command, name string) bool {
	return name == "help" || name == "version" || c.Flags().Lookup(name) != nil || c.InheritedFlags().Lookup(name) != nil
}

// TestDocsNameRealFlags: every command line the README and the docs show
// ("pgrehearse replay --target ...", "capture start --admin ...",
// "`replay --speed`") names a command that exists and only flags that
// command takes (issue 57 item 6: the runbook matches the binary). A
// flag renamed or removed in the code, or a page that names a flag of
// another command, fails here, without a server.
func TestDocsNameRealFlags(t *testing.T) {
	cmds := commandTree()
	seen := 0
	for file, text := range docFiles(t) {
		for _, inv := range docInvocations(file, text, cmds) {
			c, path, flags := inv.resolve(cmds)
			if c == nil {
				// "pgrehearse is ...", prose, not a command line.
				if strings.HasPrefix(inv.text, path+" --") {
					t.Errorf("%s: `pgrehearse %s`: no command %q", file, inv.text, path)
				}
				continue
			}
			seen++
			for _, f := range flags {
				if !hasFlag(c, f) {
					t.Errorf("%s: `pgrehearse %s`: %s has no flag --%s", file, inv.text, path, f)
				}
			}
		}
	}
	if seen < 50 {
		t.Errorf("%d command lines found in the docs: the extraction is broken", seen)
	}
}

// TestDocsFlagsExist: a flag a page names on its own (`--drain`) is a
// flag of some command, or of another tool the page names beside it
// (otherTools).
func TestDocsFlagsExist(t *testing.T) {
	known := allFlags(commandTree())
	for file, text := range docFiles(t) {
		prose := fenceRE.ReplaceAllString(text, "")
		for _, m := range spanRE.FindAllStringSubmatch(prose, -1) {
			fm := regexp.MustCompile(`^--([a-z][a-z0-9-]*)`).FindStringSubmatch(m[1])
			if fm == nil || known[fm[1]] || otherTools[fm[1]] {
				continue
			}
			t.Errorf("%s: `%s`: no pgrehearse command has --%s", file, m[1], fm[1])
		}
	}
}

// allFlags are the names of every command's flags.
func allFlags(cmds map[string]*cobra.Command) map[string]bool {
	known := map[string]bool{"help": true, "version": true}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) { known[f.Name] = true })
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	for _, c := range cmds {
		walk(c)
	}
	return known
}

// TestHelpNamesRealFlags: what each command's help says beyond its flag
// list names flags that exist: a command line it shows ("pgrehearse
// capture start --admin ADDR --out DIR") only flags of that command, and
// any other --flag a flag of some command. The flags' own help lines are
// checked the same way.
func TestHelpNamesRealFlags(t *testing.T) {
	cmds := commandTree()
	known := allFlags(cmds)
	var check func(c *cobra.Command)
	check = func(c *cobra.Command) {
		texts := []string{c.Long, c.Use}
		c.Flags().VisitAll(func(f *pflag.Flag) { texts = append(texts, f.Usage) })
		where := c.CommandPath() + " --help"
		for _, text := range texts {
			for _, line := range strings.Split(text, "\n") {
				for _, inv := range invocationRE.FindAllStringSubmatch(line, -1) {
					inv := docInvocation{where, inv[1]}
					if sub, path, flags := inv.resolve(cmds); sub != nil {
						for _, f := range flags {
							if !hasFlag(sub, f) {
								t.Errorf("%s: `pgrehearse %s`: %s has no flag --%s", where, inv.text, path, f)
							}
						}
					}
				}
			}
			for _, m := range docFlagRE.FindAllStringSubmatch(text, -1) {
				if !known[m[1]] && !otherTools[m[1]] {
					t.Errorf("%s names --%s, which no command has", where, m[1])
				}
			}
		}
		for _, sub := range c.Commands() {
			check(sub)
		}
	}
	for _, c := range cmds {
		check(c)
	}
}

// otherTools are flags of other programs that the docs name on their
// own, beside the program's name.
var otherTools = map[string]bool{
	"progress": true, "sampling-rate": true, "random-seed": true, // pgbench
	"storage-driver": true, // buildah
}

// TestHelpKeepsItsWord pins the claims of the help texts and pages that
// were once false (issue 57 item 6), so that they cannot come back: the
// sessions open when a recording starts are recorded from the middle,
// the proxy drains, the admin runbook starts with TLS and links it, and
// the checklist never proposes membership in a superuser role.
func TestHelpKeepsItsWord(t *testing.T) {
	help := func(args ...string) string {
		var out, errb bytes.Buffer
		if code := Run(context.Background(), IO{Stdout: &out, Stderr: &errb}, append(args, "--help")); code != ExitOK {
			t.Fatalf("%v --help: exit %d: %s", args, code, errb.String())
		}
		return strings.Join(strings.Fields(out.String()), " ")
	}
	docs := docFiles(t)
	flat := func(file string) string { return strings.Join(strings.Fields(docs[file]), " ") }
	for _, tc := range []struct {
		where, text string
		want, never []string
	}{
		{"capture --help", help("capture"), []string{"recorded from the middle", "--drain passes", "how many it waits for"},
			[]string{"counted, not recorded", "from its start only"}},
		{"capture start --help", help("capture", "start"), []string{"recorded, and so are the sessions open already, from the middle"},
			[]string{"relayed but not recorded"}},
		{"docs/capture-production.md", flat("docs/capture-production.md"), []string{"`--drain`", "draining:", "drain ended"},
			[]string{"no drain period", "closes every connection still open at once"}},
		{"docs/capture-admin.md", flat("docs/capture-admin.md"), []string{"capture-production.md#two-tls-legs", "--tls-cert", "starting point"}, nil},
		{"docs/target-checklist.md", flat("docs/target-checklist.md"), []string{"Never grant the login membership in a superuser role"},
			[]string{"`GRANT owner TO name` |"}},
	} {
		for _, w := range tc.want {
			if !strings.Contains(tc.text, w) {
				t.Errorf("%s no longer says %q", tc.where, w)
			}
		}
		for _, n := range tc.never {
			if strings.Contains(tc.text, n) {
				t.Errorf("%s says %q again, which is false", tc.where, n)
			}
		}
	}
	// The admin runbook's first example listens beyond loopback only
	// with TLS.
	first := fenceRE.FindStringSubmatch(docs["docs/capture-admin.md"])
	if first == nil {
		t.Fatal("docs/capture-admin.md has no example")
	}
	if ex := first[1]; !strings.Contains(ex, "--listen 127.0.0.1:") && !strings.Contains(ex, "--tls-cert") {
		t.Errorf("docs/capture-admin.md's first example listens beyond loopback without TLS:\n%s", ex)
	}
}
