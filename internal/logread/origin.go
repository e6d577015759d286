package logread

import (
	"slices"
	"strconv"
	"strings"
)

// Origin is what a log shows of the server that wrote it, for telling the
// logs of different servers apart (logs given together are one workload
// only when one server wrote them). A field is empty when the log does not
// show it, which is common: only a log that spans a server start has its
// startup lines, and PostgreSQL names its system identifier in few
// messages.
type Origin struct {
	// SystemID is the database system identifier (pg_controldata's), from
	// a message that names it ("WAL file is from different database
	// system: ... pg_control database system identifier is N").
	SystemID string
	// Ports are the ports the server listens on, from its startup lines
	// ("listening on IPv4 address "0.0.0.0", port 5432", "listening on
	// Unix socket "/run/postgresql/.s.PGSQL.5432"").
	Ports []int
	// Versions are the servers started in the log, from their startup
	// lines: "PostgreSQL 15.4 (Debian 15.4-1.pgdg120+1) on
	// x86_64-pc-linux-gnu, compiled by gcc ..., 64-bit". Two are an
	// upgrade, or two servers.
	Versions []string
	// Hosts are the machines named in the syslog headers of the server's
	// lines (syslog and RFC 5424 envelopes).
	Hosts []string
}

// maxOrigins bounds each list of an Origin: a log that shows more is
// mixed already.
const maxOrigins = 16

// note reads what a LOG message says of the server, if anything: its
// startup lines, and the one message that names its system identifier.
func (o *Origin) note(msg string) {
	if len(msg) < 20 {
		return
	}
	switch msg[0] {
	case 'l':
		rest, ok := strings.CutPrefix(msg, "listening on ")
		if !ok {
			return
		}
		port := ""
		if i := strings.LastIndex(rest, ", port "); i >= 0 {
			port = rest[i+len(", port "):]
		} else if i := strings.LastIndex(rest, ".s.PGSQL."); i >= 0 {
			port = strings.TrimSuffix(rest[i+len(".s.PGSQL."):], `"`)
		}
		if n, err := strconv.Atoi(port); err == nil && n > 0 && !slices.Contains(o.Ports, n) && len(o.Ports) < maxOrigins {
			o.Ports = append(o.Ports, n)
		}
	case 's':
		if v, ok := strings.CutPrefix(msg, "starting PostgreSQL "); ok {
			v = "PostgreSQL " + v
			if !slices.Contains(o.Versions, v) && len(o.Versions) < maxOrigins {
				o.Versions = append(o.Versions, strings.Clone(v))
			}
		}
	case 'W':
		const key = "pg_control database system identifier is "
		if i := strings.Index(msg, key); i >= 0 && strings.HasPrefix(msg, "WAL file is from different database system") {
			id := msg[i+len(key):]
			n := 0
			for n < len(id) && id[n] >= '0' && id[n] <= '9' {
				n++
			}
			if n > 0 && o.SystemID == "" {
				o.SystemID = strings.Clone(id[:n])
			}
		}
	}
}

// addHost notes a host of a syslog header.
func (o *Origin) addHost(h []byte) {
	for _, x := range o.Hosts {
		if x == string(h) {
			return
		}
	}
	if len(o.Hosts) < maxOrigins {
		o.Hosts = append(o.Hosts, string(h))
	}
}

// clone returns a copy that shares nothing with o.
func (o Origin) clone() Origin {
	o.Ports = slices.Clone(o.Ports)
	o.Versions = slices.Clone(o.Versions)
	o.Hosts = slices.Clone(o.Hosts)
	return o
}
