package replay

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/results"
)

// reportedSettings are the settings the server reports to every new
// connection (ParameterStatus) that decide how values are read and
// written: another value on the target than in the original changes
// results, silently unless an input fails.
var reportedSettings = []string{"TimeZone", "DateStyle", "IntervalStyle", "client_encoding"}

// knownClient is a client known to connect with settings of its own,
// which a log does not show: pg_regress sets PGTZ, PGDATESTYLE and
// PGOPTIONS (pg_regress.c) and names its sessions pg_regress/<test>.
type knownClient struct {
	app      string // application_name, or its prefix before "/"
	settings map[string]string
}

var knownClients = []knownClient{
	{"pg_regress", map[string]string{"TimeZone": "America/Los_Angeles", "DateStyle": "Postgres, MDY", "IntervalStyle": "postgres_verbose"}},
}

// startupWatch gathers what a replay learns of its sessions' startup
// settings (results.StartupSettings).
type startupWatch struct {
	mu     sync.Mutex
	target map[string]string
	known  []int64 // sessions by knownClients' index

	withSettings, dateTime atomic.Int64
}

// connected notes a session's first connection: the target's reported
// settings (from the first without recorded settings of its own), the
// client it is, whether it had recorded settings.
func (w *startupWatch) connected(s *session, conn *pgconn.PgConn) {
	k := -1
	for i, c := range knownClients {
		if s.app == c.app || strings.HasPrefix(s.app, c.app+"/") {
			k = i
		}
	}
	if own := startupOwn(s); own {
		w.withSettings.Add(1)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if k >= 0 {
		if w.known == nil {
			w.known = make([]int64, len(knownClients))
		}
		w.known[k]++
	}
	if w.target == nil && !startupOwn(s) {
		w.target = map[string]string{}
		for _, name := range reportedSettings {
			if v := conn.ParameterStatus(name); v != "" {
				w.target[name] = v
			}
		}
	}
}

// startupOwn reports whether a session's recorded startup parameters
// set something of their own.
func startupOwn(s *session) bool {
	for _, p := range s.start {
		switch p.Name {
		case "user", "database", "application_name", "replication":
		default:
			return true
		}
	}
	return false
}

// dateTimeState reports whether code is an error of date, time or
// interval input, which another TimeZone, DateStyle or IntervalStyle can
// make or avoid.
func dateTimeState(code string) bool {
	switch code {
	case "22007", "22008", "22009", "22015":
		return true
	}
	return false
}

// result fills res.StartupSettings; recorded says whether the input
// recorded its sessions' startup parameters (a capture).
func (w *startupWatch) result(res *results.Result, recorded bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := &results.StartupSettings{
		Recorded:             recorded,
		SessionsWithSettings: w.withSettings.Load(),
		Target:               w.target,
		DateTimeDiffers:      w.dateTime.Load(),
	}
	for i, n := range w.known {
		if n > 0 {
			st.KnownClients = append(st.KnownClients, results.KnownClient{Application: knownClients[i].app, Sessions: n, Settings: maps.Clone(knownClients[i].settings)})
		}
	}
	st.Suspect = !recorded && (len(st.KnownClients) > 0 || st.DateTimeDiffers > 0)
	var b strings.Builder
	if recorded {
		fmt.Fprintf(&b, "the capture recorded each session's startup parameters: %d sessions set some, and their replays set them too", st.SessionsWithSettings)
	} else {
		b.WriteString("a server log does not record the settings a client sends when it connects (PGOPTIONS, PGTZ, PGDATESTYLE, PGCLIENTENCODING...): the replay's sessions ran with the target's defaults")
		if len(st.Target) > 0 {
			b.WriteString(" (")
			for i, name := range slices.Sorted(maps.Keys(st.Target)) {
				if i > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "%s %s", name, st.Target[name])
			}
			b.WriteString(")")
		}
	}
	for _, c := range st.KnownClients {
		fmt.Fprintf(&b, "; %d sessions are %s's, which connects with", c.Sessions, c.Application)
		for i, name := range slices.Sorted(maps.Keys(c.Settings)) {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, " %s %s", name, c.Settings[name])
		}
	}
	if st.DateTimeDiffers > 0 {
		fmt.Fprintf(&b, "; %d executions failed on one side only with a date, time or interval error, as another TimeZone, DateStyle or IntervalStyle makes", st.DateTimeDiffers)
	}
	st.Note = b.String()
	res.StartupSettings = st
}
