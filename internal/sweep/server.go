package sweep

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrehearse/pgrehearse/internal/connstr"
	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
)

// server is where one configuration's steps run.
type server struct {
	cfg Config
	dsn string
	// pid is the postmaster's pid when its processes can be read in
	// /proc, 0 when the server is remote or out of sight.
	pid int
	// apply makes cfg the server's configuration before a step; nil when
	// it always is (a throwaway cluster).
	apply func(ctx context.Context) error
	// effective reads cfg's settings back from the server.
	effective map[string]string
	// trackedSaid: a step said why pg_stat_statements counts the
	// sampler's own statements; the later steps need not.
	trackedSaid bool
}

// throwawaySettings are a throwaway cluster's settings for cfg:
// pg_stat_statements preloaded (added to a shared_preload_libraries the
// configuration gives), enough connections for the sweep, and cfg.
func throwawaySettings(cfg Config, maxClients int) map[string]string {
	s := map[string]string{
		"shared_preload_libraries": "pg_stat_statements",
		// Clients, the sampler, and room for a psql of the user's.
		"max_connections": strconv.Itoa(max(100, maxClients+10)),
	}
	for k, v := range cfg.Settings {
		s[k] = v
	}
	if libs := s["shared_preload_libraries"]; !hasLib(libs, "pg_stat_statements") {
		s["shared_preload_libraries"] = strings.TrimLeft(libs+",pg_stat_statements", ",")
	}
	return s
}

func hasLib(list, lib string) bool {
	for _, l := range strings.Split(list, ",") {
		if strings.TrimSpace(strings.Trim(strings.TrimSpace(l), `"`)) == lib {
			return true
		}
	}
	return false
}

// startThrowaway starts a cluster for cfg, creates pg_stat_statements and
// initializes the workload's tables.
func startThrowaway(ctx context.Context, cfg Config, opts *Options) (*server, *pgcluster.Cluster, error) {
	c, err := pgcluster.Start(ctx, pgcluster.Options{BinDir: opts.BinDir, Settings: throwawaySettings(cfg, opts.maxClients())})
	if err != nil {
		return nil, nil, err
	}
	s := &server{cfg: cfg, dsn: c.DSN("postgres")}
	fail := func(err error) (*server, *pgcluster.Cluster, error) {
		return nil, nil, errors.Join(err, c.Stop())
	}
	if err := c.Exec(ctx, "postgres", "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"); err != nil {
		return fail(fmt.Errorf("create pg_stat_statements: %w", err))
	}
	if err := opts.Driver.Init(ctx, s.dsn, opts.Scale); err != nil {
		return fail(err)
	}
	if pid, _, err := postmasterPID(c.DataDir()); err == nil {
		s.pid = pid
	}
	return s, c, nil
}

// restartContexts are pg_settings contexts whose settings a reload does
// not change: they need a restart (postmaster) or cannot change at all
// (internal).
var restartContexts = map[string]bool{"postmaster": true, "internal": true}

// target applies configurations to a given server with ALTER SYSTEM and a
// reload, and puts its settings back at the end.
type target struct {
	dsn   string
	names []string          // every setting any configuration sets
	prior map[string]string // postgresql.auto.conf's values before the sweep
}

// RefusedSettingsError lists the settings of the configurations that a
// sweep on a target cannot apply with ALTER SYSTEM and a reload; nothing
// ran. Settings that need a restart can be compared on throwaway clusters.
type RefusedSettingsError struct {
	Settings []RefusedSetting
}

// RefusedSetting is one setting a target refused.
type RefusedSetting struct {
	Name string
	// Unknown: the target has no such setting (a library's, the library
	// not loaded); otherwise Context is its pg_settings.context, one
	// that needs a restart.
	Unknown bool
	Context string
}

func (e *RefusedSettingsError) Error() string {
	lines := make([]string, len(e.Settings))
	for i, s := range e.Settings {
		if s.Unknown {
			lines[i] = s.Name + ": unknown on the target (a library's setting needs the library in shared_preload_libraries)"
		} else {
			lines[i] = fmt.Sprintf("%s: needs a server restart (context %s), which a sweep on a target does not do; compare it on throwaway clusters instead", s.Name, s.Context)
		}
	}
	return "cannot apply these settings on the target with ALTER SYSTEM and a reload:\n  " + strings.Join(lines, "\n  ")
}

// NeedsRestart reports whether a refused setting needs a restart, which
// throwaway clusters (each started with its configuration) allow.
func (e *RefusedSettingsError) NeedsRestart() bool {
	for _, s := range e.Settings {
		if !s.Unknown {
			return true
		}
	}
	return false
}

// openTarget checks that every configuration's settings can be applied by
// a reload and remembers what postgresql.auto.conf held for them.
func openTarget(ctx context.Context, dsn string, configs []Config) (*target, error) {
	conn, err := connectPgx(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("connect to the target: %w", err)
	}
	defer conn.Close(context.Background())
	t := &target{dsn: dsn, names: settingNames(configs), prior: map[string]string{}}
	refused := &RefusedSettingsError{}
	for _, name := range t.names {
		var context string
		err := conn.QueryRow(ctx, `SELECT context FROM pg_settings WHERE name = $1`, name).Scan(&context)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			refused.Settings = append(refused.Settings, RefusedSetting{Name: name, Unknown: true})
		case err != nil:
			return nil, fmt.Errorf("look up setting %s: %w", name, err)
		case restartContexts[context]:
			refused.Settings = append(refused.Settings, RefusedSetting{Name: name, Context: context})
		}
	}
	if len(refused.Settings) > 0 {
		return nil, refused
	}
	if len(t.names) > 0 {
		if err := t.mayChange(ctx, conn); err != nil {
			return nil, err
		}
		if err := t.readPrior(ctx, conn); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// mayChange checks that the role may change the sweep's settings with
// ALTER SYSTEM and reload them, so that a configuration is never half
// applied and never left in place.
func (t *target) mayChange(ctx context.Context, conn *pgx.Conn) error {
	var version int
	var super, reload bool
	err := conn.QueryRow(ctx, `SELECT current_setting('server_version_num')::int,
	(SELECT rolsuper FROM pg_roles WHERE rolname = current_user),
	has_function_privilege('pg_reload_conf()', 'EXECUTE')`).Scan(&version, &super, &reload)
	if err != nil {
		return fmt.Errorf("check the role's privileges on the target: %w", err)
	}
	if super {
		return nil
	}
	var missing []string
	for _, name := range t.names {
		// GRANT ALTER SYSTEM ON PARAMETER came with PostgreSQL 15;
		// before it only superusers may.
		may := false
		if version >= 150000 {
			if err := conn.QueryRow(ctx, `SELECT has_parameter_privilege($1, 'ALTER SYSTEM')`, name).Scan(&may); err != nil {
				return fmt.Errorf("check the role's privilege on %s: %w", name, err)
			}
		}
		if !may {
			missing = append(missing, "ALTER SYSTEM on "+name)
		}
	}
	if !reload {
		missing = append(missing, "EXECUTE on pg_reload_conf()")
	}
	if len(missing) > 0 {
		return fmt.Errorf("the role may not apply the configurations on the target: it lacks %s; nothing was changed (run as a superuser, or grant them)",
			strings.Join(missing, ", "))
	}
	return nil
}

// readPrior reads what postgresql.auto.conf holds for the sweep's
// settings, to put it back at the end. Without it the end would reset
// them, and a value the DBA set with ALTER SYSTEM would be lost: a role
// that may change a setting (GRANT ALTER SYSTEM ON PARAMETER) but not
// read pg_file_settings (superusers only, by default) is refused before
// anything changes.
func (t *target) readPrior(ctx context.Context, conn *pgx.Conn) error {
	rows, err := conn.Query(ctx, `SELECT name, setting FROM pg_file_settings
WHERE sourcefile LIKE '%postgresql.auto.conf' AND name = ANY($1) ORDER BY seqno`, t.names)
	if err == nil {
		var name, setting string
		_, err = pgx.ForEachRow(rows, []any{&name, &setting}, func() error {
			t.prior[name] = setting
			return nil
		})
	}
	if err != nil {
		return fmt.Errorf("read pg_file_settings, to put back what postgresql.auto.conf holds for %s after the sweep: %w; nothing was changed (a sweep on a target needs a role that may read pg_file_settings, such as a superuser)",
			strings.Join(t.names, ", "), err)
	}
	return nil
}

// apply sets cfg's settings, puts the others back, reloads and waits
// until new sessions see cfg's values.
func (t *target) apply(ctx context.Context, cfg Config) error {
	conn, err := connectPgx(ctx, t.dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	for _, name := range t.names {
		v, set := cfg.Settings[name]
		if !set {
			v, set = t.prior[name]
		}
		// Names are checked by ParseConfig; values are literals.
		stmt := "ALTER SYSTEM RESET " + name
		if set {
			stmt = "ALTER SYSTEM SET " + name + " TO " + quoteLiteral(v)
		}
		if _, err := conn.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	if _, err := conn.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
		return err
	}
	// The postmaster rereads the files when it gets the signal, and new
	// sessions start with what it read: wait until one does.
	deadline := time.Now().Add(5 * time.Second)
	for {
		eff, err := readSettings(ctx, t.dsn, t.names)
		if err != nil {
			return err
		}
		if matches(cfg.Settings, eff) || time.Now().After(deadline) {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// restore puts back what postgresql.auto.conf held before the sweep.
func (t *target) restore(ctx context.Context) error {
	return t.apply(ctx, Config{Name: "restore"})
}

func readSettings(ctx context.Context, dsn string, names []string) (map[string]string, error) {
	conn, err := connectPgx(ctx, dsn)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.Background())
	out := map[string]string{}
	for _, n := range names {
		var v string
		if err := conn.QueryRow(ctx, "SELECT current_setting($1, true)", n).Scan(&v); err != nil {
			return nil, fmt.Errorf("read setting %s: %w", n, err)
		}
		out[n] = v
	}
	return out, nil
}

// matches reports whether the server shows every wanted value, taking
// boolean spellings as equal; other values must match as SHOW prints
// them (the configuration may spell them otherwise, "4096kB" for "4MB",
// and is then waited for in vain until the deadline).
func matches(want, got map[string]string) bool {
	for k, v := range want {
		if normalize(v) != normalize(got[k]) {
			return false
		}
	}
	return true
}

func normalize(v string) string {
	v = strings.ToLower(strings.TrimSpace(v))
	switch v {
	case "on", "true", "yes", "1", "t", "y":
		return "on"
	case "off", "false", "no", "0", "f", "n":
		return "off"
	}
	return v
}

func quoteLiteral(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// localPostmaster finds the pid of the target's postmaster when the target
// runs on this machine and its data directory is readable: the connection
// goes through a unix socket or the loopback interface, and postmaster.pid
// in the data_directory the server reports names a live process listening
// on the connection's port. Otherwise it returns 0 and why: CPU is
// unknown.
func localPostmaster(ctx context.Context, dsn string) (int, error) {
	if !connstr.IsLocal(dsn) {
		return 0, errors.New("the target is not on this machine (neither a unix socket nor the loopback interface)")
	}
	conn, err := connectPgx(ctx, dsn)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.Background())
	var dataDir, port string
	if err := conn.QueryRow(ctx, "SELECT current_setting('data_directory'), current_setting('port')").Scan(&dataDir, &port); err != nil {
		return 0, fmt.Errorf("the role cannot read data_directory (a superuser or pg_read_all_settings may): %w", err)
	}
	pid, pidPort, err := postmasterPID(dataDir)
	if err != nil {
		return 0, err
	}
	if strconv.Itoa(pidPort) != port {
		return 0, fmt.Errorf("%s/postmaster.pid names port %d, the server listens on %s", dataDir, pidPort, port)
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(pid) + "/stat"); err != nil {
		return 0, fmt.Errorf("the postmaster's process %d is not in sight: %w", pid, err)
	}
	return pid, nil
}

// RedactDSN returns dsn as host, port, user and database, without a
// password or other options, for the results.
func RedactDSN(dsn string) string {
	cfg, err := connstr.Parse(dsn)
	if err != nil {
		return "(unparsable connection string)"
	}
	return fmt.Sprintf("host=%s port=%d user=%s dbname=%s", cfg.Host, cfg.Port, cfg.User, cfg.Database)
}

// ApplicationName is the application_name of the sweep's own connections
// (its sampler, its settings), unless the DSN names one.
const ApplicationName = event.OwnApplicationPrefix + "sweep"

// connectPgx connects to dsn; a DSN that does not parse is described
// without its values (connstr.SafeError), never quoted.
func connectPgx(ctx context.Context, dsn string) (*pgx.Conn, error) {
	cfg, err := connstr.ParsePgx(dsn)
	if err != nil {
		return nil, err
	}
	if cfg.RuntimeParams["application_name"] == "" {
		// The tool's own session, which an observer leaves out of
		// what it measures.
		cfg.RuntimeParams["application_name"] = ApplicationName
	}
	return pgx.ConnectConfig(ctx, cfg)
}
