package reset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// setupApp makes a database with what a copy must keep: an owner other
// than the login, settings (one a quoted list), a role's setting in it,
// privileges and a connection limit, and a table and a sequence that the
// rounds write.
func setupApp(t *testing.T, c *pgcluster.Cluster) {
	t.Helper()
	ctx := context.Background()
	for _, sql := range []string{
		"CREATE ROLE appowner LOGIN",
		"CREATE ROLE reader LOGIN",
		"CREATE DATABASE app OWNER appowner CONNECTION LIMIT 50",
		`ALTER DATABASE app SET search_path TO "$user", public, "Odd ""Schema"""`,
		"ALTER DATABASE app SET random_page_cost = 7",
		"ALTER ROLE appowner IN DATABASE app SET work_mem = '3MB'",
		"REVOKE ALL ON DATABASE app FROM PUBLIC",
		"GRANT CONNECT, TEMPORARY ON DATABASE app TO reader",
	} {
		if err := c.Exec(ctx, "postgres", sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	if err := c.Exec(ctx, "app", `CREATE TABLE items (id int PRIMARY KEY, v text NOT NULL);
		INSERT INTO items SELECT i, 'item ' || i FROM generate_series(1, 500) i;
		CREATE SEQUENCE ids START 1000; ALTER TABLE items OWNER TO appowner`); err != nil {
		t.Fatal(err)
	}
	pgclustertest.Exec(t, c, "postgres", "CREATE TABLE counters (k text PRIMARY KEY, n int); INSERT INTO counters VALUES ('a', 1), ('b', 2)")
}

func queryText(t *testing.T, dsn, sql string, args ...any) string {
	t.Helper()
	ctx := context.Background()
	conn := pgclustertest.Connect(ctx, t, dsn)
	defer conn.Close(ctx)
	var s string
	if err := conn.QueryRow(ctx, sql, args...).Scan(&s); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return s
}

// appState is the starting state a round must see: row counts and
// checksums of the tables the rounds write, and the sequence.
func appState(t *testing.T, c *pgcluster.Cluster, app, pg string) string {
	t.Helper()
	return queryText(t, c.DSN(app), `SELECT count(*) || ' ' || md5(string_agg(i::text, ',' ORDER BY id)) || ' ' ||
		(SELECT last_value || is_called::text FROM ids) FROM items i`) + " / " +
		queryText(t, c.DSN(pg), `SELECT count(*) || ' ' || md5(string_agg(c::text, ',' ORDER BY k)) FROM counters c`)
}

// dbTraits is what a copy must have as the original has it.
func dbTraits(t *testing.T, c *pgcluster.Cluster, db string) string {
	t.Helper()
	return queryText(t, c.DSN("postgres"), `SELECT pg_get_userbyid(d.datdba) || ' limit ' || d.datconnlimit || ' acl ' ||
		coalesce((SELECT string_agg(coalesce(r.rolname, 'PUBLIC') || ':' || a.privilege_type, ',' ORDER BY 1)
			FROM aclexplode(d.datacl) a LEFT JOIN pg_roles r ON r.oid = a.grantee), '-') || ' settings ' ||
		coalesce((SELECT string_agg(coalesce(r.rolname, '*') || ':' || array_to_string(s.setconfig, ';'), ',' ORDER BY 1)
			FROM pg_db_role_setting s LEFT JOIN pg_roles r ON r.oid = s.setrole WHERE s.setdatabase = d.oid), '-')
		FROM pg_database d WHERE datname = $1`, db)
}

func databases(t *testing.T, c *pgcluster.Cluster) []string {
	t.Helper()
	ctx := context.Background()
	conn := pgclustertest.Connect(ctx, t, c.DSN("postgres"))
	defer conn.Close(ctx)
	rows, _ := conn.Query(ctx, "SELECT datname FROM pg_database WHERE starts_with(datname, $1) ORDER BY 1", NamePrefix)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestTemplateReset: after a round that inserts, updates and deletes in
// two databases, the next round's copies start as the first round's did;
// the copies keep the original's owner, limit, privileges and settings;
// the original is untouched; nothing is left at the end.
func TestTemplateReset(t *testing.T) {
	t.Parallel()
	c := pgclustertest.StartT(t, pgcluster.Options{})
	setupApp(t, c)
	ctx := context.Background()
	start := appState(t, c, "app", "postgres")
	traits := dbTraits(t, c, "app")

	// The DSN's own database is one of those copied: the reset's own
	// statements must run elsewhere.
	tr := &Template{DSN: c.DSN("postgres"), Databases: []string{"app", "", "no_such_db", "app"}}
	if err := tr.Prepare(ctx); err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	if !slices.Equal(tr.Missing(), []string{"no_such_db"}) {
		t.Errorf("Missing = %v, want [no_such_db]", tr.Missing())
	}
	if len(tr.Leftovers()) != 0 {
		t.Errorf("Leftovers = %v on a fresh cluster", tr.Leftovers())
	}
	if tr.Bytes() <= 0 {
		t.Errorf("Bytes = %d", tr.Bytes())
	}
	// No one may connect to a template.
	if conn, err := pgconn.Connect(ctx, c.DSN(NamePrefix+tr.RunID+"_tpl_app")); err == nil {
		conn.Close(ctx)
		t.Errorf("connected to the template")
	}

	for round := 1; round <= 3; round++ {
		st, err := tr.Reset(ctx, round)
		if err != nil {
			t.Fatalf("Reset %d: %v", round, err)
		}
		app, pg := st.Databases["app"], st.Databases["postgres"]
		if app == "" || pg == "" || st.Databases[""] != pg || len(st.Databases) != 3 {
			t.Fatalf("round %d databases = %v, want app, postgres and \"\" mapped", round, st.Databases)
		}
		if !strings.HasPrefix(app, NamePrefix) || st.Mode != ModeTemplate || st.Round != round || st.Drifted || st.Seconds <= 0 {
			t.Errorf("round %d state = %+v", round, st)
		}
		if got := appState(t, c, app, pg); got != start {
			t.Errorf("round %d starts from %q, want %q", round, got, start)
		}
		if got := dbTraits(t, c, app); got != traits {
			t.Errorf("round %d copy has\n %s\nwant\n %s", round, got, traits)
		}
		// A round writes.
		if err := c.Exec(ctx, app, `INSERT INTO items VALUES (9999, 'new'); UPDATE items SET v = 'changed' WHERE id <= 10;
			DELETE FROM items WHERE id > 400; SELECT nextval('ids')`); err != nil {
			t.Fatal(err)
		}
		pgclustertest.Exec(t, c, pg, "UPDATE counters SET n = n + 1; DELETE FROM counters WHERE k = 'b'")
		if got := appState(t, c, app, pg); got == start {
			t.Fatalf("round %d: the writes did not change the state", round)
		}
		// A session left open in the copy (a replay's straggler) does
		// not stop the drop.
		straggler := pgclustertest.PgConn(ctx, t, c.DSN(app))
		if err := tr.Release(ctx, st); err != nil {
			t.Fatalf("Release %d: %v", round, err)
		}
		straggler.Close(ctx)
		if names := databases(t, c); slices.Contains(names, app) || slices.Contains(names, pg) {
			t.Errorf("round %d copies not dropped: %v", round, names)
		}
	}
	if got := appState(t, c, "app", "postgres"); got != start {
		t.Errorf("the original databases changed: %q, want %q", got, start)
	}
	if err := tr.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if names := databases(t, c); len(names) != 0 {
		t.Errorf("left after Close: %v", names)
	}
}

// TestTemplateSessions: another client connected to a database stops its
// copy with the client named; pgrehearse's own sessions are ended.
func TestTemplateSessions(t *testing.T) {
	t.Parallel()
	c := pgclustertest.StartT(t, pgcluster.Options{})
	setupApp(t, c)
	ctx := context.Background()

	cfg, err := pgconn.ParseConfig(c.DSN("app"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["application_name"] = "psql-of-a-colleague"
	other, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	tr := &Template{DSN: c.DSN("postgres"), Databases: []string{"postgres", "app"}, SessionWait: time.Second}
	err = tr.Prepare(ctx)
	var busy *BusyError
	if !errors.As(err, &busy) || busy.Database != "app" || len(busy.Sessions) != 1 ||
		busy.Sessions[0].Application != "psql-of-a-colleague" || !strings.Contains(err.Error(), "psql-of-a-colleague") {
		t.Fatalf("Prepare with a session in app: %v, want a BusyError naming it", err)
	}
	// What Prepare made before it stopped goes with Close.
	if names := databases(t, c); len(names) != 1 {
		t.Errorf("after the failed Prepare: %v, want the template of postgres", names)
	}
	if err := tr.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if names := databases(t, c); len(names) != 0 {
		t.Errorf("after Close: %v", names)
	}
	other.Close(ctx)

	cfg.RuntimeParams["application_name"] = "pgrehearse-observer"
	own, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close(ctx)
	tr2 := &Template{DSN: c.DSN("app"), Databases: []string{"app"}, SessionWait: 10 * time.Second}
	if err := tr2.Prepare(ctx); err != nil {
		t.Fatalf("Prepare with one of pgrehearse's sessions in app: %v", err)
	}
	t.Cleanup(func() { tr2.Close(context.Background()) })
	if _, err := own.Exec(ctx, "SELECT 1").ReadAll(); err == nil {
		t.Errorf("pgrehearse's own session in app was not ended")
	}

	// A second rehearsal sees the first one's databases.
	tr3 := &Template{DSN: c.DSN("postgres"), Databases: []string{"postgres"}}
	if err := tr3.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	defer tr3.Close(ctx)
	if len(tr3.Leftovers()) != 1 || !strings.HasPrefix(tr3.Leftovers()[0], NamePrefix+tr2.RunID) {
		t.Errorf("Leftovers = %v, want the other rehearsal's template", tr3.Leftovers())
	}
}

// TestTemplateNeedsCreateDB: a login that may not create databases is
// told so, before anything is done.
func TestTemplateNeedsCreateDB(t *testing.T) {
	t.Parallel()
	c := pgclustertest.StartT(t, pgcluster.Options{})
	ctx := context.Background()
	pgclustertest.Exec(t, c, "postgres", "CREATE ROLE plain LOGIN")
	dsn := strings.Replace(c.DSN("postgres"), "user="+c.User(), "user=plain", 1)
	if ok, err := CanCreateDatabases(ctx, dsn); err != nil || ok {
		t.Errorf("CanCreateDatabases(plain) = %v, %v", ok, err)
	}
	if ok, err := CanCreateDatabases(ctx, c.DSN("postgres")); err != nil || !ok {
		t.Errorf("CanCreateDatabases(superuser) = %v, %v", ok, err)
	}
	err := (&Template{DSN: dsn, Databases: []string{"postgres"}}).Prepare(ctx)
	if !errors.Is(err, ErrCannotCreateDatabases) || !strings.Contains(err.Error(), `"plain"`) {
		t.Errorf("Prepare as plain: %v, want ErrCannotCreateDatabases naming the login", err)
	}
}

func TestFitName(t *testing.T) {
	long := strings.Repeat("é", 40) // 80 bytes
	a := fitName("pgrehearse_abcdef_r12_", long)
	b := fitName("pgrehearse_abcdef_r12_", long+"x")
	if len(a) > maxNameLen || len(b) > maxNameLen || a == b {
		t.Errorf("fitName: %q (%d), %q (%d): want both within %d bytes and different", a, len(a), b, len(b), maxNameLen)
	}
	for _, s := range []string{a, b} {
		if !strings.HasPrefix(s, "pgrehearse_abcdef_r12_é") || !utf8Valid(s) {
			t.Errorf("fitName = %q: want the prefix kept and valid UTF-8", s)
		}
	}
	if got := fitName("p_", "app"); got != "p_app" {
		t.Errorf("fitName short = %q", got)
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "?") == s }

func TestSettingValue(t *testing.T) {
	for _, tc := range []struct{ name, value, want string }{
		{"random_page_cost", "7", "'7'"},
		{"work_mem", "it's", "'it''s'"},
		{"search_path", `"$user", public, "Odd ""Schema"""`, `'$user', 'public', 'Odd "Schema"'`},
		{"search_path", `""`, `''`},
		{"Search_Path", "a,b", `'a', 'b'`},
		{"temp_tablespaces", "", `''`},
	} {
		if got := settingValue(tc.name, tc.value); got != tc.want {
			t.Errorf("settingValue(%s, %q) = %s, want %s", tc.name, tc.value, got, tc.want)
		}
	}
}

// TestCheckTemplate: what a login lacks for a template reset is listed at
// once: CREATEDB, and each database it may not copy (not its owner, nor a
// member of the owner, nor a template); a superuser lacks nothing, and a
// database that does not exist is Prepare's to tell. Membership in the
// owner is never proposed when the owner is a superuser, a member of one
// or of pg_execute_server_program: ownership is (issue 57 item 6).
func TestCheckTemplate(t *testing.T) {
	t.Parallel()
	c := pgclustertest.StartT(t, pgcluster.Options{})
	ctx := context.Background()
	for _, sql := range []string{"CREATE ROLE plain LOGIN", "CREATE ROLE maker LOGIN CREATEDB", "CREATE ROLE owner",
		"CREATE DATABASE app OWNER owner", "CREATE DATABASE mine OWNER maker",
		"CREATE DATABASE sup", // owned by the bootstrap superuser
		"CREATE ROLE boss SUPERUSER", "CREATE ROLE deputy IN ROLE boss", "CREATE DATABASE dep OWNER deputy",
		"CREATE ROLE shell IN ROLE pg_execute_server_program", "CREATE DATABASE sh OWNER shell"} {
		pgclustertest.Exec(t, c, "postgres", sql)
	}
	as := func(user string) string { return strings.Replace(c.DSN("postgres"), "user="+c.User(), "user="+user, 1) }
	dbs := []string{"app", "mine", "absent", "template1", "app", "sup", "dep", "sh"}
	ownedBy := func(db, owner string) string {
		return fmt.Sprintf(`the login "maker" may not copy the database %q, owned by %q: ALTER DATABASE %q OWNER TO "maker" (or to another role`, db, owner, db)
	}
	tests := []struct {
		user string
		want []string
	}{
		{"plain", []string{`the login "plain" may not create databases`, `the login "plain" may not copy the database "app", owned by "owner"`,
			`the login "plain" may not copy the database "mine", owned by "maker"`, `the login "plain" may not copy the database "sup"`,
			`the login "plain" may not copy the database "dep"`, `the login "plain" may not copy the database "sh"`}},
		{"maker", []string{`the login "maker" may not copy the database "app", owned by "owner": ALTER DATABASE "app" OWNER TO "maker", or GRANT "owner" TO "maker"`,
			ownedBy("sup", c.User()), ownedBy("dep", "deputy"), ownedBy("sh", "shell")}},
		{c.User(), nil},
	}
	for _, tt := range tests {
		got, err := CheckTemplate(ctx, as(tt.user), dbs)
		if err != nil {
			t.Fatal(err)
		}
		assertNoPowerfulGrant(t, got, c.User(), "boss", "deputy", "shell")
		if len(got) != len(tt.want) {
			t.Errorf("%s: %q, want %d items like %q", tt.user, got, len(tt.want), tt.want)
			continue
		}
		for i, w := range tt.want {
			if !strings.HasPrefix(got[i], w) {
				t.Errorf("%s: item %d %q, want %q", tt.user, i, got[i], w)
			}
		}
	}
	pgclustertest.Exec(t, c, "postgres", "GRANT owner TO maker")
	if got, err := CheckTemplate(ctx, as("maker"), dbs); err != nil || len(got) != 3 || slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, `"app"`) }) {
		t.Errorf("maker, a member of the owner of app: %q, %v: want app copied, sup, dep and sh still not", got, err)
	}
}

// assertNoPowerfulGrant fails when an advice grants one of roles, roles
// that are or act as superusers.
func assertNoPowerfulGrant(t *testing.T, advice []string, roles ...string) {
	t.Helper()
	for _, a := range advice {
		for _, r := range roles {
			if strings.Contains(a, "GRANT "+ident(r)) || strings.Contains(a, "GRANT "+r+" ") {
				t.Errorf("the advice grants membership in %q, which is or acts as a superuser: %s", r, a)
			}
		}
	}
}
