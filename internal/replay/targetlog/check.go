package targetlog

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/connstr"
	"github.com/pgrehearse/pgrehearse/internal/event"
)

// Check asks the target (the DSN's own login) for the settings its log
// needs to give server-side durations (Settings), before a replay: what
// ServerSide would otherwise find only after the whole replay and its
// wait. It returns every setting that is missing, each with what to set,
// or an error when the target cannot be asked.
//
// It reads the settings of its own session: one a role or a database
// overrides (ALTER ROLE ... SET) may differ for the replay's logins.
func Check(ctx context.Context, target string) ([]string, error) {
	cfg, err := connstr.Parse(target)
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["application_name"] = event.OwnApplicationPrefix + "preflight"
	conn, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to the target to read its logging settings: %w", connstr.SafeError(err))
	}
	defer conn.Close(context.Background())
	rows, err := conn.Exec(ctx, `SELECT current_setting('log_min_duration_statement'), current_setting('log_destination'),
		current_setting('log_line_prefix'), current_setting('lc_messages')`).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("read the target's logging settings: %w", err)
	}
	if len(rows) != 1 || len(rows[0].Rows) != 1 || len(rows[0].Rows[0]) != 4 {
		return nil, fmt.Errorf("read the target's logging settings: no row")
	}
	r := rows[0].Rows[0]
	return missingSettings(string(r[0]), string(r[1]), string(r[2]), string(r[3])), nil
}

// missingSettings says which of the settings a target's log needs the
// values given lack.
func missingSettings(minDuration, destination, prefix, messages string) []string {
	var out []string
	if minDuration != "0" {
		out = append(out, fmt.Sprintf("log_min_duration_statement is %s: set it to 0, so that every statement is logged with its duration", minDuration))
	}
	structured := false
	for _, d := range strings.Split(destination, ",") {
		d = strings.TrimSpace(d)
		structured = structured || d == "csvlog" || d == "jsonlog"
	}
	if !structured && (!strings.Contains(prefix, "%p") || !strings.Contains(prefix, "%c")) {
		out = append(out, fmt.Sprintf("log_line_prefix %q lacks %%p or %%c, which match the log's lines to the replay's connections: "+
			"set it to e.g. '%%m [%%p] %%q%%u@%%d/%%a %%c ', or log_destination = 'csvlog' or 'jsonlog'", prefix))
	}
	if m := strings.ToLower(messages); m != "" && m != "c" && m != "posix" && !strings.HasPrefix(m, "en") {
		out = append(out, fmt.Sprintf("lc_messages is %q: set it to 'C', so that the log's messages are read", messages))
	}
	return out
}
