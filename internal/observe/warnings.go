package observe

// StartWarnings are what a user should know before a long observation:
// what the evidence will lack (pg_stat_statements missing or without
// planning times, a role that cannot read other users' statistics).
func (o *Collector) StartWarnings() []string {
	c := o.Capabilities()
	var out []string
	if !c.PGSS.Is(ExtInstalled) {
		out = append(out, "pg_stat_statements is "+c.PGSS.String()+": no per-query server-side figures")
	} else if !c.TrackPlanning {
		out = append(out, "pg_stat_statements.track_planning is off: planning time will not be measured")
	}
	if !c.ReadAllStats {
		out = append(out, "role "+c.User+" cannot read other users' statistics (pg_read_all_stats)")
	}
	return out
}
