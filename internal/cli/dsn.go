package cli

import (
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

// checkDSNFlags parses the connection strings given to cmd.
func checkDSNFlags(cmd *cobra.Command) error {
	var err error
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
