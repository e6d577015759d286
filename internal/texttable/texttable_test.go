package texttable

import "testing"

func TestFormat(t *testing.T) {
	got := Format("  ", [][]string{
		{"calls", "ms", "query"},
		{"12", "1.5", "SELECT 1"},
		{"1,204", "10", "é"},
		{"3", "", ""},
	}, 2)
	want := "  calls   ms  query\n" +
		"     12  1.5  SELECT 1\n" +
		"  1,204   10  é\n" +
		"      3\n"
	if got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
	if Format("", nil, 0) != "" {
		t.Error("no rows should give nothing")
	}
}
