package deploy_test

import (
	"bytes"
	"errors"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/aivis/aivis/config"
	"github.com/aivis/aivis/core/health"
)

// helmVersion is the Helm the chart is checked with, built from the Go
// module proxy once into the user's cache.
const helmVersion = "v3.22.0"

func helm(t *testing.T) string {
	t.Helper()
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(cache, "aivis-tools", "helm-"+helmVersion)
	bin := filepath.Join(dir, "helm")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	start := time.Now()
	run(t, root, []string{"GOBIN=" + dir}, "go", "install", "helm.sh/helm/v3/cmd/helm@"+helmVersion)
	t.Logf("helm %s built in %s", helmVersion, time.Since(start).Round(time.Second))
	return bin
}

// clusterValues are the chart's values for several replicas on
// PostgreSQL, NATS and Redis, with every optional part on.
const clusterValues = `replicaCount: 2
persistence: {enabled: false}
settings: {AIVIS_STORE: postgres, AIVIS_BUS: nats, AIVIS_COUNTER: redis, AIVIS_LOG_FORMAT: json}
secretSettings: {AIVIS_POSTGRES_URL: "postgres://aivis:pw@postgres/aivis", AIVIS_NATS_URL: "nats://nats:4222", AIVIS_REDIS_URL: "redis://redis:6379/0"}
serviceMonitor: {enabled: true}
autoscaling: {enabled: true}
tls: {existingSecret: aivis-tls}
`

// docs splits YAML into its documents.
func docs(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var d map[string]any
		if err := dec.Decode(&d); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatalf("not YAML: %v", err)
		}
		if d != nil {
			out = append(out, d)
		}
	}
}

// at walks a YAML value by map keys and list indexes.
func at(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

var aivisVar = regexp.MustCompile(`\bAIVIS_[A-Z0-9_]+`)

// knownVars checks that every AIVIS_ variable a file names is a setting of
// aivis's.
func knownVars(t *testing.T, what string, b []byte) {
	t.Helper()
	known := config.EnvNames()
	names := aivisVar.FindAllString(string(b), -1)
	if len(names) == 0 {
		t.Errorf("%s names no setting", what)
	}
	for _, n := range names {
		if !slices.Contains(known, n) {
			t.Errorf("%s sets %s, which is no setting of aivis", what, n)
		}
	}
}

// TestChart: helm lint passes the chart with its defaults (one replica on
// SQLite) and for a cluster; each rendering has a Deployment whose
// probes ask the admin listener for paths aivis serves, a grace period
// above shutdown_delay and shutdown_timeout, the master key from a
// Secret, settings from a ConfigMap, and names no AIVIS_ variable aivis
// does not know; the cluster's has the PodDisruptionBudget, the
// ServiceMonitor and the HPA; several replicas on SQLite are refused.
func TestChart(t *testing.T) {
	h := helm(t)
	chart := filepath.Join("helm", "aivis")
	values := filepath.Join(t.TempDir(), "cluster.yaml")
	if err := os.WriteFile(values, []byte(clusterValues), 0o644); err != nil {
		t.Fatal(err)
	}
	paths := health.New(nil, 0).Paths()
	for _, c := range []struct {
		name  string
		args  []string
		kinds []string
	}{
		{"defaults", nil, []string{"ConfigMap", "Deployment", "PersistentVolumeClaim", "PodDisruptionBudget", "Secret", "Service"}},
		{"cluster", []string{"-f", values}, []string{"ConfigMap", "Deployment", "HorizontalPodAutoscaler", "PodDisruptionBudget", "Secret", "Secret", "Service", "ServiceMonitor"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			run(t, ".", nil, h, append([]string{"lint", "--strict", chart}, c.args...)...)
			out := run(t, ".", nil, h, append([]string{"template", "aivis", chart}, c.args...)...)
			knownVars(t, "the chart", []byte(out))
			var kinds []string
			var deploy, configMap map[string]any
			for _, d := range docs(t, []byte(out)) {
				kinds = append(kinds, d["kind"].(string))
				switch d["kind"] {
				case "Deployment":
					deploy = d
				case "ConfigMap":
					configMap = d
				}
			}
			slices.Sort(kinds)
			if !slices.Equal(kinds, c.kinds) {
				t.Fatalf("rendered %v, want %v", kinds, c.kinds)
			}
			pod := at(deploy, "spec", "template", "spec")
			ctr := at(pod, "containers", 0)
			var admin int
			for _, p := range at(ctr, "ports").([]any) {
				if at(p, "name") == "admin" {
					admin = at(p, "containerPort").(int)
				}
			}
			if admin != 9464 { // the image's admin_addr, 0.0.0.0:9464
				t.Errorf("the admin port is %d", admin)
			}
			for _, probe := range []string{"livenessProbe", "readinessProbe", "startupProbe"} {
				path, _ := at(ctr, probe, "httpGet", "path").(string)
				if _, ok := paths[path]; !ok || at(ctr, probe, "httpGet", "port") != "admin" {
					t.Errorf("%s asks %v on port %v: aivis serves %v on its admin listener", probe, path, at(ctr, probe, "httpGet", "port"), slices.Sorted(maps.Keys(paths)))
				}
			}
			if at(ctr, "readinessProbe", "httpGet", "path") != "/readyz" {
				t.Errorf("the readiness probe is not /readyz")
			}
			delay, err1 := time.ParseDuration(at(configMap, "data", "AIVIS_SHUTDOWN_DELAY").(string))
			timeout, err2 := time.ParseDuration(at(configMap, "data", "AIVIS_SHUTDOWN_TIMEOUT").(string))
			grace := time.Duration(at(pod, "terminationGracePeriodSeconds").(int)) * time.Second
			if err1 != nil || err2 != nil || delay < 5*time.Second || grace <= delay+timeout {
				t.Errorf("shutdown_delay %v, shutdown_timeout %v, terminationGracePeriodSeconds %v", delay, timeout, grace)
			}
			if !strings.Contains(out, "name: AIVIS_MASTER_KEY_FILE") || !strings.Contains(out, "master.key:") {
				t.Error("the master key is not given from a Secret")
			}
		})
	}
	cmd := exec.Command(h, "template", "aivis", chart, "--set", "replicaCount=2")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "store sqlite runs one replica") {
		t.Errorf("two replicas on SQLite: %v\n%s", err, out)
	}
}

// TestCompose: the compose files are YAML whose aivis services set only
// settings aivis knows; the cluster runs two aivis on PostgreSQL, NATS
// and Redis, which Prometheus scrapes on their admin listeners.
func TestCompose(t *testing.T) {
	dir := "compose"
	services := map[string][]string{}
	for _, f := range []string{"single.yaml", "cluster.yaml"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		knownVars(t, f, b)
		d := docs(t, b)
		if len(d) != 1 {
			t.Fatalf("%s: %d documents", f, len(d))
		}
		for name := range at(d[0], "services").(map[string]any) {
			services[f] = append(services[f], name)
		}
		slices.Sort(services[f])
	}
	if want := []string{"aivis", "aivis-a", "aivis-b", "grafana", "nats", "postgres", "prometheus", "redis"}; !slices.Equal(services["single.yaml"], want[:1]) ||
		!slices.Equal(services["cluster.yaml"], want[1:]) {
		t.Errorf("services %v", services)
	}
	b, err := os.ReadFile(filepath.Join(dir, "prometheus.yml"))
	if err != nil {
		t.Fatal(err)
	}
	prom := docs(t, b)[0]
	targets := at(prom, "scrape_configs", 0, "static_configs", 0, "targets")
	if at(prom, "scrape_configs", 0, "metrics_path") != "/metrics" || !slices.Equal(targets.([]any), []any{"aivis-a:9464", "aivis-b:9464"}) {
		t.Errorf("Prometheus scrapes %v", prom)
	}
	for _, f := range []string{"../prometheus/alerts.yml", "../grafana/aivis.json", "grafana/datasources.yaml", "grafana/dashboards.yaml"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("the cluster mounts %s: %v", f, err)
		}
	}
}
