package dashboard

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/aivis/aivis/core/hub"
	"github.com/aivis/aivis/plugins/sdk"
)

var testSchema = json.RawMessage(`{
  "type": "object", "required": ["url"],
  "properties": {
    "url": {"type": "string", "format": "uri", "title": "Endpoint"},
    "token": {"type": "string", "title": "Token"},
    "region": {"type": "string", "enum": ["eu", "us"], "default": "eu"},
    "batch": {"type": "integer"},
    "tags": {"type": "array", "items": {"type": "string"}},
    "verbose": {"type": "boolean"}
  }
}`)

func TestFormFromSchema(t *testing.T) {
	c := hub.Connector{Info: sdk.Info{SettingsSchema: testSchema, SecretFields: []string{"token"}}}
	fs := fields(c, json.RawMessage(`{"url":"https://x.example","batch":5,"tags":["a","b"],"verbose":true}`))
	var names []string
	for _, f := range fs {
		names = append(names, f.Name)
	}
	if strings.Join(names, " ") != "url token region batch tags verbose" {
		t.Fatalf("fields in order %v, want the schema's", names)
	}
	want := []field{
		{Name: "url", Title: "Endpoint", Type: "string", Input: "url", Required: true, Value: "https://x.example"},
		{Name: "token", Title: "Token", Type: "string", Input: "password", Secret: true},
		{Name: "region", Title: "region", Type: "string", Input: "text", Enum: []string{"eu", "us"}, Default: "eu"},
		{Name: "batch", Title: "batch", Type: "integer", Input: "number", Value: "5"},
		{Name: "tags", Title: "tags", Type: "array", Input: "text", Value: "a, b"},
		{Name: "verbose", Title: "verbose", Type: "boolean", Input: "text", Checked: true},
	}
	for i := range want {
		g, w := fs[i], want[i]
		if g.Name != w.Name || g.Title != w.Title || g.Type != w.Type || g.Input != w.Input || g.Required != w.Required ||
			g.Secret != w.Secret || g.Value != w.Value || g.Default != w.Default || g.Checked != w.Checked ||
			strings.Join(g.Enum, ",") != strings.Join(w.Enum, ",") {
			t.Errorf("field %d = %+v, want %+v", i, g, w)
		}
	}
	// A new connection's form has the defaults as values; an edit leaves
	// what is not saved empty, so that saving sends nothing nobody typed.
	if f := fields(c, nil)[2]; f.Value != "eu" || f.Default != "" {
		t.Errorf("a new connection's region field = %+v, want the default as its value", f)
	}

	form := url.Values{"s.url": {"https://y.example"}, "s.token": {""}, "s.region": {""}, "s.batch": {"7"}, "s.tags": {"x, y,"},
		"s.verbose.present": {"1"}}
	r := &http.Request{Method: http.MethodPost, PostForm: form}
	for clear, want := range map[bool]string{
		false: `{"batch":7,"tags":["x","y"],"url":"https://y.example","verbose":false}`,
		// An update: the emptied region is removed; the empty secret keeps its value.
		true: `{"batch":7,"region":null,"tags":["x","y"],"url":"https://y.example","verbose":false}`,
	} {
		got, err := settingsFromForm(r, fs, clear)
		if err != nil || string(got) != want {
			t.Errorf("settingsFromForm(clear=%v) = %s, %v; want %s", clear, got, err, want)
		}
	}
}

func TestChartAxisIsRound(t *testing.T) {
	for v, want := range map[float64][2]float64{0: {4, 4}, 3: {4, 4}, 5: {5, 5}, 7: {10, 5}, 19: {20, 4}, 33: {40, 4}, 1234: {2000, 4}} {
		hi, n := niceCeil(max(v, 4))
		if hi != want[0] || n != int(want[1]) {
			t.Errorf("niceCeil(%v) = %v, %d; want %v, %v", v, hi, n, want[0], want[1])
		}
		if step := hi / float64(n); step != float64(int(step)) {
			t.Errorf("%v: a step of %v is not whole", v, step)
		}
	}
	c := Chart{Title: "t", Labels: []string{"a", "b"}, Series: []Series{{Name: "k", Values: []float64{1, 3}, Class: "s0"}}}
	svg := string(c.SVG())
	if strings.Count(svg, "<rect ") != 2 || !strings.Contains(svg, `role="img"`) || !strings.Contains(svg, "<title") {
		t.Errorf("the bar chart:\n%s", svg)
	}
}

// A chart says in words what it draws.
func TestChartSummary(t *testing.T) {
	for _, tc := range []struct {
		c    Chart
		want string
	}{
		{Chart{Title: "Requests", Labels: []string{"Mon", "Tue", "Wed"}, Series: []Series{{Name: "key <a>", Values: []float64{1, 5, 2}}}},
			"3 points from Mon to Wed. key <a>: 8 in all, most 5 at Tue."},
		{Chart{Title: "Score", Lines: true, Labels: []string{"d1", "d2", "d3"}, Series: []Series{{Name: "Score", Values: []float64{41, 70, 62}}}},
			"3 points from d1 to d3. Score: first 41, latest 62, lowest 41, highest 70."},
		{Chart{Title: "Empty"}, "No data in this period."},
	} {
		if got := tc.c.Summary(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.c.Title, got, tc.want)
		}
		svg := string(tc.c.SVG())
		if !strings.Contains(svg, `aria-describedby="`+id(tc.c.Title)+`-desc"`) || !strings.Contains(svg, "<desc id=\""+id(tc.c.Title)+"-desc\">") ||
			strings.Contains(svg, "<a>") {
			t.Errorf("%s: the SVG does not carry the summary as its escaped description:\n%s", tc.c.Title, svg)
		}
	}
}
