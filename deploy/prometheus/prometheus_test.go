// Package prometheus holds the alerts on aivis's metrics (alerts.yml) and
// their tests (alerts_test.yml), which this package's tests run with
// promtool, and checks the Grafana dashboard (../grafana/aivis.json)
// against the metrics aivis defines.
package prometheus

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/aivis/aivis/core/metrics"
	"github.com/aivis/aivis/core/metrics/metricstest"
)

// promtool runs promtool, which Debian's prometheus package installs
// (make deps does).
func promtool(t *testing.T, args ...string) {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool is not installed: it comes with Debian's prometheus package (make deps installs it, or: apt-get install -y prometheus)")
	}
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// The alerts are valid rules, and each fires as its test says, not before
// its time.
func TestAlerts(t *testing.T) {
	promtool(t, "check", "rules", "alerts.yml")
	promtool(t, "test", "rules", "alerts_test.yml")
}

// panel is what the test reads of a dashboard's panel.
type panel struct {
	Title      string  `json:"title"`
	Type       string  `json:"type"`
	Panels     []panel `json:"panels"`
	Datasource *struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

// grafanaVars are the dashboard's variables as a query's text would have
// them.
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "$__range", "1h", "$instance", ".*", "$job", ".*")

// dashboardExprs are the queries of every panel of the dashboard.
func dashboardExprs(t *testing.T) []string {
	b, err := os.ReadFile("../grafana/aivis.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Title  string  `json:"title"`
		UID    string  `json:"uid"`
		Panels []panel `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("aivis.json: %v", err)
	}
	if d.Title == "" || d.UID == "" || len(d.Panels) == 0 {
		t.Fatalf("aivis.json: a dashboard without title, uid or panels")
	}
	var exprs []string
	var walk func(ps []panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			if p.Datasource == nil || p.Datasource.UID != "${datasource}" || len(p.Targets) == 0 {
				t.Errorf("panel %q: no query of the dashboard's data source", p.Title)
			}
			for _, q := range p.Targets {
				exprs = append(exprs, grafanaVars.Replace(q.Expr))
			}
		}
	}
	walk(d.Panels)
	return exprs
}

// alertExprs are the expressions of the alerts.
func alertExprs(t *testing.T) []string {
	b, err := os.ReadFile("alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range regexp.MustCompile(`(?m)^\s*expr:\s*(.+)$`).FindAllStringSubmatch(string(b), -1) {
		out = append(out, m[1])
	}
	return out
}

// Every query of the dashboard is PromQL that Prometheus reads (promtool
// checks them as recording rules).
func TestDashboardQueries(t *testing.T) {
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	for i, e := range dashboardExprs(t) {
		q, _ := json.Marshal(e)
		fmt.Fprintf(&rules, "      - record: dashboard:query_%d\n        expr: %s\n", i, q)
	}
	path := filepath.Join(t.TempDir(), "dashboard.yml")
	if err := os.WriteFile(path, []byte(rules.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	promtool(t, "check", "rules", path)
}

// Every metric the dashboard and the alerts read is one aivis serves:
// its own (a histogram's series too), Go's or the process's.
func TestDashboardAndAlertsReadMetricsThatExist(t *testing.T) {
	m := metrics.New(metrics.Options{})
	known := m.Names()
	for _, f := range metricstest.Gather(t, m) {
		known = append(known, f.GetName())
	}
	name := regexp.MustCompile(`\b(aivis|go|process)_[a-z0-9_]+\b`)
	read := map[string]bool{}
	for _, e := range append(dashboardExprs(t), alertExprs(t)...) {
		for _, n := range name.FindAllString(e, -1) {
			read[n] = true
		}
	}
	if len(read) < 30 {
		t.Fatalf("the dashboard and the alerts read only %d metrics", len(read))
	}
	for n := range read {
		base := n
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(n, suffix); ok && slices.Contains(known, b) {
				base = b
			}
		}
		if !slices.Contains(known, base) {
			t.Errorf("%s is read by the dashboard or an alert, and no metric of aivis", n)
		}
	}
}
