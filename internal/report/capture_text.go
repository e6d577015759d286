package report

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	capfile "github.com/pgrehearse/pgrehearse/internal/capture"
	"github.com/pgrehearse/pgrehearse/internal/capturerun"
	"github.com/pgrehearse/pgrehearse/internal/numfmt"
)

// WriteCaptureSummary writes what a capture recorded into its directory.
func WriteCaptureSummary(w io.Writer, sum capturerun.Summary) {
	m := sum.Manifest
	state := "complete"
	if !m.Complete {
		state = "INCOMPLETE: " + string(m.Reason)
		if m.Error != "" {
			state += " (" + m.Error + ")"
		}
	}
	fmt.Fprintf(w, "capture %s: %s\n", sum.Dir, state)
	fmt.Fprintf(w, "  sessions  %d (%d still open at the end, recorded as open)\n", m.Sessions, sum.OpenAtEnd)
	fmt.Fprintf(w, "  messages  %d from clients, %d from the server, relayed\n", sum.Proxy.FrontendMessages, sum.Proxy.BackendMessages)
	if sum.Proxy.FrontendRelay.Count()+sum.Proxy.BackendRelay.Count() > 0 {
		fmt.Fprintf(w, "  added     per chunk relayed, %s from clients; %s from the server\n",
			relayQuantiles(sum.Proxy.FrontendRelay.Quantile), relayQuantiles(sum.Proxy.BackendRelay.Quantile))
	}
	fmt.Fprintf(w, "  records   %d in %d files, %s\n", m.Records, m.Segments, numfmt.Bytes(m.Bytes))
	if m.Dropped > 0 {
		fmt.Fprintf(w, "  dropped   %d records\n", m.Dropped)
	}
	if st := m.StartState; st != nil {
		tables := 0
		for _, db := range st.Databases {
			tables += len(db.Tables)
		}
		fmt.Fprintf(w, "  start     WAL %s at %s, PostgreSQL %s, %d tables in %d databases%s\n",
			st.LSN, st.Time.Format(time.RFC3339Nano), st.ServerVersion, tables, len(st.Databases), startCounts(st))
	}
	for _, k := range slices.Sorted(maps.Keys(sum.Proxy.Errors)) {
		fmt.Fprintf(w, "  connections ended by %s problems: %d\n", k, sum.Proxy.Errors[k])
	}
}

// startCounts says how many tables' rows the start counted and how many
// it estimated, and names the counts that failed.
func startCounts(st *capfile.StartState) string {
	counted, estimated := 0, 0
	var failed []string
	for _, db := range st.Databases {
		for _, t := range db.Tables {
			switch {
			case t.RowsFrom == capfile.RowsCounted:
				counted++
			case t.CountError != "":
				estimated++
				failed = append(failed, db.Name+"."+t.Schema+"."+t.Name+" ("+t.CountError+")")
			default:
				estimated++
			}
		}
	}
	if st.CountBelow == 0 {
		return "; rows estimated"
	}
	out := fmt.Sprintf("; rows counted in %d (up to %s), estimated in %d", counted, numfmt.Bytes(st.CountBelow), estimated)
	if len(failed) > 0 {
		out += fmt.Sprintf("; %d counts skipped: %s", len(failed), strings.Join(failed[:min(len(failed), 3)], ", "))
		if len(failed) > 3 {
			out += fmt.Sprintf(" and %d more", len(failed)-3)
		}
	}
	return out
}

// relayQuantiles says the p50 and p99 of the time the proxy added to a
// direction's chunks (quantile: proxy.RelayTimes.Quantile) as the bounds
// of the buckets they fall in: that is all the buckets carry.
func relayQuantiles(quantile func(q float64) (time.Duration, bool)) string {
	if d, ok := quantile(0.5); d == 0 && !ok {
		return "none"
	}
	say := func(q float64) string {
		d, ok := quantile(q)
		if !ok {
			return "over " + d.String()
		}
		return "at most " + d.String()
	}
	return "p50 " + say(0.5) + ", p99 " + say(0.99)
}

// WriteRecording writes one recording's state and counters.
func WriteRecording(w io.Writer, st capturerun.Status) {
	state := "recording since " + st.Started.UTC().Format(time.RFC3339)
	if st.State == capturerun.StateFinalized {
		state = "complete"
		if !st.Complete {
			state = "INCOMPLETE: " + string(st.Reason)
			if st.Error != "" {
				state += " (" + st.Error + ")"
			}
		}
		state += ", " + string(st.StopReason)
	}
	fmt.Fprintf(w, "recording %s into %s: %s\n", st.ID, st.Out, state)
	fmt.Fprintf(w, "  sessions  %d recorded", st.Sessions)
	if st.State == capturerun.StateFinalized {
		fmt.Fprintf(w, " (%d still open at the end, recorded as open)", st.OpenAtEnd)
	}
	// Only when some were not: "0 open at the start, not recorded" read
	// as a contradiction of the resumed line below (issue 57 item 6).
	if st.NotRecorded > 0 {
		fmt.Fprintf(w, "; %d of the sessions open at the start not recorded", st.NotRecorded)
		for _, why := range slices.Sorted(maps.Keys(st.NotRecordedWhy)) {
			fmt.Fprintf(w, " (%s: %d)", why, st.NotRecordedWhy[why])
		}
	}
	fmt.Fprintln(w)
	if st.Resumed > 0 || st.Waiting > 0 {
		fmt.Fprintf(w, "  resumed   %d sessions open at the start, recorded from the middle with their state (%d from their next idle point", st.Resumed, st.ResumedLate)
		if st.Waiting > 0 {
			fmt.Fprintf(w, ", %d still waiting for it", st.Waiting)
		}
		fmt.Fprint(w, ")")
		for _, why := range slices.Sorted(maps.Keys(st.SkippedBeforeRecording)) {
			fmt.Fprintf(w, "; %d messages skipped before it, %s", st.SkippedBeforeRecording[why], why)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "  records   %d, %s\n", st.Records, numfmt.Bytes(st.Bytes))
	if st.Dropped > 0 {
		fmt.Fprintf(w, "  dropped   %d records\n", st.Dropped)
	}
}

// WriteCaptureListening says where the capture proxy listens, where it
// relays to (where) and what it records into (out: "" until a recording
// starts), and where its admin interface is (admin: "" without one).
func WriteCaptureListening(w io.Writer, addr, where, out, admin string) {
	if out != "" {
		fmt.Fprintf(w, "pgrehearse: capture: listening on %s, relaying to %s, recording into %s (Ctrl-C to finalize)\n", addr, where, out)
	} else {
		fmt.Fprintf(w, "pgrehearse: capture: listening on %s, relaying to %s, not recording until a recording starts\n", addr, where)
	}
	if admin != "" {
		fmt.Fprintf(w, "pgrehearse: capture: admin interface on http://%s/recordings\n", admin)
	}
}

// WriteCaptureDraining says that the proxy drains: how many connections,
// until when (drain: --drain's bound).
func WriteCaptureDraining(w io.Writer, d capturerun.DrainStart, drain time.Duration) {
	conns := "connections"
	if d.Open == 1 {
		conns = "connection"
	}
	fmt.Fprintf(w, "pgrehearse: capture: draining: %d %s open, relayed until they close or until %s (--drain %s); "+
		"no new connection is accepted; a second Ctrl-C or SIGTERM closes them now\n",
		d.Open, conns, d.Until.UTC().Format("15:04:05 UTC"), drain)
}

// WriteCaptureDrained says how the proxy's drain ended.
func WriteCaptureDrained(w io.Writer, d capturerun.DrainEnd) {
	why := "every connection closed"
	switch d.Ended {
	case capturerun.DrainTimedOut:
		why = "--drain passed"
	case capturerun.DrainCutShort:
		why = "a second Ctrl-C or SIGTERM"
	}
	fmt.Fprintf(w, "pgrehearse: capture: drain ended after %s (%s): %d closed by themselves, %d cut by the proxy\n",
		d.Took.Round(100*time.Millisecond), why, d.Closed, d.Cut)
}
