// Package htmlreport renders reports as one self-contained HTML file: the
// page, its styles, its scripts and the chart library (Apache ECharts,
// embedded in the binary, see assets/README.md) are all inlined, so the
// file works offline and loads nothing from a network.
//
// A Page is data: a verdict and Sections, each holding cards, notes,
// charts and tables. A Chart carries an ECharts option as JSON, so a new
// kind of chart needs no change here; a Table may be sortable (a click on
// a header), filterable (a text box) and have rows that show a Detail when
// clicked.
//
// The package holds the page's primitives only and knows nothing of what
// a report shows: package report lays comparisons, findings, evidence and
// sweeps out with these types, and this package imports no other package
// of pgrehearse.
//
// The page's script checks itself when the URL ends in #selfcheck: it
// counts the charts whose canvas holds drawn pixels, sorts every sortable
// table by each column both ways and checks the order, tries the filter
// and a row's detail, and writes the results as JSON into the hidden
// element #selfcheck, which a headless browser's --dump-dom shows to a
// test.
//
// The package writes to an io.Writer and decides nothing about files.
package htmlreport
