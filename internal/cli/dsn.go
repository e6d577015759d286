package cli

import (
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pgrehearse/pgrehearse/internal/connstr"
)

// dsnAnnotation marks a flag whose value is a connection string.
const dsnAnnotation = "pgrehearse/dsn"

// dsnVar registers a connection-string flag. Every such flag is checked
// before its command runs (checkDSNFlags): one that does not parse is a
// usage error, found before any work, and described without its values
// (connstr.SafeError), so that a password never reaches a message.
func dsnVar(fl *pflag.FlagSet, p *string, name, usage string) {
	fl.StringVar(p, name, "", usage)
	if err := fl.SetAnnotation(name, dsnAnnotation, []string{"true"}); err != nil {
		panic(err)
	}
}

// dsnEnvPrefix starts the environment variable a connection-string
// flag may be given in instead (dsnEnv).
const dsnEnvPrefix = "PGREHEARSE_DSN_"

// dsnEnv is the environment variable that gives connection-string flag
// name when the command line does not: PGREHEARSE_DSN_TARGET for
// --target, PGREHEARSE_DSN_COORD_DSN for --coord-dsn. A command line is
// readable by every user of the machine (ps); a process's environment
// only by its own user, so a connection string with a password goes
// there. headroom starts its shard processes so.
func dsnEnv(name string) string {
	return dsnEnvPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// withoutDSNEnv is env without any dsnEnv variable, so that a child
// process gets only the connection strings it is given.
func withoutDSNEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, dsnEnvPrefix) {
			out = append(out, kv)
		}
	}
	return out
}

// checkDSNFlags fills the connection-string flags of cmd not given on
// its command line from their environment variables (dsnEnv), and
// parses them all.
func checkDSNFlags(cmd *cobra.Command) error {
	var err error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed || f.Annotations[dsnAnnotation] == nil {
			return
		}
		if v := os.Getenv(dsnEnv(f.Name)); v != "" {
			if serr := cmd.Flags().Set(f.Name, v); serr != nil {
				err = usageError("%s: %v", dsnEnv(f.Name), serr)
			}
		}
	})
	if err != nil {
		return err
	}
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if err != nil || !f.Changed || f.Annotations[dsnAnnotation] == nil || f.Value.String() == "" {
			return
		}
		if _, perr := connstr.Parse(f.Value.String()); perr != nil {
			err = usageError("--%s: %v", f.Name, perr)
		}
	})
	return err
}
