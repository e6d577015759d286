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

func TestThousands(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"0", "0"},
		{"999", "999"},
		{"1000", "1,000"},
		{"-1000", "-1,000"},
		{"123456", "123,456"},
		{"1234567", "1,234,567"},
		{"-9223372036854775808", "-9,223,372,036,854,775,808"},
		{"1234567.25", "1,234,567.25"},
		{"-12345.6", "-12,345.6"},
		{"0.125", "0.125"},
		{"1234 ms", "1,234 ms"},
		{"", ""},
	} {
		if got := Thousands(tc.in); got != tc.want {
			t.Errorf("Thousands(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
