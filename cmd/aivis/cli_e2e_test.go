package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// inEmptyDir runs the binary in a new empty directory, with an
// environment of PATH (with the binary's directory first) and HOME only,
// plus env; it returns the directory, the outputs and the exit code.
func inEmptyDir(t *testing.T, env []string, args ...string) (dir, stdout, stderr string, code int) {
	t.Helper()
	dir = t.TempDir()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + filepath.Dir(binary) + ":" + os.Getenv("PATH"), "HOME=" + dir}, env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("aivis %s: %v", strings.Join(args, " "), err)
	}
	return dir, out.String(), errOut.String(), code
}

// untouched fails t if dir holds anything.
func untouched(t *testing.T, dir string, what string) {
	t.Helper()
	if es, err := os.ReadDir(dir); err != nil || len(es) > 0 {
		var names []string
		for _, e := range es {
			names = append(names, e.Name())
		}
		t.Errorf("%s made %v in its working directory (%v)", what, names, err)
	}
}

// everyCommand is the command tree the binary answers, cobra's help and
// completion commands included, hidden ones left out.
func everyCommand() []*cobra.Command {
	root := rootCmd()
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	var all []*cobra.Command
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden {
			return
		}
		all = append(all, c)
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	return all
}

func pathOf(c *cobra.Command) []string { return strings.Fields(c.CommandPath())[1:] }

// TestEveryCommandAnswersHelp: every command and subcommand answers --help
// and -h with its own usage, on stdout, exit 0, and makes nothing: no data
// directory, no master key.
func TestEveryCommandAnswersHelp(t *testing.T) {
	cmds := everyCommand()
	if len(cmds) < 20 {
		t.Fatalf("the tree has %d commands", len(cmds))
	}
	for _, c := range cmds {
		for _, h := range []string{"--help", "-h"} {
			args := append(pathOf(c), h)
			dir, out, errOut, code := inEmptyDir(t, nil, args...)
			what := "aivis " + strings.Join(args, " ")
			if code != 0 || errOut != "" {
				t.Errorf("%s: exit %d, stderr %q", what, code, errOut)
			}
			if !strings.Contains(out, "Usage:\n  "+c.UseLine()) {
				t.Errorf("%s printed no usage of its own (%q):\n%s", what, c.UseLine(), out)
			}
			untouched(t, dir, what)
		}
	}
}

// TestRequiredFlagsNamed: a command without one of its required flags
// (the others given) is a usage error, exit 2, that names the flag, and
// makes nothing.
func TestRequiredFlagsNamed(t *testing.T) {
	checked := 0
	for _, c := range everyCommand() {
		var req []string
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if slices.Contains(f.Annotations[cobra.BashCompOneRequiredFlag], "true") {
				req = append(req, f.Name)
			}
		})
		for _, missing := range req {
			args := pathOf(c)
			for _, r := range req {
				if r != missing {
					args = append(args, "--"+r, "x")
				}
			}
			dir, _, errOut, code := inEmptyDir(t, nil, args...)
			what := "aivis " + strings.Join(args, " ")
			if code != 2 || !strings.Contains(errOut, `"`+missing+`"`) || !strings.Contains(errOut, "Usage:\n  "+c.UseLine()) {
				t.Errorf("%s: exit %d, want 2 and an error naming --%s, then the command's usage:\n%s", what, code, missing, errOut)
			}
			untouched(t, dir, what)
			checked++
		}
	}
	// account create (2), client create (2), client list, key create (2),
	// key list, user invite (2), user list: 11 at least.
	if checked < 11 {
		t.Errorf("%d required flags checked; want at least 11", checked)
	}
}

// TestUnknownCommandsOpenNothing: an unknown command, subcommand or flag,
// or missing arguments, are usage errors (exit 2) naming what is wrong,
// and nothing is made.
func TestUnknownCommandsOpenNothing(t *testing.T) {
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"bogus"}, `unknown command "bogus" for "aivis"`},
		{[]string{"account"}, "aivis account needs a subcommand"},
		{[]string{"account", "bogus"}, `unknown command "bogus" for "aivis account"`},
		{[]string{"key", "create", "--account", "a", "--name", "n", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"key", "revoke"}, "aivis key revoke takes KEY_ID"},
		{[]string{"account", "set-tier", "acct_x"}, "aivis account set-tier takes ACCOUNT_ID TIER"},
		{[]string{"serve", "extra"}, "aivis serve takes no arguments"},
		{[]string{"version", "extra"}, "aivis version takes only --json"},
	} {
		dir, _, errOut, code := inEmptyDir(t, nil, tc.args...)
		what := "aivis " + strings.Join(tc.args, " ")
		if code != 2 || !strings.HasPrefix(errOut, "aivis: "+tc.says) || !strings.Contains(errOut, "Usage:") {
			t.Errorf("%s: exit %d, want 2 and %q, then usage:\n%s", what, code, tc.says, errOut)
		}
		untouched(t, dir, what)
	}
}

// TestCompletion: aivis completion writes scripts for bash, zsh and fish;
// bash's parses (bash -n) and, sourced, completes aivis's commands and a
// group's subcommands by asking the binary, as a shell would.
func TestCompletion(t *testing.T) {
	for shell, mark := range map[string]string{"bash": "__start_aivis", "zsh": "#compdef aivis", "fish": "complete -c aivis"} {
		_, out, errOut, code := inEmptyDir(t, nil, "completion", shell)
		if code != 0 || !strings.Contains(out, mark) {
			t.Errorf("completion %s: exit %d, stderr %q; want a script with %q", shell, code, errOut, mark)
		}
	}
	wd, script, _, _ := inEmptyDir(t, nil, "completion", "bash")
	untouched(t, wd, "completion bash")
	dir := t.TempDir()
	file := filepath.Join(dir, "aivis.bash")
	if err := os.WriteFile(file, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("bash", "-n", file).CombinedOutput(); err != nil {
		t.Fatalf("bash -n: %v\n%s", err, out)
	}
	complete := func(line string) []string {
		words := strings.Fields(line)
		if strings.HasSuffix(line, " ") {
			words = append(words, "")
		}
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = "'" + w + "'"
		}
		// bash-completion's _get_comp_words_by_ref, which the script
		// calls, where that package is not installed: the words as
		// bash gives them (none here has = or :).
		sh := `[ -r /usr/share/bash-completion/bash_completion ] && source /usr/share/bash-completion/bash_completion
			declare -F _get_comp_words_by_ref >/dev/null || _get_comp_words_by_ref() {
				words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD; cur=${COMP_WORDS[COMP_CWORD]}; prev=${COMP_WORDS[COMP_CWORD-1]}; }
			source "$1"; COMP_WORDS=(` + strings.Join(quoted, " ") + `); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); ` +
			`COMP_LINE="$2"; COMP_POINT=${#COMP_LINE}; __start_aivis; printf '%s\n' "${COMPREPLY[@]}"`
		cmd := exec.Command("bash", "-c", sh, "bash", file, line)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=" + filepath.Dir(binary) + ":" + os.Getenv("PATH"), "HOME=" + dir}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("completing %q: %v", line, err)
		}
		return strings.Fields(string(out))
	}
	got := complete("aivis ")
	for _, want := range []string{"serve", "account", "client", "key", "user", "plugin", "config", "completion", "version"} {
		if !slices.Contains(got, want) {
			t.Errorf("completing %q gave %v, without %s", "aivis ", got, want)
		}
	}
	if got := complete("aivis key "); !slices.Equal(got, []string{"create", "list", "revoke"}) {
		t.Errorf("completing %q gave %v, want create list revoke", "aivis key ", got)
	}
}

// TestConfigCheck: config check says ok of a configuration serve takes,
// and of one it refuses the errors serve refuses it with (the same line),
// exit 1; it opens nothing.
func TestConfigCheck(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	if err := os.WriteFile(good, []byte(`{"log_level": "debug", "addr": "127.0.0.1:0"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	wd, out, errOut, code := inEmptyDir(t, nil, "config", "check", "--config", good)
	if code != 0 || out != "ok\n" || errOut != "" {
		t.Errorf("config check of a good file: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	untouched(t, wd, "config check")

	for name, tc := range map[string]struct {
		file string
		env  []string
		says string
	}{
		"a bad value":                      {`{"log_level": "loud"}`, nil, "log_level must be"},
		"engines serve refuses":            {`{"store": "postgres", "postgres_url": "postgres://aivis:s3cret@127.0.0.1:1/aivis", "master_key_file": "/nonexistent/k"}`, nil, "counter memory cannot serve the API of store postgres"},
		"an OTEL setting":                  {`{}`, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_PROTOCOL=carrier-pigeon"}, "OTEL_EXPORTER_OTLP_PROTOCOL"},
		"a certificate that does not load": {`{"tls_cert": "/nonexistent/c.pem", "tls_key": "/nonexistent/k.pem"}`, nil, "tls: load /nonexistent/c.pem"},
	} {
		file := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".json")
		if err := os.WriteFile(file, []byte(tc.file), 0o600); err != nil {
			t.Fatal(err)
		}
		wd, out, checkSaid, code := inEmptyDir(t, tc.env, "config", "check", "--config", file)
		if code != 1 || out != "" || !strings.Contains(checkSaid, tc.says) || strings.Contains(checkSaid, "s3cret") {
			t.Errorf("config check of %s: exit %d, stdout %q, stderr %q; want exit 1 and %q", name, code, out, checkSaid, tc.says)
		}
		untouched(t, wd, "config check")
		_, _, serveSaid, code := inEmptyDir(t, tc.env, "serve", "--config", file)
		if code != 1 || serveSaid != checkSaid {
			t.Errorf("serve with %s: exit %d, said %q; config check said %q", name, code, serveSaid, checkSaid)
		}
	}
}

// TestConfigShow: config show prints the settings serve would run with,
// from the file, the environment and the flags (each overriding the one
// before), with the passwords of URLs, the engines' keys and the OTLP
// headers' values masked.
func TestConfigShow(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "aivis.json")
	if err := os.WriteFile(file, []byte(`{"store": "postgres", "postgres_url": "postgres://aivis:pg-s3cret@db.internal:5432/aivis?sslmode=disable",
		"log_level": "warn", "scan_workers": 3, "engines": [{"label": "gpt", "base_url": "https://api.openai.com/v1", "model": "m", "api_key": "sk-k3y"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"AIVIS_LOG_LEVEL=error", "AIVIS_REDIS_URL=redis://:redis-s3cret@127.0.0.1:6379/0",
		"AIVIS_NATS_URL=nats://u:nats-s3cret@127.0.0.1:4222,nats://127.0.0.1:4223",
		"OTEL_EXPORTER_OTLP_ENDPOINT=https://otlp.example", "OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer otel-s3cret,x-team=t"}
	wd, out, errOut, code := inEmptyDir(t, env, "config", "show", "--config", file, "--log-level", "debug")
	if code != 0 {
		t.Fatalf("config show: exit %d: %s", code, errOut)
	}
	untouched(t, wd, "config show")
	for _, secret := range []string{"pg-s3cret", "redis-s3cret", "nats-s3cret", "sk-k3y", "otel-s3cret"} {
		if strings.Contains(out, secret) {
			t.Errorf("config show printed the secret %q:\n%s", secret, out)
		}
	}
	var shown struct {
		ConfigFile  string            `json:"config_file"`
		Settings    map[string]any    `json:"settings"`
		Sources     map[string]string `json:"sources"`
		Environment map[string]string `json:"environment"`
	}
	if err := json.Unmarshal([]byte(out), &shown); err != nil {
		t.Fatalf("config show: %v\n%s", err, out)
	}
	s := shown.Settings
	want := map[string]any{
		"store":        "postgres",                                                      // the file
		"scan_workers": 3.0,                                                             // the file
		"log_level":    "debug",                                                         // the flag over the environment over the file
		"postgres_url": "postgres://aivis:xxxxx@db.internal:5432/aivis?sslmode=disable", // masked
		"redis_url":    "redis://:xxxxx@127.0.0.1:6379/0",                               // the environment, masked
		"nats_url":     "nats://u:xxxxx@127.0.0.1:4222,nats://127.0.0.1:4223",
		"counter":      "memory", // the default
	}
	for k, v := range want {
		if s[k] != v {
			t.Errorf("config show: %s = %v, want %v", k, s[k], v)
		}
	}
	if e := s["engines"].([]any)[0].(map[string]any); e["api_key"] != "xxxxx" || e["model"] != "m" {
		t.Errorf("config show: engine %v, want its api_key masked", e)
	}
	wantSources := map[string]string{"store": "file", "postgres_url": "file", "scan_workers": "file", "engines": "file",
		"log_level": "flag", "redis_url": "env", "nats_url": "env"}
	if !maps.Equal(shown.Sources, wantSources) {
		t.Errorf("config show: sources %v, want %v", shown.Sources, wantSources)
	}
	if shown.ConfigFile != file || shown.Environment["OTEL_EXPORTER_OTLP_HEADERS"] != "authorization=xxxxx,x-team=xxxxx" ||
		shown.Environment["OTEL_EXPORTER_OTLP_ENDPOINT"] != "https://otlp.example" {
		t.Errorf("config show: file %q, environment %v", shown.ConfigFile, shown.Environment)
	}
}
