package csvexport

import (
	"bytes"
	"encoding/csv"
	"slices"
	"testing"
)

// TestWriter: a header row, CRLF line ends, fields quoted as RFC 4180
// says, and a cell that could run as a formula made text.
func TestWriter(t *testing.T) {
	var b bytes.Buffer
	w, err := New(&b, "name", "note")
	if err != nil {
		t.Fatal(err)
	}
	rows := [][]string{
		{"plain", `a "quoted" word, and a comma`},
		{"=HYPERLINK(\"https://evil.example\")", "+1+2"},
		{"-2+3", "@SUM(A1)"},
		{"\tTAB", "\rCR"},
		{"-3", "-0.25"},
		{"line\nbreak", ""},
	}
	for _, r := range rows {
		if err := w.Row(r...); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	want := "name,note\r\n" +
		"plain,\"a \"\"quoted\"\" word, and a comma\"\r\n" +
		"\"'=HYPERLINK(\"\"https://evil.example\"\")\",'+1+2\r\n" +
		"'-2+3,'@SUM(A1)\r\n" +
		"'\tTAB,\"'CR\"\r\n" + // encoding/csv writes a field's line breaks as CRLF, a lone CR dropped
		"-3,-0.25\r\n" +
		"\"line\r\nbreak\",\r\n"
	if b.String() != want {
		t.Fatalf("got\n%q\nwant\n%q", b.String(), want)
	}
	// It reads back as the cells written, the neutralised ones with their
	// apostrophe.
	got, err := csv.NewReader(bytes.NewReader(b.Bytes())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(rows)+1 || !slices.Equal(got[2], []string{"'=HYPERLINK(\"https://evil.example\")", "'+1+2"}) {
		t.Fatalf("read back %q", got)
	}
}

func TestDisposition(t *testing.T) {
	if got, want := Disposition("readings"), `attachment; filename=readings.csv`; got != want {
		t.Fatalf("%s, want %s", got, want)
	}
}
