package reset

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/connstr"
	"github.com/pgrehearse/pgrehearse/internal/event"
)

// NamePrefix begins the name of every database a template reset creates,
// so that a DBA (and the leftovers check) can tell them apart.
const NamePrefix = "pgrehearse_"

// maxNameLen is PostgreSQL's NAMEDATALEN - 1: longer names are truncated
// by the server, and two copies could then collide.
const maxNameLen = 63

// DefaultSessionWait is how long Prepare waits for other sessions to
// leave a database before it gives up on copying it.
const DefaultSessionWait = 30 * time.Second

// ErrCannotCreateDatabases is wrapped by Prepare's error when the login
// may not create databases, which a template reset needs.
var ErrCannotCreateDatabases = errors.New("the login may not create databases (it needs CREATEDB or superuser)")

// Template resets a target by copying each database the workload uses.
// Prepare makes a pristine copy of each database as it is now (the
// template, which no one may connect to); Reset copies the templates to
// fresh databases for the round, with the original's owner, connection
// limit, privileges and settings (ALTER DATABASE ... SET and ALTER ROLE
// ... IN DATABASE ... SET, which a copy would otherwise lose); Release
// drops them; Close drops the templates.
//
// The copy uses STRATEGY FILE_COPY on PostgreSQL 15 and later (the only
// strategy before): a checkpoint and a copy of the files, rather than
// WAL_LOG's page by page copy through shared buffers and the WAL, which
// is slower for anything but small databases and would fill the WAL
// between rounds. Each round starts with its databases out of shared
// buffers, the same for every round.
type Template struct {
	// DSN is a connection string of the target; its login must be
	// allowed to create databases. Its database is used for the
	// statements of the reset unless it is one of Databases.
	DSN string
	// Databases are the target's databases the workload uses, as the
	// replay would connect to them (after the user's database map).
	// "" stands for the DSN's own database. Those that do not exist on
	// the target are not copied (Missing lists them): their sessions
	// fail to connect in the replay as they would without a reset.
	Databases []string
	// SessionWait bounds the wait for other sessions to leave a
	// database before its template is made; zero means
	// DefaultSessionWait. pgrehearse's own sessions are terminated.
	SessionWait time.Duration
	// RunID goes into the names of the databases made; empty means a
	// random one.
	RunID string

	cfg       *pgconn.Config
	version   int
	dbs       []*templateDB
	missing   []string
	leftovers []string
}

// templateDB is one database copied for every round.
type templateDB struct {
	name     string   // on the target
	keys     []string // the names the replay maps: name, and "" for the DSN's own
	template string   // the pristine copy; "" until made
	owner    string
	connLim  int
	bytes    int64
	grants   []grant // nil: the default privileges
	settings []dbSetting
}

type grant struct {
	grantee   string // "" for PUBLIC
	privilege string
	grantable bool
}

type dbSetting struct {
	role  string // "" for every role
	name  string
	value string
}

// BusyError says that other sessions stayed connected to a database that
// must be copied: PostgreSQL copies a database only when no one is
// connected to it.
type BusyError struct {
	Database string
	Sessions []Session
	Waited   time.Duration
}

// Session is a session connected to a database.
type Session struct {
	PID         int
	User        string
	Application string
	Client      string
	State       string
}

func (e *BusyError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "database %q cannot be copied: %d other sessions stayed connected to it for %v; close them:", e.Database, len(e.Sessions), e.Waited)
	for _, s := range e.Sessions {
		fmt.Fprintf(&b, "\n  pid %d, user %q, application %q, from %s, %s", s.PID, s.User, s.Application, s.Client, s.State)
	}
	return b.String()
}

// Mode is ModeTemplate.
func (t *Template) Mode() Mode { return ModeTemplate }

// Missing lists the databases of Databases that the target does not have.
func (t *Template) Missing() []string { return t.missing }

// Leftovers lists databases named like a template reset's that were there
// before Prepare: from a rehearsal that was killed, or one running now.
// They are left alone.
func (t *Template) Leftovers() []string { return t.leftovers }

// Bytes is the size of the databases copied, as Prepare found them: each
// round needs that much disk again, and the templates hold as much.
func (t *Template) Bytes() int64 {
	var n int64
	for _, db := range t.dbs {
		n += db.bytes
	}
	return n
}

// CanCreateDatabases reports whether the login of dsn may create
// databases, which a template reset needs.
func CanCreateDatabases(ctx context.Context, dsn string) (bool, error) {
	cfg, err := connstr.ParsePgx(dsn)
	if err != nil {
		return false, err
	}
	cfg.RuntimeParams["application_name"] = event.OwnApplicationPrefix + "reset"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return false, err
	}
	defer conn.Close(context.Background())
	var ok bool
	err = conn.QueryRow(ctx, "SELECT rolsuper OR rolcreatedb FROM pg_roles WHERE rolname = current_user").Scan(&ok)
	return ok, err
}

// Prepare makes the pristine templates.
func (t *Template) Prepare(ctx context.Context) error {
	cfg, err := connstr.Parse(t.DSN)
	if err != nil {
		return err
	}
	t.cfg = cfg
	if t.RunID == "" {
		var b [3]byte
		_, _ = rand.Read(b[:])
		t.RunID = hex.EncodeToString(b[:])
	}
	own := cfg.Database
	if own == "" {
		own = cfg.User
	}
	t.dbs = nil
	for _, name := range t.Databases {
		key := name
		if name == "" {
			name = own
		}
		i := slices.IndexFunc(t.dbs, func(db *templateDB) bool { return db.name == name })
		if i < 0 {
			t.dbs = append(t.dbs, &templateDB{name: name})
			i = len(t.dbs) - 1
		}
		if !slices.Contains(t.dbs[i].keys, key) {
			t.dbs[i].keys = append(t.dbs[i].keys, key)
		}
		if !slices.Contains(t.dbs[i].keys, name) {
			t.dbs[i].keys = append(t.dbs[i].keys, name)
		}
	}
	if len(t.dbs) == 0 {
		return errors.New("reset: no database to copy")
	}

	conn, err := t.connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	var canCreate bool
	var user string
	if err := conn.QueryRow(ctx, "SELECT rolsuper OR rolcreatedb, current_user FROM pg_roles WHERE rolname = current_user").Scan(&canCreate, &user); err != nil {
		return err
	}
	if !canCreate {
		return fmt.Errorf("template reset as %q: %w", user, ErrCannotCreateDatabases)
	}
	rows, err := conn.Query(ctx, `SELECT datname FROM pg_database WHERE starts_with(datname, $1) ORDER BY 1`, NamePrefix)
	if err != nil {
		return err
	}
	if t.leftovers, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		return err
	}

	var kept []*templateDB
	for _, db := range t.dbs {
		found, err := db.read(ctx, conn)
		if err != nil {
			return fmt.Errorf("read database %q: %w", db.name, err)
		}
		if !found {
			t.missing = append(t.missing, db.name)
			continue
		}
		kept = append(kept, db)
	}
	t.dbs = kept
	for _, db := range t.dbs {
		if err := t.makeTemplate(ctx, conn, db); err != nil {
			return err
		}
	}
	return nil
}

// connect opens the connection the reset's statements run on, to a
// database that is not copied (a session in a database prevents its copy).
func (t *Template) connect(ctx context.Context) (*pgx.Conn, error) {
	cfg, err := connstr.ParsePgx(t.DSN)
	if err != nil {
		return nil, err
	}
	busy := func(name string) bool {
		return slices.ContainsFunc(t.dbs, func(db *templateDB) bool { return db.name == name })
	}
	for _, name := range []string{cfg.Database, "postgres", "template1"} {
		if name != "" && !busy(name) {
			cfg.Database = name
			break
		}
	}
	cfg.RuntimeParams["application_name"] = event.OwnApplicationPrefix + "reset"
	// Literals below are quoted for standard strings.
	cfg.RuntimeParams["standard_conforming_strings"] = "on"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if t.version == 0 {
		var v string
		if err := conn.QueryRow(ctx, "SHOW server_version_num").Scan(&v); err != nil {
			conn.Close(context.Background())
			return nil, err
		}
		t.version, _ = strconv.Atoi(v)
	}
	return conn, nil
}

// read fills in what a copy of db must have that CREATE DATABASE does not
// copy; found is false when the target has no such database.
func (db *templateDB) read(ctx context.Context, conn *pgx.Conn) (found bool, err error) {
	var aclNull bool
	err = conn.QueryRow(ctx, `SELECT pg_get_userbyid(datdba), datconnlimit, datacl IS NULL, pg_database_size(oid)
		FROM pg_database WHERE datname = $1`, db.name).Scan(&db.owner, &db.connLim, &aclNull, &db.bytes)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !aclNull {
		rows, err := conn.Query(ctx, `SELECT coalesce(r.rolname, ''), a.privilege_type, a.is_grantable
			FROM pg_database d CROSS JOIN LATERAL aclexplode(d.datacl) a LEFT JOIN pg_roles r ON r.oid = a.grantee
			WHERE d.datname = $1 AND a.grantee <> d.datdba ORDER BY 1, 2`, db.name)
		if err != nil {
			return false, err
		}
		db.grants, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (grant, error) {
			var g grant
			return g, row.Scan(&g.grantee, &g.privilege, &g.grantable)
		})
		if err != nil {
			return false, err
		}
		if db.grants == nil {
			db.grants = []grant{}
		}
	}
	rows, err := conn.Query(ctx, `SELECT coalesce(r.rolname, ''), u.cfg
		FROM pg_db_role_setting s JOIN pg_database d ON d.oid = s.setdatabase
		LEFT JOIN pg_roles r ON r.oid = s.setrole
		CROSS JOIN LATERAL unnest(s.setconfig) WITH ORDINALITY AS u(cfg, n)
		WHERE d.datname = $1 ORDER BY 1, u.n`, db.name)
	if err != nil {
		return false, err
	}
	db.settings, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (dbSetting, error) {
		var s dbSetting
		var kv string
		if err := row.Scan(&s.role, &kv); err != nil {
			return s, err
		}
		s.name, s.value, _ = strings.Cut(kv, "=")
		return s, nil
	})
	return true, err
}

// makeTemplate copies db to its pristine template, which no one may
// connect to.
func (t *Template) makeTemplate(ctx context.Context, conn *pgx.Conn, db *templateDB) error {
	wait := orDefault(t.SessionWait, DefaultSessionWait)
	name := fitName(NamePrefix+t.RunID+"_tpl_", db.name)
	deadline := time.Now().Add(wait)
	for {
		sessions, err := t.clearSessions(ctx, conn, db.name)
		if err != nil {
			return err
		}
		if len(sessions) == 0 {
			_, err = conn.Exec(ctx, "CREATE DATABASE "+ident(name)+" TEMPLATE "+ident(db.name)+t.strategy())
			if err == nil {
				break
			}
			// Someone connected between the look and the copy.
			if !isCode(err, "55006") {
				return fmt.Errorf("copy database %q to %q: %w", db.name, name, err)
			}
		}
		if time.Now().After(deadline) {
			if len(sessions) == 0 {
				return fmt.Errorf("copy database %q to %q: %w", db.name, name, err)
			}
			return &BusyError{Database: db.name, Sessions: sessions, Waited: wait}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	db.template = name
	_, err := conn.Exec(ctx, "ALTER DATABASE "+ident(name)+" WITH ALLOW_CONNECTIONS false")
	return err
}

// clearSessions terminates pgrehearse's own sessions in database name and
// returns the others. Autovacuum workers do not count: CREATE DATABASE
// ends them itself.
func (t *Template) clearSessions(ctx context.Context, conn *pgx.Conn, name string) ([]Session, error) {
	rows, err := conn.Query(ctx, `SELECT pid, coalesce(usename, ''), application_name,
			coalesce(host(client_addr), 'the local socket'), coalesce(state, ''),
			starts_with(application_name, $2)
		FROM pg_stat_activity
		WHERE datname = $1 AND pid <> pg_backend_pid() AND backend_type <> 'autovacuum worker'
		ORDER BY pid`, name, event.OwnApplicationPrefix)
	if err != nil {
		return nil, err
	}
	var others []Session
	var own []int
	for rows.Next() {
		var s Session
		var isOwn bool
		if err := rows.Scan(&s.PID, &s.User, &s.Application, &s.Client, &s.State, &isOwn); err != nil {
			rows.Close()
			return nil, err
		}
		if isOwn {
			own = append(own, s.PID)
		} else {
			others = append(others, s)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, pid := range own {
		if _, err := conn.Exec(ctx, "SELECT pg_terminate_backend($1)", pid); err != nil {
			return nil, err
		}
	}
	// A terminated backend may take a moment to exit; CREATE DATABASE
	// waits up to 5 s for that itself.
	return others, nil
}

// strategy is the STRATEGY clause of CREATE DATABASE, which PostgreSQL 15
// added (FILE_COPY was the only way before).
func (t *Template) strategy() string {
	if t.version >= 150000 {
		return " STRATEGY FILE_COPY"
	}
	return ""
}

// Reset copies every template to a fresh database for the round.
func (t *Template) Reset(ctx context.Context, round int) (State, error) {
	start := time.Now()
	st := State{Mode: ModeTemplate, Round: round, Databases: map[string]string{}}
	conn, err := t.connect(ctx)
	if err != nil {
		return st, err
	}
	defer conn.Close(context.Background())
	for _, db := range t.dbs {
		if db.template == "" {
			return st, fmt.Errorf("reset: no template of database %q: Prepare failed or was not called", db.name)
		}
		name := fitName(NamePrefix+t.RunID+"_r"+strconv.Itoa(round)+"_", db.name)
		for _, k := range db.keys {
			st.Databases[k] = name
		}
		if err := t.copyFor(ctx, conn, db, name); err != nil {
			return st, err
		}
	}
	st.Seconds = since(start)
	return st, nil
}

// copyFor makes database name from db's template, as db is.
func (t *Template) copyFor(ctx context.Context, conn *pgx.Conn, db *templateDB, name string) error {
	create := "CREATE DATABASE " + ident(name) + " TEMPLATE " + ident(db.template) + t.strategy() +
		" OWNER " + ident(db.owner) + " CONNECTION LIMIT " + strconv.Itoa(db.connLim)
	if _, err := conn.Exec(ctx, create); err != nil {
		return fmt.Errorf("copy database %q for the round (as %q, owned by %q): %w", db.name, name, db.owner, err)
	}
	var stmts []string
	if db.grants != nil {
		stmts = append(stmts, "REVOKE ALL ON DATABASE "+ident(name)+" FROM PUBLIC")
		for _, g := range db.grants {
			to := "PUBLIC"
			if g.grantee != "" {
				to = ident(g.grantee)
			}
			s := "GRANT " + g.privilege + " ON DATABASE " + ident(name) + " TO " + to
			if g.grantable {
				s += " WITH GRANT OPTION"
			}
			stmts = append(stmts, s)
		}
	}
	for _, s := range db.settings {
		target := "DATABASE " + ident(name)
		if s.role != "" {
			target = "ROLE " + ident(s.role) + " IN DATABASE " + ident(name)
		}
		stmts = append(stmts, "ALTER "+target+" SET "+ident(s.name)+" TO "+settingValue(s.name, s.value))
	}
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			return fmt.Errorf("give the copy of database %q what the original has: %s: %w", db.name, s, err)
		}
	}
	return nil
}

// Release drops the round's copies, ending any session still in them.
func (t *Template) Release(ctx context.Context, st State) error {
	return t.dropAll(ctx, slices.Compact(slices.Sorted(maps.Values(st.Databases))), nil)
}

// Close drops the templates.
func (t *Template) Close(ctx context.Context) error {
	var made []*templateDB
	var names []string
	for _, db := range t.dbs {
		if db.template != "" {
			made = append(made, db)
			names = append(names, db.template)
		}
	}
	return t.dropAll(ctx, names, func(i int) { made[i].template = "" })
}

// dropAll drops the databases named (each named once) on one
// connection, telling dropped (if not nil) the index of each it dropped.
func (t *Template) dropAll(ctx context.Context, names []string, dropped func(i int)) error {
	if len(names) == 0 {
		return nil
	}
	conn, err := t.connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	var errs []error
	for i, name := range names {
		if err := t.drop(ctx, conn, name); err != nil {
			errs = append(errs, err)
			continue
		}
		if dropped != nil {
			dropped(i)
		}
	}
	return errors.Join(errs...)
}

// drop drops database name, ending the sessions in it (WITH (FORCE) on
// PostgreSQL 13 and later).
func (t *Template) drop(ctx context.Context, conn *pgx.Conn, name string) error {
	var err error
	if t.version >= 130000 {
		_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+ident(name)+" WITH (FORCE)")
	} else {
		if _, err = conn.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1", name); err == nil {
			_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+ident(name))
		}
	}
	if err != nil {
		return fmt.Errorf("drop database %q: %w", name, err)
	}
	return nil
}

// fitName is prefix+name, cut to PostgreSQL's 63 bytes on a character
// boundary with a hash of the whole name, so that two long names never
// end up equal.
func fitName(prefix, name string) string {
	full := prefix + name
	if len(full) <= maxNameLen {
		return full
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	suffix := fmt.Sprintf("_%08x", h.Sum32())
	cut := full[:maxNameLen-len(suffix)]
	for !utf8.ValidString(cut) {
		cut = cut[:len(cut)-1]
	}
	return cut + suffix
}

// ident quotes an SQL identifier.
func ident(s string) string { return pgx.Identifier{s}.Sanitize() }

// literal quotes an SQL string literal (standard_conforming_strings on).
func literal(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// listQuoted are the settings whose value is a list of names that the
// server stores quoted (GUC_LIST_QUOTE); pg_dump has the same list. Set
// as one literal, such a value would be quoted again as one name.
var listQuoted = []string{"local_preload_libraries", "search_path", "session_preload_libraries",
	"shared_preload_libraries", "temp_tablespaces", "unix_socket_directories"}

// settingValue renders a stored setting value for ALTER ... SET ... TO.
func settingValue(name, value string) string {
	if !slices.Contains(listQuoted, strings.ToLower(name)) {
		return literal(value)
	}
	items := splitList(value)
	if len(items) == 0 {
		return "''"
	}
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = literal(it)
	}
	return strings.Join(out, ", ")
}

// splitList splits a stored list setting ("$user", public) into its
// names, unquoting the double-quoted ones, as the server's SplitGUCList.
func splitList(s string) []string {
	var out []string
	i := 0
	for {
		for i < len(s) && s[i] == ' ' {
			i++
		}
		if i >= len(s) {
			return out
		}
		var b strings.Builder
		if s[i] == '"' {
			i++
			for i < len(s) {
				if s[i] == '"' {
					if i+1 < len(s) && s[i+1] == '"' {
						b.WriteByte('"')
						i += 2
						continue
					}
					i++
					break
				}
				b.WriteByte(s[i])
				i++
			}
		} else {
			for i < len(s) && s[i] != ',' && s[i] != ' ' {
				b.WriteByte(s[i])
				i++
			}
		}
		out = append(out, b.String())
		for i < len(s) && s[i] == ' ' {
			i++
		}
		if i < len(s) && s[i] == ',' {
			i++
		}
	}
}

func isCode(err error, code string) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == code
}

// CheckTemplate says, before a run, what the login of dsn lacks for a
// template reset of databases (those the workload uses; "" is the DSN's
// own), each with what to do: creating databases (CREATEDB), and for each
// database that exists, that the login may copy it (its owner, a member
// of its owner, or a superuser, unless it is a template). It
// returns an error when the server cannot be asked.
func CheckTemplate(ctx context.Context, dsn string, databases []string) ([]string, error) {
	cfg, err := connstr.ParsePgx(dsn)
	if err != nil {
		return nil, err
	}
	own := cfg.Database
	if own == "" {
		own = cfg.User
	}
	cfg.RuntimeParams["application_name"] = event.OwnApplicationPrefix + "reset"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, connstr.SafeError(err)
	}
	defer conn.Close(context.Background())
	var super, createdb bool
	var user string
	if err := conn.QueryRow(ctx, "SELECT rolsuper, rolcreatedb, current_user FROM pg_roles WHERE rolname = current_user").Scan(&super, &createdb, &user); err != nil {
		return nil, err
	}
	var out []string
	if !super && !createdb {
		out = append(out, fmt.Sprintf("the login %q may not create databases, which --reset template does for each round: ALTER ROLE %s CREATEDB", user, ident(user)))
	}
	var seen []string
	for _, name := range databases {
		if name == "" {
			name = own
		}
		if slices.Contains(seen, name) {
			continue
		}
		seen = append(seen, name)
		var found, mayCopy, ownerPowerful bool
		var owner string
		err := conn.QueryRow(ctx, `SELECT true, pg_get_userbyid(datdba), $2 OR datistemplate OR pg_has_role(current_user, datdba, 'USAGE'),
			EXISTS (SELECT FROM pg_roles r WHERE pg_has_role(datdba, r.oid, 'MEMBER')
				AND (r.rolsuper OR r.rolname IN ('pg_execute_server_program', 'pg_write_server_files')))
			FROM pg_database WHERE datname = $1`, name, super).Scan(&found, &owner, &mayCopy, &ownerPowerful)
		if errors.Is(err, pgx.ErrNoRows) {
			continue // the log may create it; Prepare says so (Missing)
		}
		if err != nil {
			return nil, err
		}
		if !mayCopy {
			out = append(out, mayNotCopy(user, name, owner, ownerPowerful))
		}
	}
	return out, nil
}

// mayNotCopy says that the login user may not copy the database name,
// owned by owner, and what to do: the login's ownership of it, or its
// membership in the owner. Membership is never proposed when the owner is
// a superuser, a member of one, or of a role that runs programs or writes
// files on the server (ownerPowerful): the login could then SET ROLE to
// it and be a superuser (issue 57 item 6).
func mayNotCopy(user, name, owner string, ownerPowerful bool) string {
	s := fmt.Sprintf("the login %q may not copy the database %q, owned by %q: ALTER DATABASE %s OWNER TO %s", user, name, owner, ident(name), ident(user))
	if ownerPowerful {
		return s + fmt.Sprintf(" (or to another role that is not a superuser, of which %q is a member; %q is or acts as a superuser, "+
			"and membership in it would let the login SET ROLE to it, so none is proposed)", user, owner)
	}
	return s + fmt.Sprintf(", or GRANT %s TO %s", ident(owner), ident(user))
}
