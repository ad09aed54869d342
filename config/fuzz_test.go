package config_test

import (
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aivis/aivis/config"
)

// secretKeys are the settings whose values hold credentials: the URLs'
// passwords (and a NATS token) and an engine's key.
var secretKeys = []string{"postgres_url", "redis_url", "nats_url", "api_key"}

// fileSecrets are the credentials a configuration file holds, wherever
// they stand (a setting of the name at any depth, of any type): each
// secret setting's value and, of a URL or key=value settings, the password
// and user (a NATS token) in it, of 8 bytes or more, that nothing else in
// the file holds. The file's errors may name anything else.
func fileSecrets(file []byte) []string {
	var tree any
	if json.Unmarshal(file, &tree) != nil {
		return nil
	}
	var found, others []string
	var walk func(v any, secret bool)
	walk = func(v any, secret bool) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				s := false
				for _, n := range secretKeys {
					s = s || strings.EqualFold(k, n)
				}
				others = append(others, k)
				walk(x, secret || s)
			}
		case []any:
			for _, x := range v {
				walk(x, secret)
			}
		case string:
			if !secret {
				others = append(others, v)
				return
			}
			found = append(found, v)
			for _, part := range strings.Split(v, ",") {
				if u, err := url.Parse(strings.TrimSpace(part)); err == nil && u.User != nil {
					pw, _ := u.User.Password()
					found = append(found, pw, u.User.Username())
				}
			}
			for _, kv := range strings.Fields(v) {
				if k, pw, ok := strings.Cut(kv, "="); ok && strings.EqualFold(k, "password") {
					found = append(found, strings.Trim(pw, "'"))
				}
			}
		}
	}
	walk(tree, false)
	var out []string
	for _, s := range found {
		if len(s) >= 8 && !strings.Contains(strings.Join(others, "\x00"), s) {
			out = append(out, s)
		}
	}
	return out
}

// FuzzConfigFile loads arbitrary configuration files, seeded with the
// documented ones and with files that hold credentials in their places
// and in wrong ones (of the wrong type, malformed, beside other mistakes).
// Nothing may panic; an error is ErrInvalid, text, and never repeats a
// credential of the file; a file accepted, written back as JSON, is
// accepted again as the same configuration.
func FuzzConfigFile(f *testing.F) {
	for _, s := range []string{
		`{}`, ``, `[]`, `null`, `{"addr": "x:1", "adress": "typo"}`,
		`{"addr": ":8443", "tls_cert": "/etc/aivis/cert.pem", "tls_key": "/etc/aivis/key.pem", "trusted_proxies": ["10.0.0.0/8"], "log_format": "json"}`,
		`{"store": "postgres", "bus": "nats", "counter": "redis", "postgres_url": "postgres://aivis:Pg-S3cret-pass@db.internal:5432/aivis?sslmode=require",
		  "master_key_file": "/etc/aivis/master.key", "redis_url": "rediss://default:Rd-S3cret-pass@redis.internal:6380/0",
		  "nats_url": "nats://aivis:Nt-S3cret-pass@nats-1:4222, nats://Nt-T0ken-secret@nats-2:4222", "cluster_name": "prod-eu"}`,
		`{"postgres_url": "host=db.internal user=aivis password=Pg-S3cret-pass dbname=aivis", "log_level": "loud"}`,
		`{"postgres_url": "postgres://aivis:Pg-S3cret-pass@[::1:5432/aivis"}`,
		`{"postgres_url": "Pg-S3cret-pass"}`,
		`{"postgres_url": {"password": "Pg-S3cret-pass"}}`,
		`{"postgres_url": 31415926535}`,
		`{"redis_url": "http://:Rd-S3cret-pass@redis.internal:6379"}`,
		`{"redis_url": "redis://:Rd-S3cret-pass@"}`,
		`{"redis_url": ["redis://:Rd-S3cret-pass@redis:6379"]}`,
		`{"nats_url": "nats://aivis:Nt-S3cret-pass@nats-1:4222/path"}`,
		`{"nats_url": "Nt-S3cret-pass"}`,
		`{"engines": [{"label": "gpt", "kind": "openai-chat", "base_url": "https://api.openai.com/v1", "model": "gpt-4o-mini",
		  "api_key": "sk-proj-S3cretKey0123456789", "input_price_per_mtok": 0.15, "output_price_per_mtok": 0.60, "concurrency": 4, "timeout": "60s"}]}`,
		`{"engines": [{"label": "gpt", "kind": "nope", "base_url": "ftp://x", "model": "", "api_key": "sk-proj-S3cretKey0123456789",
		  "api_key_env": "OPENAI_API_KEY", "max_searches": 99, "timeout": "-1s"}]}`,
		`{"engines": [{"label": "gpt", "base_url": "https://api.openai.com/v1", "model": "m", "api_key": 12345678901234567890}]}`,
		`{"engines": [{"label": "gpt", "base_url": "https://api.openai.com/v1", "model": "m", "api_key": "sk-proj-S3cretKey0123456789", "apikey": "x"}]}`,
		`{"engines": [{"label": "gpt", "base_url": "https://api.openai.com/v1", "model": "m", "api_key": "sk-proj-S3cretKey0123456789"}], "content_engine": "claude"}`,
		`{"engines": [{"label": "Perplexity", "kind": "perplexity", "model": "sonar", "api_key_env": "PERPLEXITY_API_KEY", "search_price_per_1k": 5},
		  {"label": "Claude", "kind": "anthropic", "model": "claude-sonnet-4-5", "api_key": "sk-ant-S3cretKey0123456789", "max_searches": 3},
		  {"label": "Gemini", "kind": "gemini", "model": "gemini-2.5-flash", "api_key": "AIzaS3cretKey0123456789"}], "content_prices": {"fetch": 0.001, "analysis": 1e-7}}`,
		`{"api_key": "sk-proj-S3cretKey0123456789"}`,
		`{"webhook_timeout": 30, "delivery_retention": "1h", "answer_retention": "2h", "content_lease": "0s", "scan_workers": 0}`,
		`{"addr": "x:1"} {"addr": "y:2"}`, `{"data_dir": "/d\u00e4ta", "addr": "x:1", "addr": "y:2"}`,
		`{"log_level": "\u0000", "cluster_name": "\xff\xfe"}`,
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	path, again := filepath.Join(dir, "aivis.json"), filepath.Join(dir, "again.json")
	load := func(t *testing.T, path string, b []byte) (config.Config, error) {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, _, err := config.Load([]string{"--config", path}, func(string) string { return "" }, true, nil)
		return cfg, err
	}
	f.Fuzz(func(t *testing.T, file []byte) {
		cfg, err := load(t, path, file)
		if err != nil {
			msg := err.Error()
			if !errors.Is(err, config.ErrInvalid) || !utf8.ValidString(msg) || strings.Contains(msg, "\x00") {
				t.Fatalf("%s: %q", file, msg)
			}
			for _, s := range fileSecrets(file) {
				if strings.Contains(msg, s) {
					t.Fatalf("%s: the error %q tells %q", file, msg, s)
				}
			}
			return
		}
		b, err := json.Marshal(cfg)
		if err != nil {
			t.Fatalf("%+v: %v", cfg, err)
		}
		back, err := load(t, again, b)
		if err != nil {
			t.Fatalf("%s accepted, written back as %s: %v", file, b, err)
		}
		back.ConfigFile = cfg.ConfigFile
		if !reflect.DeepEqual(back, cfg) {
			t.Fatalf("%s accepted as %+v, written back and read as %+v", file, cfg, back)
		}
	})
}
