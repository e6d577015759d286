package htmlreport

import (
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"strconv"
)

//go:embed assets/echarts.common.min.js page.html.tmpl page.js page.css
var files embed.FS

// Page is one self-contained HTML report.
type Page struct {
	Title    string
	Subtitle string
	// Verdict is shown first, coloured by its status; nil for none.
	Verdict  *Verdict
	Sections []Section
	// Footer is a line of small print (versions, settings).
	Footer string
}

// Verdict is the page's one-line conclusion.
type Verdict struct {
	// Status is "pass" (green), "fail" (red), "regressions",
	// "incomplete", "diverged" or "undecided" (amber), or anything else
	// (neutral).
	Status string
	Line   string
	// Items are shown under the line (broken rules, warnings).
	Items []string
	// Focus is a line after the items that the verdict turns on (the
	// top regression's cause), and Action what to do about it, shown
	// under it, then Outcome, what trying it found (rehearse's fix
	// rounds); "" for none.
	Focus, Action, Outcome string
	// Notes are shown last, smaller: what the verdict rests on but is
	// not (warnings).
	Notes []string
}

// Section is a titled part of the page; everything in it is optional and
// shown in the order of the fields.
type Section struct {
	ID    string // anchor; derived from the title when empty
	Title string
	Text  []string // paragraphs
	Cards []Card
	// Notes are shown as a bulleted list.
	Notes  []string
	Charts []Chart
	Tables []Table
}

// Card is a figure shown large with a label.
type Card struct {
	Label string
	Value string
	Sub   string // a smaller line under the value
	// Status colours the card: "bad", "good", or "" for neutral.
	Status string
}

// Chart is an ECharts chart: Option is the option object, as JSON, that
// the page passes to setOption (https://echarts.apache.org/en/option.html).
// Functions cannot travel in JSON; the page adds none either, so an option
// must be complete as data.
type Chart struct {
	ID     string // unique on the page; derived when empty
	Title  string
	Note   string // a line under the chart
	Height int    // pixels; 0 means 320
	// Width is "full" or "half" (two charts side by side); "" means full.
	Width  string
	Option json.RawMessage
}

// Table is a table of rows. Sortable tables sort by a click on a column
// header; Filter adds a box that hides rows not containing its text.
type Table struct {
	ID       string // unique on the page; derived when empty
	Title    string
	Columns  []Column
	Rows     []Row
	Sortable bool
	Filter   bool
	// Empty is shown instead of a table without rows.
	Empty string
}

// Column is a table column.
type Column struct {
	Label   string
	Tooltip string
	Numeric bool // right-aligned, sorted by Cell.Sort
}

// Row is a table row; clicking a row with a Detail shows it.
type Row struct {
	Cells  []Cell
	Detail *Detail
	Class  string // "bad", "good", "muted" or ""
}

// Cell is one table cell. Sort is the value numeric columns sort by.
type Cell struct {
	Text  string
	Sort  float64
	Title string // full text on hover, when Text is shortened
	Class string
}

// Cell classes that let a wide table fit its card (page.css): a cell
// without one stays on one line.
const (
	// ClassNode is a plan node's name: it wraps, long identifiers
	// anywhere, rather than widen the table.
	ClassNode = "node"
	// ClassFigure is a figure with words ("4,821 rows, 2.9 ms",
	// "6.7 kB -> 16.6 kB"): it wraps at its spaces when the table
	// would not fit otherwise.
	ClassFigure = "fig"
)

// Detail is what a row shows when clicked.
type Detail struct {
	Title string
	Code  string // shown preformatted (a query's full text)
	Table *SimpleTable
	Notes []string
}

// SimpleTable is a small static table.
type SimpleTable struct {
	Head []string
	Rows [][]string
}

// Text returns a text cell.
func Text(s string) Cell { return Cell{Text: s} }

// Num returns a numeric cell shown as text and sorted by v.
func Num(text string, v float64) Cell { return Cell{Text: text, Sort: v} }

var tmpl = template.Must(template.New("page.html.tmpl").Funcs(template.FuncMap{
	"sortKey": func(c Cell) string { return strconv.FormatFloat(c.Sort, 'g', -1, 64) },
}).ParseFS(files, "page.html.tmpl"))

type pageData struct {
	Page
	Script  template.JS
	Style   template.CSS
	Library template.JS
	Options template.JS
}

// Write renders p as one HTML document, the chart library and every
// script and style inlined.
func Write(w io.Writer, p Page) error {
	d := pageData{Page: p}
	opts := map[string]json.RawMessage{}
	n := 0
	for i := range d.Sections {
		s := &d.Sections[i]
		if s.ID == "" {
			s.ID = fmt.Sprintf("s%d", i+1)
		}
		s.Charts = append([]Chart(nil), s.Charts...)
		for j := range s.Charts {
			c := &s.Charts[j]
			n++
			if c.ID == "" {
				c.ID = fmt.Sprintf("chart%d", n)
			}
			if c.Height <= 0 {
				c.Height = 320
			}
			if !json.Valid(c.Option) {
				return fmt.Errorf("chart %s (%q): option is not valid JSON", c.ID, c.Title)
			}
			if _, dup := opts[c.ID]; dup {
				return fmt.Errorf("chart id %s used twice", c.ID)
			}
			opts[c.ID] = c.Option
		}
		s.Tables = append([]Table(nil), s.Tables...)
		for j := range s.Tables {
			if s.Tables[j].ID == "" {
				s.Tables[j].ID = fmt.Sprintf("%s-t%d", s.ID, j+1)
			}
		}
	}
	// encoding/json escapes <, > and &, so the options cannot close the
	// script element they are written into.
	b, err := json.Marshal(opts)
	if err != nil {
		return err
	}
	lib, err := files.ReadFile("assets/echarts.common.min.js")
	if err != nil {
		return err
	}
	js, _ := files.ReadFile("page.js")
	css, _ := files.ReadFile("page.css")
	d.Options, d.Library, d.Script, d.Style = template.JS(b), template.JS(lib), template.JS(js), template.CSS(css)
	return tmpl.Execute(w, d)
}
