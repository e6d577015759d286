package report

import (
	"strconv"
	"strings"

	"github.com/pgrehearse/pgrehearse/internal/findings"
	"github.com/pgrehearse/pgrehearse/internal/htmlreport"
	"github.com/pgrehearse/pgrehearse/internal/numfmt"
)

// FindingsPage is a page of findings alone.
func FindingsPage(r *findings.Report, h Hints) htmlreport.Page {
	return htmlreport.Page{Title: "pgrehearse findings", Subtitle: r.Workload, Sections: []htmlreport.Section{FindingsSection(r, h)}}
}

// FindingsSection returns the Findings section of an HTML report: a card
// per severity and a table of findings whose rows open on the evidence.
func FindingsSection(r *findings.Report, h Hints) htmlreport.Section {
	s := htmlreport.Section{ID: "findings", Title: "Findings"}
	if r == nil {
		s.Text = []string{"Findings were not evaluated."}
		return s
	}
	status := func(n int, bad bool) string {
		if n > 0 && bad {
			return "bad"
		}
		return ""
	}
	s.Cards = []htmlreport.Card{
		{Label: "critical", Value: strconv.Itoa(r.Count(findings.Critical)), Status: status(r.Count(findings.Critical), true)},
		{Label: "warning", Value: strconv.Itoa(r.Count(findings.Warning)), Status: status(r.Count(findings.Warning), true)},
		{Label: "info", Value: strconv.Itoa(r.Count(findings.Info))},
	}
	t := htmlreport.Table{
		Title:    "Findings",
		Columns:  []htmlreport.Column{{Label: "severity"}, {Label: "finding"}, {Label: "subject"}, {Label: "summary"}},
		Sortable: true,
		Empty:    "No known trap found in this workload.",
	}
	for _, f := range r.Findings {
		class := ""
		if f.Severity == findings.Critical {
			class = "bad"
		}
		d := &htmlreport.Detail{Title: f.Title}
		var code []string
		for _, q := range f.Evidence.Queries {
			code = append(code, "-- "+q.Fingerprint+", "+numfmt.Figure(float64(q.Calls))+" calls\n"+q.Query)
		}
		d.Code = strings.Join(code, "\n\n")
		if len(f.Evidence.Figures) > 0 {
			st := &htmlreport.SimpleTable{Head: []string{"figure", "value"}}
			for _, x := range f.Evidence.Figures {
				st.Rows = append(st.Rows, []string{x.Name, x.Text})
			}
			d.Table = st
		}
		for _, tb := range f.Evidence.Tables {
			var rows []string
			for _, row := range tb.Rows {
				rows = append(rows, strings.Join(row, " | "))
			}
			d.Notes = append(d.Notes, tb.Title+": "+strings.Join(rows, "; "))
		}
		d.Notes = append(d.Notes, f.Evidence.Notes...)
		if m := f.Model; m != nil {
			var in []string
			for _, x := range m.Inputs {
				in = append(in, x.Name+" "+x.Text)
			}
			d.Notes = append(d.Notes, "Model: "+m.Rule+". Inputs: "+strings.Join(in, ", ")+". "+m.Source)
		}
		d.Notes = append(d.Notes, "Recommendation: "+f.Recommendation)
		if f.Untried != "" {
			d.Notes = append(d.Notes, "Not tried on a copy: "+f.Untried)
		}
		t.Rows = append(t.Rows, htmlreport.Row{
			Cells: []htmlreport.Cell{htmlreport.Text(string(f.Severity)), htmlreport.Text(f.ID),
				{Text: OneLine(f.Subject, 60), Title: f.Subject}, htmlreport.Text(f.Summary)},
			Detail: d, Class: class,
		})
	}
	s.Tables = []htmlreport.Table{t}
	for _, sk := range r.NotEvaluated {
		s.Notes = append(s.Notes, "Not evaluated, "+sk.ID+": "+skipReason(sk, h))
	}
	return s
}
