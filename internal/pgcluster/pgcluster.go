package pgcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// ErrNoBinaries is returned, wrapped in an error that says where it looked
// and how to install them, when the PostgreSQL server binaries are missing.
var ErrNoBinaries = errors.New("PostgreSQL binaries not found")

// InstallHint is the command that installs the PostgreSQL binaries on the
// Debian machines pgrehearse is developed and tested on.
const InstallHint = "apt-get update && apt-get install -y postgresql"

// superuser is the name of the bootstrap superuser, fixed with initdb -U so
// that it does not depend on who runs the tests.
const superuser = "postgres"

// osUser is the operating system user the server runs as when the current
// process is root.
const osUser = "postgres"

// reserved are the settings that pgcluster owns: changing them would make
// Port, SocketDir or LogDir lie.
var reserved = []string{"port", "unix_socket_directories", "log_directory"}

// settingName matches a configuration parameter name, custom ones
// ("pg_stat_statements.max") included. Anything else could inject lines
// into postgresql.conf.
var settingName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$`)

// Options configure a cluster.
type Options struct {
	// BinDir is the directory holding initdb, pg_ctl, postgres and
	// pgbench. Empty means FindBinDir's choice: $PG_BIN if set, else the
	// newest /usr/lib/postgresql/*/bin, else the directory of initdb on
	// $PATH.
	BinDir string

	// Version, when not 0, is the major version to run (13 to 18, see
	// Majors), from the cache that `make pg-versions` fills (BinDirFor).
	// It is an error to set both Version and BinDir.
	Version int

	// Settings are added to postgresql.conf after pgcluster's own
	// defaults, so they win over them. Values are given unquoted, as SHOW
	// prints them ("on", "0", "stderr,csvlog,jsonlog",
	// "%m [%p] %q%u@%d/%a %c "): pgcluster quotes every value, which
	// postgresql.conf accepts for settings of any type. port,
	// unix_socket_directories and log_directory are reserved.
	Settings map[string]string

	// Keep leaves the cluster directory, and so its logs, in place after
	// Stop. The server is stopped either way. A Start that fails removes
	// the directory regardless: its error quotes the server log.
	Keep bool

	// Checksums chooses whether initdb turns data checksums on. The
	// zero value keeps initdb's default, which PostgreSQL 18 changed
	// (InitdbChecksums): a cluster standing for another of another
	// major version, as pg_upgrade makes it, must say which.
	Checksums Checksums
}

// Checksums is a cluster's data-checksum setting, chosen once by initdb
// (SHOW data_checksums). With checksums on, the first change of a page
// after a checkpoint that only sets hint bits, which a read does, writes
// the page to WAL: the same SELECT writes WAL on one server and not on
// the other.
type Checksums string

// Data-checksum settings.
const (
	// ChecksumsDefault is what the binaries' initdb does by default.
	ChecksumsDefault Checksums = ""
	// ChecksumsOn: initdb --data-checksums.
	ChecksumsOn Checksums = "on"
	// ChecksumsOff: no data checksums (initdb --no-data-checksums from
	// 18, its default before).
	ChecksumsOff Checksums = "off"
)

// InitdbChecksums is the data-checksum setting initdb of PostgreSQL major
// gives a cluster by default: on from 18, off before. pg_upgrade requires
// the old and new clusters to have the same, so a candidate standing for
// an upgrade of a major before 18 to 18 or later needs ChecksumsOff.
func InitdbChecksums(major int) Checksums {
	if major >= 18 {
		return ChecksumsOn
	}
	return ChecksumsOff
}

// Cluster is a running throwaway PostgreSQL server. Its methods may be
// called from several goroutines.
type Cluster struct {
	bin  string
	dir  string
	port int
	keep bool

	// cred is the identity the server binaries run as; nil means the
	// current user.
	cred *syscall.Credential

	// initdbArgs are initdb's options after -D: initdbArgs and the
	// data-checksum choice's.
	initdbArgs []string

	// watchdog stops the cluster if this process dies; writing "done" to
	// watchdogW dismisses it.
	watchdog  *exec.Cmd
	watchdogW *os.File

	mu         sync.Mutex
	serverDown bool
	stopped    bool
	stopErr    error
	snapshots  int // taken so far, naming the next one's directory
}

// Start creates a cluster with initdb and starts it with pg_ctl, waiting
// until it accepts connections. ctx bounds the start only; the server runs
// until Stop.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	binDir := opts.BinDir
	if opts.Version != 0 {
		if binDir != "" {
			return nil, fmt.Errorf("pgcluster: Options.Version %d and BinDir %s both set: choose one", opts.Version, binDir)
		}
		var err error
		if binDir, err = BinDirFor(opts.Version); err != nil {
			return nil, err
		}
	}
	bin, err := FindBinDir(binDir, serverPrograms...)
	if err != nil {
		return nil, err
	}
	// The binaries run in the cluster's directory: a relative path
	// would lead elsewhere from there.
	if bin, err = filepath.Abs(bin); err != nil {
		return nil, err
	}
	for name := range opts.Settings {
		if slices.Contains(reserved, strings.ToLower(name)) {
			return nil, fmt.Errorf("pgcluster: setting %s is reserved: pgcluster sets it", name)
		}
	}
	conf, err := settingsLines(opts.Settings)
	if err != nil {
		return nil, err
	}
	args, err := initdbArgsFor(bin, opts.Checksums)
	if err != nil {
		return nil, err
	}
	cred, err := ServerCredential()
	if err != nil {
		return nil, err
	}
	dir, err := makeDir(cred)
	if err != nil {
		return nil, err
	}
	c := &Cluster{bin: bin, dir: dir, keep: opts.Keep, cred: cred, initdbArgs: args}
	if err := c.init(ctx, conf); err != nil {
		// A server may be up even though pg_ctl failed (timed out, or
		// killed by ctx): only the absence of postmaster.pid proves
		// there is nothing to stop.
		if _, statErr := os.Stat(filepath.Join(c.DataDir(), "postmaster.pid")); errors.Is(statErr, os.ErrNotExist) {
			c.mu.Lock()
			c.serverDown = true
			c.mu.Unlock()
		}
		// The caller gets no Cluster to find the directory by, and the
		// error holds the server's log: keeping it would only leak it.
		c.keep = false
		if stopErr := c.Stop(); stopErr != nil {
			err = errors.Join(err, stopErr)
		}
		return nil, err
	}
	return c, nil
}

func (c *Cluster) init(ctx context.Context, conf string) error {
	for _, sub := range []string{c.LogDir(), c.SocketDir()} {
		if err := os.Mkdir(sub, 0o755); err != nil {
			return err
		}
		if err := c.chown(sub); err != nil {
			return err
		}
	}
	if err := c.makeData(ctx); err != nil {
		return err
	}
	if err := c.appendConf(conf); err != nil {
		return err
	}
	// Attach, in another process, runs the same binaries.
	if err := os.WriteFile(filepath.Join(c.dir, binDirFile), []byte(c.bin+"\n"), 0o644); err != nil {
		return err
	}
	if err := c.startWatchdog(); err != nil {
		return err
	}
	return c.startServer(ctx)
}

// appendConf adds pgcluster's defaults and then the caller's settings to
// postgresql.conf; a later line wins over an earlier one.
func (c *Cluster) appendConf(extra string) error {
	defaults := map[string]string{
		"listen_addresses":        "127.0.0.1",
		"unix_socket_directories": c.SocketDir(),
		"log_directory":           c.LogDir(),
		"lc_messages":             "C",
		// Durability is worthless in a cluster that is deleted after use.
		"fsync":              "off",
		"synchronous_commit": "off",
		"full_page_writes":   "off",
	}
	def, err := settingsLines(defaults)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(c.DataDir(), "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = io.WriteString(f, "\n# pgcluster defaults\n"+def+"# pgcluster.Options.Settings\n"+extra)
	return errors.Join(err, f.Close())
}

// startServer starts the server on a free TCP port. The port is picked by
// binding to port 0 and closing the socket, so another process may take it
// before the server binds it; that race is rare and shows up as "Address
// already in use" in the server's log, so the start is retried on a new
// port in that case only.
func (c *Cluster) startServer(ctx context.Context) error {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		if c.port, err = freePort(); err != nil {
			return err
		}
		logStart := fileSize(c.ServerLog())
		// The port goes on the command line rather than in
		// postgresql.conf so that a retry needs no rewrite. -w waits
		// until the server reports ready in postmaster.pid.
		cmd := c.server(ctx, "pg_ctl", "start", "-w", "-t", "120", "-D", c.DataDir(),
			"-l", c.ServerLog(), "-o", "-p "+strconv.Itoa(c.port))
		out, runErr := cmd.CombinedOutput()
		if runErr == nil {
			return nil
		}
		serverLog := readFrom(c.ServerLog(), logStart)
		err = fmt.Errorf("pg_ctl start: %w\n%s\nserver log:\n%s", runErr, out, serverLog)
		if !bytes.Contains(serverLog, []byte("Address already in use")) || ctx.Err() != nil {
			return err
		}
	}
	return err
}

// startWatchdog starts the process that cleans up after us if we die. It
// reads one line from a pipe whose only writer is this process: "done"
// dismisses it, and end of file — this process exited without calling
// Stop, however it died — makes it stop the server and remove the
// directory. It runs in its own session so that a Ctrl-C, which kills the
// test binary, does not kill it too, and as the server's user so that
// pg_ctl agrees to run.
func (c *Cluster) startWatchdog() error {
	const script = `read -r line
[ "$line" = done ] && exit 0
"$1" stop -D "$2" -m immediate -w -t 60 >/dev/null 2>&1
[ "$3" = keep ] || rm -rf "$4"`
	keep := "remove"
	if c.keep {
		keep = "keep"
	}
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd := exec.Command("/bin/sh", "-c", script, "pgcluster-watchdog",
		filepath.Join(c.bin, "pg_ctl"), c.DataDir(), keep, c.dir)
	cmd.Stdin = r
	cmd.Dir = c.dir
	cmd.Env = serverEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Credential: c.cred}
	err = cmd.Start()
	r.Close() // the child has its copy; ours would hide the end of file
	if err != nil {
		w.Close()
		return fmt.Errorf("start watchdog: %w", err)
	}
	c.watchdog, c.watchdogW = cmd, w
	return nil
}

// StopServer shuts the server down (fast mode: sessions are ended, nothing
// waits for clients) and waits until every server process, the logging
// collector included, has exited, so that the log files are complete. The
// directory stays until Stop. It is a no-op on a stopped server.
func (c *Cluster) StopServer() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stopServerLocked()
}

// StopServerSmart stops the server as StopServer does, but first lets the
// sessions still open end by themselves, for up to wait (a smart
// shutdown): a fast shutdown terminates them, and each logs FATAL 57P01,
// which a caller reading the log as a workload's would count as an error.
func (c *Cluster) StopServerSmart(wait time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.serverDown {
		return nil
	}
	secs := strconv.Itoa(max(int(wait.Seconds()), 1))
	if _, err := c.server(context.Background(), "pg_ctl", "stop", "-D", c.DataDir(), "-m", "smart", "-w", "-t", secs).CombinedOutput(); err == nil {
		c.serverDown = true
		return waitLeftovers(c.DataDir(), 30*time.Second)
	}
	// Sessions still open after wait: a smart shutdown already refuses
	// new connections; the fast one ends the rest.
	return c.stopServerLocked()
}

func (c *Cluster) stopServerLocked() error {
	if c.serverDown {
		return nil
	}
	c.serverDown = true
	ctx := context.Background()
	out, err := c.server(ctx, "pg_ctl", "stop", "-D", c.DataDir(), "-m", "fast", "-w", "-t", "60").CombinedOutput()
	if err != nil {
		// A server that does not finish a fast shutdown in a minute is
		// hung; an immediate shutdown still frees its processes.
		out2, err2 := c.server(ctx, "pg_ctl", "stop", "-D", c.DataDir(), "-m", "immediate", "-w", "-t", "60").CombinedOutput()
		if err2 != nil {
			return fmt.Errorf("pg_ctl stop: %w\n%s\n%s", err, out, out2)
		}
	}
	return waitLeftovers(c.DataDir(), 30*time.Second)
}

// Stop stops the server, removes the cluster directory unless Options.Keep
// is set, and dismisses the watchdog. Calling it again returns the first
// call's result.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return c.stopErr
	}
	c.stopped = true
	err := c.stopServerLocked()
	if !c.keep {
		if rmErr := os.RemoveAll(c.dir); rmErr != nil {
			err = errors.Join(err, rmErr)
		}
	}
	// The watchdog is dismissed last: if this process dies before, it
	// only repeats what was done.
	if c.watchdog != nil {
		_, _ = io.WriteString(c.watchdogW, "done\n")
		c.watchdogW.Close()
		_ = c.watchdog.Wait()
	}
	c.stopErr = err
	return err
}

// Dir is the cluster's directory, holding DataDir, LogDir, SocketDir and
// ServerLog.
func (c *Cluster) Dir() string { return c.dir }

// DataDir is the data directory made by initdb.
func (c *Cluster) DataDir() string { return filepath.Join(c.dir, "data") }

// LogDir is the log_directory: where the logging collector writes when
// logging_collector is on.
func (c *Cluster) LogDir() string { return filepath.Join(c.dir, "log") }

// ServerLog is the file pg_ctl sends the server's standard error to. With
// logging_collector off it is the whole server log; with it on, it only
// holds the lines written before the collector started.
func (c *Cluster) ServerLog() string { return filepath.Join(c.dir, "server.log") }

// SocketDir is the directory of the server's unix socket.
func (c *Cluster) SocketDir() string { return filepath.Join(c.dir, "run") }

// Port is the server's port, on 127.0.0.1 and in the socket's name.
func (c *Cluster) Port() int { return c.port }

// User is the name of the superuser role. Every role may log in without a
// password ("trust"), through the socket and through TCP.
func (c *Cluster) User() string { return superuser }

// BinDir is the directory of the PostgreSQL binaries in use.
func (c *Cluster) BinDir() string { return c.bin }

// DSN returns a keyword/value connection string for database db, as the
// superuser, through the unix socket.
func (c *Cluster) DSN(db string) string {
	return "host=" + quoteConninfo(c.SocketDir()) +
		" port=" + strconv.Itoa(c.port) +
		" user=" + quoteConninfo(superuser) +
		" dbname=" + quoteConninfo(db) +
		" sslmode=disable"
}

// Exec runs sql in database db as the superuser with the simple query
// protocol, so sql may hold several statements.
func (c *Cluster) Exec(ctx context.Context, db, sql string) error {
	conn, err := pgconn.Connect(ctx, c.DSN(db))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql).ReadAll()
	return err
}

// Pgbench runs pgbench against the cluster as the superuser and returns its
// combined output. It is the cluster's own pgbench, or the installed one
// when the cluster's bin directory has none (see Options.Version). The connection options come first, so args are the
// other options and an optional database name, as on pgbench's command line.
func (c *Cluster) Pgbench(ctx context.Context, args ...string) ([]byte, error) {
	return c.PgbenchEnv(ctx, nil, args...)
}

// PgbenchEnv is Pgbench with extra environment variables, such as
// PGOPTIONS to change settings for pgbench's sessions.
func (c *Cluster) PgbenchEnv(ctx context.Context, env []string, args ...string) ([]byte, error) {
	pgbench, err := c.pgbenchPath()
	if err != nil {
		return nil, err
	}
	full := append([]string{"-h", c.SocketDir(), "-p", strconv.Itoa(c.port), "-U", superuser}, args...)
	cmd := exec.CommandContext(ctx, pgbench, full...)
	cmd.Env = append(clientEnv(), env...)
	cmd.Dir = os.TempDir()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("pgbench %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return out, nil
}

// pgbenchPath is the cluster's own pgbench, or, for a bin directory
// without one (the server-only builds of the version cache), the
// installed pgbench FindBinDir finds: pgbench speaks the protocol and
// plain SQL that every supported server accepts, so the installed 15
// drives 13 to 18 alike.
func (c *Cluster) pgbenchPath() (string, error) {
	if hasPrograms(c.bin, []string{"pgbench"}) {
		return filepath.Join(c.bin, "pgbench"), nil
	}
	dir, err := FindBinDir("", "pgbench")
	if err != nil {
		return "", fmt.Errorf("%s has no pgbench, and: %w", c.bin, err)
	}
	return filepath.Join(dir, "pgbench"), nil
}

// LogFiles returns the files in LogDir matching the filepath.Match pattern,
// such as "*.log", "*.csv" or "*.json", sorted by name, which for the
// default log_filename is the order they were written in.
func (c *Cluster) LogFiles(pattern string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(c.LogDir(), pattern))
	slices.Sort(files)
	return files, err
}

// server returns a command running one of the server binaries as the
// server's user.
func (c *Cluster) server(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(c.bin, name), args...)
	// The server user may not be allowed into the current directory
	// (root's home); initdb and postgres complain about that.
	cmd.Dir = c.dir
	cmd.Env = serverEnv()
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	return cmd
}

func (c *Cluster) chown(path string) error {
	if c.cred == nil {
		return nil
	}
	return os.Chown(path, int(c.cred.Uid), int(c.cred.Gid))
}

// settingsLines renders settings as postgresql.conf lines, sorted by name
// so that the file does not depend on map order.
func settingsLines(settings map[string]string) (string, error) {
	names := make([]string, 0, len(settings))
	for name := range settings {
		names = append(names, name)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, name := range names {
		if !settingName.MatchString(name) {
			return "", fmt.Errorf("pgcluster: invalid setting name %q", name)
		}
		value := settings[name]
		if strings.ContainsAny(value, "\n\r") {
			return "", fmt.Errorf("pgcluster: setting %s: value may not span lines", name)
		}
		fmt.Fprintf(&b, "%s = '%s'\n", name, strings.ReplaceAll(value, "'", "''"))
	}
	return b.String(), nil
}

// ServerCredential returns the identity the server binaries must run as:
// nil for the current user, or the postgres user when running as root,
// which PostgreSQL refuses.
func ServerCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup(osUser)
	if err != nil {
		// Debian's postgresql package creates the user; a machine with
		// binaries from elsewhere may lack it. A concurrent test binary
		// may create it at the same time, so a failure is only final if
		// the user is still missing afterwards.
		out, addErr := exec.Command("useradd", "--system", "--user-group", "--no-create-home",
			"--shell", "/usr/sbin/nologin", osUser).CombinedOutput()
		if u, err = user.Lookup(osUser); err != nil {
			return nil, fmt.Errorf("running as root, and the %q user, which PostgreSQL needs to run as, is missing: useradd: %v %s", osUser, addErr, out)
		}
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, err
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// makeDir creates the cluster directory, owned by the server's user and
// enterable by everyone, so that clients running as other users reach the
// socket.
func makeDir(cred *syscall.Credential) (string, error) {
	base := os.TempDir()
	// The socket path, <dir>/run/.s.PGSQL.<port>, must fit in the 107
	// bytes of a unix socket address; and the server's user must be able
	// to reach the directory, which a $TMPDIR under root's home forbids.
	if len(base) > 60 || (cred != nil && !reachable(base)) {
		base = "/tmp"
	}
	dir, err := os.MkdirTemp(base, "pgcluster-")
	if err != nil {
		return "", err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", errors.Join(err, os.RemoveAll(dir))
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return "", errors.Join(err, os.RemoveAll(dir))
		}
	}
	return dir, nil
}

// reachable reports whether every directory from / to dir may be searched
// by any user.
func reachable(dir string) bool {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil || fi.Mode().Perm()&0o001 == 0 {
			return false
		}
		if d == filepath.Dir(d) {
			return true
		}
	}
}

// serverEnv is the environment of the server binaries: the current one
// without variables that would redirect them (PGDATA, PGPORT...) or change
// their language.
func serverEnv() []string {
	env := clientEnv()
	return append(env, "LC_ALL=C")
}

// clientEnv is the environment of client programs: the current one without
// libpq's PG* variables, so that only the explicit options count.
func clientEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PG") || strings.HasPrefix(kv, "LC_") || strings.HasPrefix(kv, "LANG") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// freePort picks a free TCP port below the kernel's ephemeral range, so
// that the port a cluster keeps across a restart (Restore, a datadir
// reset) is never the local port of some outgoing connection meanwhile:
// a port the kernel handed out by binding to port 0 is one it hands out
// again to clients, and a restart on it failed with "Address already in
// use" on a busy machine (TestSnapshotRestore). Where the ephemeral range
// starts too low to leave room, the kernel picks.
func freePort() (int, error) {
	if lo := ephemeralLow(); lo-portSpan >= 1024 {
		for range 64 {
			port := lo - portSpan + rand.IntN(portSpan)
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
			if err != nil {
				continue
			}
			return port, l.Close()
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	return port, l.Close()
}

// portSpan is how many ports below the ephemeral range freePort picks
// from.
const portSpan = 12000

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's
// ip_local_port_range), 32768 where it cannot be read.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 32768
	}
	lo, err := strconv.Atoi(f[0])
	if err != nil {
		return 32768
	}
	return lo
}

// quoteConninfo quotes a keyword/value connection string value.
func quoteConninfo(s string) string {
	if s != "" && !strings.ContainsAny(s, " '\\\t\n") {
		return s
	}
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// readFrom returns the end of a file from offset, at most 8 kB of it.
func readFrom(path string, offset int64) []byte {
	b, err := os.ReadFile(path)
	if err != nil || offset > int64(len(b)) {
		return nil
	}
	b = b[offset:]
	if len(b) > 8<<10 {
		b = b[len(b)-8<<10:]
	}
	return b
}
