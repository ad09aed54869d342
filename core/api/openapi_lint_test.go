package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aivis/aivis/internal/npmtest"
)

// The linters of the OpenAPI document, pinned. Their rulesets are
// redocly.yaml (with .redocly.lint-ignore.yaml) and .spectral.yaml beside
// openapi.json; each rule they switch off says why.
const (
	redoclyVersion  = "2.77.0"
	spectralVersion = "6.16.3"
)

// lintOpenAPI runs Redocly CLI and Spectral on the document at path and
// returns what each reports, empty when the document is clean: any
// problem of any severity counts.
func lintOpenAPI(t *testing.T, path string) (redocly, spectral string) {
	t.Helper()
	config, err := filepath.Abs("redocly.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ruleset, err := filepath.Abs(".spectral.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rbin := filepath.Join(npmtest.Install(t, "@redocly/cli", redoclyVersion), "node_modules", ".bin", "redocly")
	sbin := filepath.Join(npmtest.Install(t, "@stoplight/spectral-cli", spectralVersion), "node_modules", ".bin", "spectral")

	cmd := exec.Command(rbin, "lint", path, "--config", config, "--format", "json", "--max-problems", "1000")
	cmd.Env = append(os.Environ(), "REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, _ := cmd.Output() // it exits 1 on errors, 0 on warnings: the report says which
	var report struct {
		Totals   struct{ Errors, Warnings int }
		Problems []struct {
			RuleID, Severity, Message string
			Location                  []struct{ Pointer string }
		}
	}
	if err := json.Unmarshal(out, &report); err != nil {
		t.Fatalf("redocly lint: %v\n%s%s", err, out, stderr.Bytes())
	}
	for _, p := range report.Problems {
		where := ""
		if len(p.Location) > 0 {
			where = p.Location[0].Pointer
		}
		redocly += fmt.Sprintf("%s %s: %s at %s\n", p.Severity, p.RuleID, p.Message, where)
	}
	if redocly == "" && report.Totals.Errors+report.Totals.Warnings > 0 {
		redocly = string(out)
	}
	cmd = exec.Command(sbin, "lint", "--quiet", "--fail-severity", "hint", "--ruleset", ruleset, path)
	out, err = cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		spectral = string(out)
		if err != nil {
			spectral += "\n" + err.Error()
		}
	}
	return redocly, spectral
}

// TestOpenAPILint: Redocly CLI and Spectral, with the checked-in rulesets,
// find nothing in openapi.json, warnings included.
func TestOpenAPILint(t *testing.T) {
	path, err := filepath.Abs("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	redocly, spectral := lintOpenAPI(t, path)
	if redocly != "" {
		t.Errorf("Redocly CLI %s finds problems in openapi.json:\n%s", redoclyVersion, redocly)
	}
	if spectral != "" {
		t.Errorf("Spectral %s finds problems in openapi.json:\n%s", spectralVersion, spectral)
	}
}

// TestOpenAPILintFindsStaleExample: the rulesets leave the linters able to
// see a defect: a copy of the document whose webhook example lacks a
// required field is refused by both.
func TestOpenAPILintFindsStaleExample(t *testing.T) {
	b, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	field := []byte(`"min_citation_change": 10,`)
	if !bytes.Contains(b, field) {
		t.Fatal("openapi.json has no example with min_citation_change to break")
	}
	path := filepath.Join(t.TempDir(), "openapi.json")
	if err := os.WriteFile(path, bytes.Replace(b, field, nil, 1), 0o644); err != nil {
		t.Fatal(err)
	}
	redocly, spectral := lintOpenAPI(t, path)
	for name, out := range map[string]string{"Redocly CLI": redocly, "Spectral": spectral} {
		if !strings.Contains(out, "min_citation_change") {
			t.Errorf("%s does not report the example without min_citation_change:\n%s", name, out)
		}
	}
}
