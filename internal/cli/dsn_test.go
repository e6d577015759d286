package cli

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// dsnFlags lists, per command, the flags registered as connection strings
// (dsnVar).
func dsnFlags() map[string][]string {
	out := map[string][]string{}
	for _, newCmd := range commands() {
		c := newCmd(context.Background(), IO{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard})
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Annotations[dsnAnnotation] != nil {
				out[c.Name()] = append(out[c.Name()], f.Name)
			}
		})
	}
	return out
}

// TestEveryDSNFlagChecked: a flag that takes a connection string, by its
// name or its help, is registered with dsnVar, so that it is checked
// before the work and its errors never quote it. A new command's DSN flag
// that forgets is caught here.
func TestEveryDSNFlagChecked(t *testing.T) {
	looksDSN := regexp.MustCompile(`(?i)(^|-)dsn$|^target$|^control$|^candidate$`)
	for _, newCmd := range commands() {
		c := newCmd(context.Background(), IO{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard})
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Value.Type() != "string" {
				return
			}
			if (looksDSN.MatchString(f.Name) || strings.Contains(f.Usage, "connection string")) && f.Annotations[dsnAnnotation] == nil {
				t.Errorf("%s --%s takes a connection string but is not registered with dsnVar", c.Name(), f.Name)
			}
		})
	}
	if n := len(dsnFlags()); n < 5 {
		t.Errorf("DSN flags found in %d commands, want at least analyze, findings, observe, replay and sweep", n)
	}
}

// TestNoPasswordInDSNErrors is issue 19's acceptance of secrets in
// connection strings: a password written with spaces around "=", quoted
// with a space, in a URI, in a service file and in the environment, each
// with a second error in the same string, is never printed by any command
// that takes a DSN; the error names the flag and exits 2 before any work.
// A string that parses but reaches no server is refused without the
// password too.
func TestNoPasswordInDSNErrors(t *testing.T) {
	dir := t.TempDir()
	svc := filepath.Join(dir, "pg_service.conf")
	if err := os.WriteFile(svc, []byte("[rehearse]\nhost=localhost\npassword=PlantedSvc-41\nport=notaport\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	forms := []struct {
		name, dsn string
		env       map[string]string
		planted   string
		code      int
	}{
		{"spaces around =", "host=localhost password = PlantedKV-11 port=notaport", nil, "PlantedKV-11", ExitUsage},
		{"quoted with a space", "host=localhost password= 'Planted KV-12' sslmode=bogus", nil, "Planted KV-12", ExitUsage},
		{"quoted, unterminated", "host=localhost password='PlantedKV-13 port=1", nil, "PlantedKV-13", ExitUsage},
		{"URI", "postgres://app:PlantedURI-21@localhost:notaport/db", nil, "PlantedURI-21", ExitUsage},
		{"URI, query", "postgresql://app:PlantedURI-22@localhost/db?sslmode=bogus&password=PlantedURI-23", nil, "PlantedURI-2", ExitUsage},
		{"service file", "service=rehearse", map[string]string{"PGSERVICEFILE": svc}, "PlantedSvc-41", ExitUsage},
		{"environment", "host=localhost", map[string]string{"PGPASSWORD": "PlantedEnv-51", "PGPORT": "notaport"}, "PlantedEnv-51", ExitUsage},
		// Parses, reaches nothing: the commands' own failure, still
		// without the password.
		{"unreachable", "host=127.0.0.1 port=1 connect_timeout=2 password=PlantedNet-61", nil, "PlantedNet-61", -1},
	}
	extra := map[string][]string{
		"analyze":  {"--prefix", testPrefix, smallLog},
		"findings": {"--prefix", testPrefix, smallLog},
		"replay":   {"--prefix", testPrefix, smallLog},
		"rehearse": {"--prefix", testPrefix, smallLog},
		"headroom": {"--prefix", testPrefix, smallLog},
		"observe":  {"--duration", "1s"},
		"sweep":    {"--clients", "1", "--duration", "1s", "--warmup", "0s"},
	}
	for cmd, flags := range dsnFlags() {
		for _, flag := range flags {
			for _, form := range forms {
				t.Run(cmd+" --"+flag+" "+form.name, func(t *testing.T) {
					for k, v := range form.env {
						t.Setenv(k, v)
					}
					args := []string{cmd, "--" + flag, form.dsn}
					if cmd == "replay" && flag != "target" {
						args = append(args, "--dry-run")
					}
					ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
					defer cancel()
					code, stdout, stderr := runCLI(ctx, "", append(args, extra[cmd]...)...)
					if strings.Contains(stdout+stderr, form.planted) {
						t.Errorf("exit %d, the password is printed:\n%s%s", code, stdout, stderr)
					}
					if form.code >= 0 && (code != form.code || !strings.Contains(stderr, "--"+flag+": ")) {
						t.Errorf("exit %d, want %d naming --%s:\n%s", code, form.code, flag, stderr)
					}
				})
			}
		}
	}
}

// TestDSNFromEnvironment: a connection-string flag not on the command
// line is read from PGREHEARSE_DSN_<FLAG> (how headroom gives its shard
// processes theirs, out of ps's sight); one on the command line wins;
// one in the environment is checked as one on the command line is.
func TestDSNFromEnvironment(t *testing.T) {
	t.Setenv("PGREHEARSE_DSN_TARGET", "host=from-env dbname=x")
	t.Setenv("PGREHEARSE_DSN_COORD_DSN", "host=coord-env")
	value := func(args ...string) (map[string]string, error) {
		cmd := newReplayCmd(context.Background(), IO{})
		if err := cmd.ParseFlags(args); err != nil {
			t.Fatal(err)
		}
		err := checkDSNFlags(cmd)
		out := map[string]string{}
		for _, name := range []string{"target", "coord-dsn", "findings-dsn"} {
			out[name] = cmd.Flags().Lookup(name).Value.String()
		}
		return out, err
	}
	got, err := value()
	if err != nil || got["target"] != "host=from-env dbname=x" || got["coord-dsn"] != "host=coord-env" || got["findings-dsn"] != "" {
		t.Errorf("from the environment: %v, %v", got, err)
	}
	got, err = value("--target", "host=from-argv")
	if err != nil || got["target"] != "host=from-argv" || got["coord-dsn"] != "host=coord-env" {
		t.Errorf("the command line does not win: %v, %v", got, err)
	}
	t.Setenv("PGREHEARSE_DSN_TARGET", "host=x port=notaport password=PlantedEnvDSN-1")
	if _, err := value(); err == nil || !strings.Contains(err.Error(), "--target: ") || strings.Contains(err.Error(), "PlantedEnvDSN-1") {
		t.Errorf("a bad connection string from the environment: %v", err)
	}
	if env := withoutDSNEnv([]string{"PATH=/bin", "PGREHEARSE_DSN_TARGET=host=a", "PGPASSWORD=p"}); strings.Join(env, " ") != "PATH=/bin PGPASSWORD=p" {
		t.Errorf("withoutDSNEnv = %v", env)
	}
}
