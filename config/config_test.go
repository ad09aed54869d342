package config_test

import (
	"encoding/json"
	"errors"
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/config"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func writeFile(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "aivis.json")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestDefaults(t *testing.T) {
	d := config.Default()
	want := config.Config{
		DataDir: "./aivis-data", Store: "sqlite", Bus: "sqlite", Counter: "memory", API: true, AutoMigrate: true, ClusterName: "aivis", Addr: "127.0.0.1:8443",
		AdminAddr: "127.0.0.1:9464", LogLevel: "info", LogFormat: "text",
		AuthFailuresPerMinute: 20, CounterFlushInterval: config.Duration(time.Second),
		ShutdownTimeout: config.Duration(30 * time.Second), WebhookTimeout: config.Duration(15 * time.Second), ScanWorkers: 2,
		ContentWorkers: 2, ContentMaxTokens: 2048, DeliveryRetention: config.Duration(30 * 24 * time.Hour),
		AnswerRetention: config.Duration(90 * 24 * time.Hour), ContentLease: config.Duration(time.Minute),
		TrafficRetention: config.Duration(400 * 24 * time.Hour),
		ContentPrices:    config.ContentPrices{Fetch: 1_000, Analysis: 2_000},
	}
	if !reflect.DeepEqual(d, want) {
		t.Fatalf("Default() = %+v, want %+v", d, want)
	}
	if err := d.Validate(); err != nil {
		t.Fatalf("the defaults do not validate: %v", err)
	}
	got, fs, err := config.Load(nil, env(nil), true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Load with nothing set = %+v", got)
	}
	if fs == nil || fs.NArg() != 0 {
		t.Fatalf("flag set %v", fs)
	}
}

func TestEnvName(t *testing.T) {
	for in, want := range map[string]string{
		"data-dir": "AIVIS_DATA_DIR", "addr": "AIVIS_ADDR", "auth-failures-per-minute": "AIVIS_AUTH_FAILURES_PER_MINUTE",
		"config": "AIVIS_CONFIG",
	} {
		if got := config.EnvName(in); got != want {
			t.Errorf("EnvName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestEnvNames: EnvNames lists the variable of every setting, each read
// by Load (it changes the configuration, or its value is refused).
func TestEnvNames(t *testing.T) {
	names := config.EnvNames()
	seen := map[string]bool{}
	for _, name := range names {
		if seen[name] || !strings.HasPrefix(name, "AIVIS_") {
			t.Errorf("%s listed twice or without the prefix", name)
		}
		seen[name] = true
		// Nothing set loads the defaults: a variable that changes neither
		// the result nor the error was not read.
		if cfg, _, err := config.Load(nil, env(map[string]string{name: "7"}), true, nil); err == nil && reflect.DeepEqual(cfg, config.Default()) {
			t.Errorf("%s=7 is not read", name)
		}
	}
	for _, name := range []string{"AIVIS_CONFIG", "AIVIS_DATA_DIR", "AIVIS_ADMIN_ADDR", "AIVIS_TRUSTED_PLUGINS_DIR"} {
		if !seen[name] {
			t.Errorf("%s is not listed", name)
		}
	}
}

// TestPrecedence: defaults < file < environment < flags, setting by setting.
func TestPrecedence(t *testing.T) {
	file := writeFile(t, `{
		"data_dir": "/file/data", "addr": "file:1", "http_addr": "file:2", "log_level": "warn",
		"trusted_proxies": ["10.0.0.0/8"], "allow_private_targets": true, "auth_failures_per_minute": 5,
		"counter_flush_interval": "2s", "shutdown_timeout": "10s", "public_url": "https://file.example",
		"store": "file-store", "bus": "file-bus", "counter": "file-counter", "postgres_url": "host=file.example",
		"master_key_file": "/file/master.key", "cluster_name": "file-cluster", "nats_url": "nats://file:4222"
	}`)
	e := map[string]string{
		"AIVIS_CONFIG":                   file,
		"AIVIS_ADDR":                     "env:1",
		"AIVIS_LOG_LEVEL":                "debug",
		"AIVIS_TRUSTED_PROXIES":          "192.168.0.0/16, 172.16.0.0/12",
		"AIVIS_AUTH_FAILURES_PER_MINUTE": "7",
		"AIVIS_COUNTER_FLUSH_INTERVAL":   "3s",
		"AIVIS_TLS_CERT":                 "/env/cert.pem",
		"AIVIS_TLS_KEY":                  "/env/key.pem",
		"AIVIS_BUS":                      "env-bus",
		"AIVIS_COUNTER":                  "env-counter",
		"AIVIS_MASTER_KEY_FILE":          "/env/master.key",
		"AIVIS_CLUSTER_NAME":             "env-cluster",
		"AIVIS_NATS_URL":                 "nats://env:4222",
		"AIVIS_REDIS_URL":                "redis://env.example:6379/0",
	}
	args := []string{"--addr", "flag:1", "--counter-flush-interval=4s", "--allow-private-targets=false", "--log-format", "json",
		"--counter", "flag-counter", "--nats-url", "nats://flag:4222"}
	got, _, err := config.Load(args, env(e), true, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := config.Config{
		ConfigFile:            file,
		DataDir:               "/file/data",                                // file only
		Store:                 "file-store",                                // file only
		Bus:                   "env-bus",                                   // file, env
		Counter:               "flag-counter",                              // file, env, flag
		PostgresURL:           "host=file.example",                         // file only
		MasterKeyFile:         "/env/master.key",                           // file, env
		RedisURL:              "redis://env.example:6379/0",                // env only
		API:                   true,                                        // default
		AutoMigrate:           true,                                        // default
		ClusterName:           "env-cluster",                               // file, env
		NATSURL:               "nats://flag:4222",                          // file, env, flag
		Addr:                  "flag:1",                                    // file, env, flag
		HTTPAddr:              "file:2",                                    // file only
		AdminAddr:             config.DefaultAdminAddr,                     // default
		PublicURL:             "https://file.example",                      // file only
		TLSCert:               "/env/cert.pem",                             // env only
		TLSKey:                "/env/key.pem",                              // env only
		TrustedProxies:        []string{"192.168.0.0/16", "172.16.0.0/12"}, // env replaces the file's list
		AllowPrivateTargets:   false,                                       // file true, flag false
		LogLevel:              "debug",                                     // file, env
		LogFormat:             "json",                                      // flag only
		WebhookTimeout:        config.Duration(15 * time.Second),           // default
		DeliveryRetention:     config.Duration(30 * 24 * time.Hour),        // default
		AuthFailuresPerMinute: 7,                                           // file, env
		CounterFlushInterval:  config.Duration(4 * time.Second),            // file, env, flag
		ShutdownTimeout:       config.Duration(10 * time.Second),           // file only
		ScanWorkers:           2,                                           // default
		AnswerRetention:       config.Duration(90 * 24 * time.Hour),        // default
		TrafficRetention:      config.Duration(400 * 24 * time.Hour),       // default
		ContentWorkers:        2,                                           // default
		ContentMaxTokens:      2048,                                        // default
		ContentLease:          config.Duration(time.Minute),                // default
		ContentPrices:         config.ContentPrices{Fetch: 1_000, Analysis: 2_000},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Load:\n got  %+v\n want %+v", got, want)
	}

	// --config beats AIVIS_CONFIG.
	other := writeFile(t, `{"addr": "other:1"}`)
	got, _, err = config.Load([]string{"--config", other}, env(map[string]string{"AIVIS_CONFIG": file}), true, nil)
	if err != nil || got.Addr != "other:1" || got.ConfigFile != other || got.DataDir != "./aivis-data" {
		t.Fatalf("--config over AIVIS_CONFIG: %+v, %v", got, err)
	}
	// An empty environment variable does not override.
	got, _, err = config.Load(nil, env(map[string]string{"AIVIS_CONFIG": file, "AIVIS_ADDR": ""}), true, nil)
	if err != nil || got.Addr != "file:1" {
		t.Fatalf("empty AIVIS_ADDR: %+v, %v", got, err)
	}
}

// TestCommandsReadWhatServeReads: the CLI's commands read the file and the
// environment as serve does, every setting of them, and take as flags
// those of where the data is and which engines hold it.
func TestCommandsReadWhatServeReads(t *testing.T) {
	file := writeFile(t, `{"data_dir": "/file/data", "store": "file-store", "public_url": "https://file.example", "bus": "file-bus"}`)
	e := map[string]string{"AIVIS_CONFIG": file, "AIVIS_ADDR": "env:1", "AIVIS_BUS": "env-bus", "AIVIS_COUNTER": "env-counter"}
	var json bool
	args := []string{"--json", "--store", "flag-store", "rest"}
	got, fs, err := config.Load(args, env(e), false, func(fs *flag.FlagSet) { fs.BoolVar(&json, "json", false, "") })
	if err != nil {
		t.Fatal(err)
	}
	if fs.NArg() != 1 || fs.Arg(0) != "rest" || !json {
		t.Fatalf("remaining args %v, json=%v", fs.Args(), json)
	}
	serve, _, err := config.Load([]string{"--store", "flag-store"}, env(e), true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, serve) {
		t.Fatalf("a command read\n %+v\nserve read\n %+v", got, serve)
	}
	if got.ConfigFile != file || got.DataDir != "/file/data" || got.PublicURL != "https://file.example" || got.Addr != "env:1" ||
		got.Store != "flag-store" || got.Bus != "env-bus" || got.Counter != "env-counter" {
		t.Fatalf("command config %+v", got)
	}
	for _, args := range [][]string{{"--data-dir", "/flag/data"}, {"--config", file}, {"--bus", "b"}, {"--counter", "c"},
		{"--postgres-url", "host=db"}, {"--master-key-file", "/k"}, {"--cluster-name", "c"}, {"--nats-url", "nats://127.0.0.1:4222"},
		{"--redis-url", "redis://cache:6379/0"}} {
		if _, _, err := config.Load(args, env(nil), false, nil); err != nil {
			t.Errorf("%v: %v", args, err)
		}
	}
	if _, _, err := config.Load([]string{"--addr", "x:1"}, env(nil), false, nil); err == nil {
		t.Fatal("a server flag was accepted by a non-serve command")
	}
	// What serve refuses, a command refuses with the same error.
	bad := map[string]string{"AIVIS_LOG_LEVEL": "nonsense"}
	_, _, cerr := config.Load(nil, env(bad), false, nil)
	_, _, serr := config.Load(nil, env(bad), true, nil)
	if !errors.Is(cerr, config.ErrInvalid) || serr == nil || cerr.Error() != serr.Error() {
		t.Fatalf("AIVIS_LOG_LEVEL=nonsense: a command: %v; serve: %v", cerr, serr)
	}
}

func TestFileErrors(t *testing.T) {
	for _, tc := range []struct {
		name, body, want string
	}{
		{"unknown field", `{"addr": "x:1", "adress": "typo"}`, "adress"},
		{"wrong type", `{"auth_failures_per_minute": "many"}`, "auth_failures_per_minute"},
		{"duration as a number", `{"shutdown_timeout": 30}`, "durations are strings"},
		{"bad duration", `{"shutdown_timeout": "30 parsecs"}`, "30 parsecs"},
		{"not JSON", `addr = "x:1"`, "invalid character"},
		{"empty", ``, "EOF"},
		{"an array", `[]`, "cannot unmarshal"},
		{"list as string", `{"trusted_proxies": "10.0.0.0/8"}`, "trusted_proxies"},
		{"api as a string", `{"api": "false"}`, "api"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, tc.body)
			_, _, err := config.Load([]string{"--config", path}, env(nil), true, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
	_, _, err := config.Load([]string{"--config", "/does/not/exist.json"}, env(nil), true, nil)
	if err == nil || !strings.Contains(err.Error(), "exist.json") {
		t.Fatalf("missing file: %v", err)
	}
}

func TestEnvAndFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"bad int env", nil, map[string]string{"AIVIS_AUTH_FAILURES_PER_MINUTE": "ten"}, "AIVIS_AUTH_FAILURES_PER_MINUTE"},
		{"bad bool env", nil, map[string]string{"AIVIS_ALLOW_PRIVATE_TARGETS": "maybe"}, "AIVIS_ALLOW_PRIVATE_TARGETS"},
		{"bad api env", nil, map[string]string{"AIVIS_API": "workers"}, "AIVIS_API"},
		{"bad api flag", []string{"--api=sometimes"}, nil, "api"},
		{"bad duration env", nil, map[string]string{"AIVIS_SHUTDOWN_TIMEOUT": "soon"}, "AIVIS_SHUTDOWN_TIMEOUT"},
		{"bad int flag", []string{"--auth-failures-per-minute", "x"}, nil, "auth-failures-per-minute"},
		{"bad duration flag", []string{"--counter-flush-interval", "1 minute"}, nil, "counter-flush-interval"},
		{"unknown flag", []string{"--verbose"}, nil, "verbose"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := config.Load(tc.args, env(tc.env), true, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*config.Config)
		want []string // substrings of the error; nil for valid
	}{
		{"defaults", func(c *config.Config) {}, nil},
		{"cert and key", func(c *config.Config) { c.TLSCert, c.TLSKey = "c.pem", "k.pem" }, nil},
		{"proxies and targets", func(c *config.Config) {
			c.TrustedProxies = []string{"10.0.0.0/8", "192.0.2.1", "2001:db8::/32", "::1"}
			c.AllowedTargets = []string{"10.1.2.3/32"}
		}, nil},
		{"each log level", func(c *config.Config) { c.LogLevel = "error" }, nil},
		{"smallest flush interval", func(c *config.Config) { c.CounterFlushInterval = config.Duration(10 * time.Millisecond) }, nil},
		{"no data dir", func(c *config.Config) { c.DataDir = "" }, []string{"data_dir"}},
		{"no addr", func(c *config.Config) { c.Addr = "" }, []string{"addr must be set"}},
		{"cert without key", func(c *config.Config) { c.TLSCert = "c.pem" }, []string{"tls_cert and tls_key"}},
		{"key without cert", func(c *config.Config) { c.TLSKey = "k.pem" }, []string{"tls_cert and tls_key"}},
		{"bad proxy", func(c *config.Config) { c.TrustedProxies = []string{"10.0.0.0/33"} }, []string{`"10.0.0.0/33"`}},
		{"bad target", func(c *config.Config) { c.AllowedTargets = []string{"example.com"} }, []string{`"example.com"`}},
		{"bad log level", func(c *config.Config) { c.LogLevel = "verbose" }, []string{"log_level", `"verbose"`}},
		{"log level case", func(c *config.Config) { c.LogLevel = "INFO" }, []string{"log_level"}},
		{"bad log format", func(c *config.Config) { c.LogFormat = "xml" }, []string{"log_format"}},
		{"zero auth failures", func(c *config.Config) { c.AuthFailuresPerMinute = 0 }, []string{"auth_failures_per_minute"}},
		{"crawler ranges url", func(c *config.Config) { c.CrawlerRangesURL = "https://mirror.example/ranges.json" }, nil},
		{"crawler ranges not a url", func(c *config.Config) { c.CrawlerRangesURL = "mirror.example/ranges.json" }, []string{"crawler_ranges_url"}},
		{"crawler ranges ftp", func(c *config.Config) { c.CrawlerRangesURL = "ftp://mirror.example/ranges.json" }, []string{"crawler_ranges_url"}},
		{"negative auth failures", func(c *config.Config) { c.AuthFailuresPerMinute = -1 }, []string{"auth_failures_per_minute"}},
		{"flush too often", func(c *config.Config) { c.CounterFlushInterval = config.Duration(9 * time.Millisecond) }, []string{"counter_flush_interval"}},
		{"zero shutdown", func(c *config.Config) { c.ShutdownTimeout = 0 }, []string{"shutdown_timeout"}},
		{"negative shutdown", func(c *config.Config) { c.ShutdownTimeout = config.Duration(-time.Second) }, []string{"shutdown_timeout"}},
		{"a shutdown delay", func(c *config.Config) { c.ShutdownDelay = config.Duration(15 * time.Second) }, nil},
		{"negative shutdown delay", func(c *config.Config) { c.ShutdownDelay = config.Duration(-time.Second) }, []string{"shutdown_delay"}},
		{"no admin listener", func(c *config.Config) { c.AdminAddr = "" }, nil},
		{"admin listener anywhere", func(c *config.Config) { c.AdminAddr = ":9464"; c.AdminPprof = true }, nil},
		{"bad admin addr", func(c *config.Config) { c.AdminAddr = "9464" }, []string{"admin_addr must be host:port"}},
		{"admin on the API's addr", func(c *config.Config) { c.AdminAddr = c.Addr }, []string{"admin_addr must be an address of its own"}},
		{"an engine", func(c *config.Config) {
			c.Engines = []config.Engine{{Label: "local", BaseURL: "http://127.0.0.1:11434/v1", Model: "llama3.1", Concurrency: 2}}
		}, nil},
		{"bad engines", func(c *config.Config) {
			c.Engines = []config.Engine{{Label: "a", BaseURL: "ftp://x", APIKey: "k", APIKeyEnv: "K", InputPricePerMTok: -1},
				{Label: "a", BaseURL: "https://api.example.com/v1", Model: "m", Concurrency: 1000}}
		}, []string{"engines[0].base_url", "engines[0].model", "engines[0]: set api_key or api_key_env", "engines[0]: prices",
			"engines[1].label", "engines[1].concurrency"}},
		{"engines of every kind", func(c *config.Config) {
			c.Engines = []config.Engine{{Label: "chat", BaseURL: "http://127.0.0.1:11434/v1", Model: "llama3.1"},
				{Label: "responses", Kind: "openai-responses", Model: "gpt-5", SearchPricePer1K: 10},
				{Label: "sonar", Kind: "perplexity", Model: "sonar", SearchPricePer1K: 5},
				{Label: "claude", Kind: "anthropic", Model: "claude-sonnet-4-5", SearchPricePer1K: 10, MaxSearches: 20},
				{Label: "gemini", Kind: "gemini", BaseURL: "https://gemini.proxy.example", Model: "gemini-2.5-flash", SearchPricePer1K: 35}}
		}, nil},
		{"bad engines of kinds", func(c *config.Config) {
			c.Engines = []config.Engine{{Label: "chat", Kind: "openai-chat", Model: "m"},
				{Label: "bing", Kind: "bing", Model: "m"},
				{Label: "sonar", Kind: "perplexity", BaseURL: "api.perplexity.ai", Model: "sonar", MaxSearches: 3},
				{Label: "claude", Kind: "anthropic", Model: "m", MaxSearches: 21, SearchPricePer1K: -10}}
		}, []string{"engines[0].base_url must be set for kind openai-chat", "engines[1].kind must be one of openai-chat, openai-responses, perplexity, anthropic, gemini",
			"engines[2].base_url must be an http(s) URL such as https://api.perplexity.ai", "engines[2].max_searches bounds the searches of kind anthropic only",
			"engines[3].max_searches must be between 0 (the default, 5) and 20", "engines[3]: prices"}},
		{"surface and x_search where they belong", func(c *config.Config) {
			c.Engines = []config.Engine{{Label: "grok", Kind: "xai", Model: "grok-4", XSearch: true, SearchPricePer1K: 5},
				{Label: "search", BaseURL: "https://api.openai.com/v1", Model: "gpt-4o-search-preview", Surface: "search_api"}}
		}, nil},
		{"surface and x_search elsewhere", func(c *config.Config) {
			c.Engines = []config.Engine{{Label: "a", Kind: "openai-responses", Model: "m", Surface: "search_api", XSearch: true},
				{Label: "b", BaseURL: "https://api.example.com/v1", Model: "m", Surface: "serp"}}
		}, []string{"engines[0].surface is for kind openai-chat only", "engines[0].x_search is for kind xai only",
			"engines[1].surface must be search_api"}},
		{"scan workers", func(c *config.Config) { c.ScanWorkers = 0 }, []string{"scan_workers"}},
		{"cluster names", func(c *config.Config) { c.ClusterName = "a-B_9" + strings.Repeat("x", 27) }, nil},
		{"no cluster name", func(c *config.Config) { c.ClusterName = "" }, []string{"cluster_name"}},
		{"cluster name too long", func(c *config.Config) { c.ClusterName = strings.Repeat("x", 33) }, []string{"cluster_name"}},
		{"cluster name with a dot", func(c *config.Config) { c.ClusterName = "aivis.prod" }, []string{"cluster_name", `"aivis.prod"`}},
		{"cluster name with a wildcard", func(c *config.Config) { c.ClusterName = "a*" }, []string{"cluster_name"}},
		{"cluster name with a space", func(c *config.Config) { c.ClusterName = "a b" }, []string{"cluster_name"}},
		{"cluster name beginning with _", func(c *config.Config) { c.ClusterName = "_a" }, []string{"cluster_name"}},
		{"NATS servers", func(c *config.Config) {
			c.NATSURL = "nats://u:p@10.0.0.1:4222, tls://token@nats.internal:4222,ws://h:8080,wss://h/"
		}, nil},
		{"NATS URL without a host", func(c *config.Config) { c.NATSURL = "nats://" }, []string{"nats_url"}},
		{"NATS URL of another scheme", func(c *config.Config) { c.NATSURL = "http://h:4222" }, []string{"nats_url"}},
		{"NATS URL with a path", func(c *config.Config) { c.NATSURL = "nats://h:4222/x" }, []string{"nats_url"}},
		{"NATS host alone", func(c *config.Config) { c.NATSURL = "127.0.0.1:4222" }, []string{"nats_url"}},
		{"shortest retention", func(c *config.Config) { c.DeliveryRetention = config.Duration(config.MinDeliveryRetention) }, nil},
		{"retention too short", func(c *config.Config) { c.DeliveryRetention = config.Duration(6 * 24 * time.Hour) }, []string{"delivery_retention"}},
		{"content settings", func(c *config.Config) {
			c.ContentWorkers, c.ContentMaxTokens, c.ContentPrices.Analysis, c.ContentEngine = -1, 1, -1, "nope"
			c.ContentLease = config.Duration(time.Millisecond)
		}, []string{"content_workers", "content_lease", "content_max_tokens", "content_prices", `content_engine "nope"`}},
		{"postgres url", func(c *config.Config) { c.PostgresURL = "postgres://aivis:pw@db.internal:5432/aivis?sslmode=require" }, nil},
		{"postgresql url", func(c *config.Config) { c.PostgresURL = "postgresql:///aivis?host=/run/postgresql" }, nil},
		{"postgres settings", func(c *config.Config) { c.PostgresURL = "host=db.internal user=aivis password='p w' dbname=aivis" }, nil},
		{"postgres url malformed", func(c *config.Config) { c.PostgresURL = "postgres://aivis:pw@db.internal/%zz" }, []string{"postgres_url"}},
		{"postgres url a host", func(c *config.Config) { c.PostgresURL = "db.internal" }, []string{"postgres_url"}},
		{"redis url", func(c *config.Config) { c.RedisURL = "redis://aivis:pw@cache.internal:6379/2" }, nil},
		{"rediss url", func(c *config.Config) { c.RedisURL = "rediss://cache.internal:6380" }, nil},
		{"redis socket", func(c *config.Config) { c.RedisURL = "unix:///run/redis/redis.sock" }, nil},
		{"redis url a host", func(c *config.Config) { c.RedisURL = "cache.internal:6379" }, []string{"redis_url"}},
		{"redis url of another scheme", func(c *config.Config) { c.RedisURL = "http://cache.internal:6379" }, []string{"redis_url"}},
		{"redis url malformed", func(c *config.Config) { c.RedisURL = "redis://:pw@cache.internal/%zz" }, []string{"redis_url"}},
		{"all reported together", func(c *config.Config) {
			c.DataDir, c.Addr, c.LogLevel, c.LogFormat, c.AuthFailuresPerMinute = "", "", "x", "y", 0
		}, []string{"data_dir", "addr", "log_level", "log_format", "auth_failures_per_minute"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := config.Default()
			tc.mod(&c)
			err := c.Validate()
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Validate passed")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
	// An error of postgres_url never repeats it: it may hold a password.
	c := config.Default()
	c.PostgresURL = "postgres://aivis:s3cr3t@db.internal/%zz"
	if err := c.Validate(); err == nil || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("a malformed postgres_url: %v", err)
	}
	// Nor does one of redis_url.
	c = config.Default()
	c.RedisURL = "redis://aivis:s3cr3t@cache.internal:6379/%zz"
	if err := c.Validate(); err == nil || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("a malformed redis_url: %v", err)
	}
	// Load validates what it builds for serve.
	if _, _, err := config.Load([]string{"--log-level", "loud"}, env(nil), true, nil); err == nil || !strings.Contains(err.Error(), "log_level") {
		t.Fatalf("Load did not validate: %v", err)
	}
	if _, _, err := config.Load(nil, env(map[string]string{"AIVIS_TLS_CERT": "c.pem"}), true, nil); err == nil {
		t.Fatal("Load accepted a certificate without a key")
	}
}

func TestParsePrefix(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
		ok   bool
	}{
		{"10.0.0.0/8", "10.0.0.0/8", true},
		{"10.1.2.3/8", "10.0.0.0/8", true}, // masked
		{"192.0.2.1", "192.0.2.1/32", true},
		{"2001:db8::1", "2001:db8::1/128", true},
		{"2001:db8::1/32", "2001:db8::/32", true},
		{"::ffff:10.0.0.1", "::ffff:10.0.0.1/128", true},
		{"", "", false},
		{"10.0.0.0/33", "", false},
		{"10.0.0", "", false},
		{"example.com", "", false},
		{" 10.0.0.1", "", false},
	} {
		p, err := config.ParsePrefix(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("ParsePrefix(%q) error %v", tc.in, err)
			continue
		}
		if tc.ok && p != netip.MustParsePrefix(tc.want) {
			t.Errorf("ParsePrefix(%q) = %v, want %s", tc.in, p, tc.want)
		}
	}
}

func TestDurationJSON(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{`"1s"`, time.Second, true},
		{`"250ms"`, 250 * time.Millisecond, true},
		{`"1h30m"`, 90 * time.Minute, true},
		{`"0"`, 0, true},
		{`1`, 0, false},
		{`"1"`, 0, false},
		{`null`, 0, false},
		{`"soon"`, 0, false},
	} {
		var d config.Duration
		err := json.Unmarshal([]byte(tc.in), &d)
		if (err == nil) != tc.ok || (tc.ok && time.Duration(d) != tc.want) {
			t.Errorf("Unmarshal(%s) = %v, %v", tc.in, time.Duration(d), err)
		}
	}
	b, err := json.Marshal(config.Duration(1500 * time.Millisecond))
	if err != nil || string(b) != `"1.5s"` {
		t.Errorf("Marshal = %s, %v", b, err)
	}
	// A configuration survives a round trip through its file format.
	c := config.Default()
	c.TrustedProxies = []string{"10.0.0.0/8"}
	b, _ = json.Marshal(c)
	path := writeFile(t, string(b))
	got, _, err := config.Load([]string{"--config", path}, env(nil), true, nil)
	c.ConfigFile = path
	if err != nil || !reflect.DeepEqual(got, c) {
		t.Fatalf("round trip: %+v, %v\n want %+v", got, err, c)
	}
}

// TestFileTrailingData: readFile decodes the first JSON value of the file
// and ignores the rest, so a file holding two objects (a bad merge, say)
// or an object followed by garbage is taken without a word, and the
// settings after the first object are silently lost. Like an unknown
// field, it must be refused.
func TestFileTrailingData(t *testing.T) {
	for _, body := range []string{
		`{"addr": "x:1"} {"addr": "y:2", "log_level": "debug"}`,
		`{"addr": "x:1"} garbage`,
		`{"addr": "x:1"}}`,
		`{"addr": "x:1"} []`,
	} {
		path := writeFile(t, body)
		if got, _, err := config.Load([]string{"--config", path}, env(nil), true, nil); err == nil {
			t.Errorf("config file %q accepted as %+v", body, got)
		}
	}
}

// TestFileEdgeCases: what a file may hold besides the plain case.
func TestFileEdgeCases(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		check      func(config.Config) bool
	}{
		{"empty object keeps the defaults", `{}`, func(c config.Config) bool { return c.Addr == "127.0.0.1:8443" && c.LogLevel == "info" }},
		{"whitespace around", " \n\t{\"addr\": \"x:1\"}\n\n", func(c config.Config) bool { return c.Addr == "x:1" }},
		{"unicode escapes", `{"data_dir": "/d\u00e4ta"}`, func(c config.Config) bool { return c.DataDir == "/däta" }},
		{"empty list", `{"trusted_proxies": []}`, func(c config.Config) bool { return len(c.TrustedProxies) == 0 }},
		{"duplicate key: the last wins", `{"addr": "x:1", "addr": "y:2"}`, func(c config.Config) bool { return c.Addr == "y:2" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, tc.body)
			got, _, err := config.Load([]string{"--config", path}, env(nil), true, nil)
			if err != nil || !tc.check(got) {
				t.Fatalf("Load = %+v, %v", got, err)
			}
		})
	}
	for _, tc := range []struct{ name, body, want string }{
		{"invalid setting in the file is validated", `{"log_format": "xml"}`, "log_format"},
		{"proxy in the file is validated", `{"trusted_proxies": ["10.0.0.0/8", "nope"]}`, `"nope"`},
		{"negative duration", `{"shutdown_timeout": "-1s"}`, "shutdown_timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, tc.body)
			_, _, err := config.Load([]string{"--config", path}, env(nil), true, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

// TestContentSettings: prices are exact dollars; a price left out keeps
// its default; the content engine must be a configured openai-chat
// engine's label.
func TestContentSettings(t *testing.T) {
	file := writeFile(t, `{"content_prices": {"analysis": 0.005}, "content_workers": 3, "content_max_tokens": 4096,
		"content_engine": "local", "engines": [{"label": "local", "base_url": "http://127.0.0.1:11434/v1", "model": "llama3.1"}]}`)
	got, _, err := config.Load([]string{"--content-workers", "4"}, env(map[string]string{"AIVIS_CONFIG": file}), true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.ContentPrices != (config.ContentPrices{Fetch: 1_000, Analysis: 5_000}) || got.ContentWorkers != 4 ||
		got.ContentMaxTokens != 4096 || got.ContentEngine != "local" {
		t.Errorf("content settings %+v %d %d %q", got.ContentPrices, got.ContentWorkers, got.ContentMaxTokens, got.ContentEngine)
	}
	// By default the first openai-chat engine, never an answer engine,
	// which searches the web on every call; none of the kind: none.
	answer := config.Engine{Label: "Sonar", Kind: "perplexity", Model: "sonar"}
	chat := config.Engine{Label: "local", BaseURL: "http://127.0.0.1:11434/v1", Model: "llama3.1"}
	for _, tc := range []struct {
		engines []config.Engine
		named   string
		want    int
	}{
		{[]config.Engine{answer, chat}, "", 1},
		{[]config.Engine{answer}, "", -1},
		{nil, "", -1},
		{[]config.Engine{chat, {Label: "other", Kind: "openai-chat", BaseURL: "https://api.openai.com/v1", Model: "gpt-4o-mini"}}, "other", 1},
	} {
		if got := (config.Config{Engines: tc.engines, ContentEngine: tc.named}).ContentAI(); got != tc.want {
			t.Errorf("engines %+v, content_engine %q: %d, want %d", tc.engines, tc.named, got, tc.want)
		}
	}
	named := config.Default()
	named.Engines, named.ContentEngine = []config.Engine{chat, answer}, "Sonar"
	if err := named.Validate(); err == nil || !strings.Contains(err.Error(), `content_engine "Sonar" is of kind perplexity`) {
		t.Errorf("an answer engine named the content engine: %v", err)
	}
	bad := writeFile(t, `{"content_prices": {"fetch": 0.0000001}}`)
	if _, _, err := config.Load(nil, env(map[string]string{"AIVIS_CONFIG": bad}), true, nil); err == nil || !strings.Contains(err.Error(), "six decimal") {
		t.Errorf("a price below the micro-dollar: %v", err)
	}
}

// TestEngineKinds: an engine of a provider's kind takes its API's base URL
// unless it names one; openai-chat's has none to take.
func TestEngineKinds(t *testing.T) {
	file := writeFile(t, `{"engines": [
		{"label": "local", "base_url": "http://127.0.0.1:11434/v1", "model": "llama3.1"},
		{"label": "ChatGPT search", "kind": "openai-responses", "model": "gpt-5-mini", "search_price_per_1k": 10},
		{"label": "Perplexity", "kind": "perplexity", "model": "sonar", "search_price_per_1k": 5},
		{"label": "Claude", "kind": "anthropic", "model": "claude-sonnet-4-5", "search_price_per_1k": 10, "max_searches": 3},
		{"label": "Gemini", "kind": "gemini", "model": "gemini-2.5-flash", "search_price_per_1k": 35},
		{"label": "Gateway", "kind": "anthropic", "base_url": "https://llm.gateway.example/anthropic", "model": "claude-haiku-4-5"}]}`)
	got, _, err := config.Load(nil, env(map[string]string{"AIVIS_CONFIG": file}), true, nil)
	if err != nil {
		t.Fatal(err)
	}
	var urls []string
	for _, e := range got.Engines {
		urls = append(urls, e.URL())
	}
	want := []string{"http://127.0.0.1:11434/v1", "https://api.openai.com/v1", "https://api.perplexity.ai", "https://api.anthropic.com",
		"https://generativelanguage.googleapis.com", "https://llm.gateway.example/anthropic"}
	if !reflect.DeepEqual(urls, want) {
		t.Errorf("base URLs %q, want %q", urls, want)
	}
	if e := got.Engines[3]; e.Kind != "anthropic" || e.SearchPricePer1K != 10 || e.MaxSearches != 3 {
		t.Errorf("the anthropic engine %+v", e)
	}
	bad := writeFile(t, `{"engines": [{"label": "chat", "kind": "openai-chat", "model": "gpt-4o-mini"}]}`)
	if _, _, err := config.Load(nil, env(map[string]string{"AIVIS_CONFIG": bad}), true, nil); err == nil ||
		!strings.Contains(err.Error(), "engines[0].base_url must be set for kind openai-chat") {
		t.Errorf("openai-chat without base_url: %v", err)
	}
}

// TestSerpAPIEngine: a serpapi engine takes SerpApi's API by default; its
// model is one of SerpApi's engines it reads; it takes no max_searches.
func TestSerpAPIEngine(t *testing.T) {
	c := config.Default()
	for _, m := range []string{"google_ai_overview", "google_ai_mode", "bing_copilot"} {
		c.Engines = append(c.Engines, config.Engine{Label: m, Kind: "serpapi", Model: m, APIKey: "k", SearchPricePer1K: 15})
	}
	if err := c.Validate(); err != nil || c.Engines[0].URL() != "https://serpapi.com" {
		t.Fatalf("%v, %s", err, c.Engines[0].URL())
	}
	c.Engines = []config.Engine{{Label: "bing", Kind: "serpapi", Model: "bing", APIKey: "k"},
		{Label: "bounded", Kind: "serpapi", Model: "google_ai_mode", APIKey: "k", MaxSearches: 2}}
	err := c.Validate()
	for _, w := range []string{"engines[0].model of kind serpapi must be one of google_ai_overview, google_ai_mode, bing_copilot",
		"engines[1].max_searches bounds the searches of kind anthropic only"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v does not mention %q", err, w)
		}
	}
}

// TestEngineSearchSettings: an xai engine takes xAI's API by default and
// x_search; an openai-chat engine of a search model, surface search_api.
func TestEngineSearchSettings(t *testing.T) {
	file := writeFile(t, `{"engines": [
		{"label": "Grok", "kind": "xai", "model": "grok-4", "search_price_per_1k": 5, "x_search": true},
		{"label": "Search", "base_url": "https://api.openai.com/v1", "model": "gpt-4o-search-preview", "surface": "search_api"}]}`)
	got, _, err := config.Load(nil, env(map[string]string{"AIVIS_CONFIG": file}), true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if e := got.Engines[0]; e.URL() != "https://api.x.ai/v1" || !e.XSearch || e.Surface != "" {
		t.Errorf("the xai engine %+v", e)
	}
	if e := got.Engines[1]; e.Surface != "search_api" || e.XSearch {
		t.Errorf("the search model %+v", e)
	}
}

// TestDataForSEOEngine: a dataforseo engine takes DataForSEO's API by
// default; its model is a surface, its key (given or from a variable) a
// login:password, which an error never repeats.
func TestDataForSEOEngine(t *testing.T) {
	t.Setenv("AIVIS_TEST_DFS_KEY", "")
	c := config.Default()
	c.Engines = []config.Engine{{Label: "AIO", Kind: "dataforseo", Model: "ai_overview", APIKey: "api@acme.example:pw-secret-1"},
		{Label: "AI Mode", Kind: "dataforseo", Model: "ai_mode", APIKeyEnv: "AIVIS_TEST_DFS_KEY"}}
	if err := c.Validate(); err != nil || c.Engines[0].URL() != "https://api.dataforseo.com" {
		t.Fatalf("%v, %s", err, c.Engines[0].URL())
	}
	t.Setenv("AIVIS_TEST_DFS_KEY", "no-colon-secret-2")
	c.Engines = append(c.Engines, config.Engine{Label: "bad", Kind: "dataforseo", Model: "google", APIKey: ":pw-secret-3"},
		config.Engine{Label: "keyless", Kind: "dataforseo", Model: "ai_mode"})
	err := c.Validate()
	for _, w := range []string{"engines[1]: the key of kind dataforseo (api_key, or the variable api_key_env names) must be DataForSEO's API login and password as login:password",
		"engines[2].model of kind dataforseo must be ai_overview (Google's AI Overview) or ai_mode", "engines[2]: the key of kind dataforseo",
		"engines[3]: kind dataforseo needs api_key or api_key_env"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v does not mention %q", err, w)
		}
	}
	if err != nil && (strings.Contains(err.Error(), "engines[0]") || strings.Contains(err.Error(), "secret")) {
		t.Errorf("error %v", err)
	}
}

// delivery_retention, answer_retention and traffic_retention are set as
// every setting is:
// in the file, by AIVIS_..., by --..., each over the one before; one below
// its least is refused.
func TestRetentions(t *testing.T) {
	for _, r := range []struct {
		setting, short string
		get            func(config.Config) config.Duration
	}{
		{"delivery_retention", "delivery_retention must be at least 168h", func(c config.Config) config.Duration { return c.DeliveryRetention }},
		{"answer_retention", "answer_retention must be at least 24h", func(c config.Config) config.Duration { return c.AnswerRetention }},
		{"traffic_retention", "traffic_retention must be at least 168h", func(c config.Config) config.Duration { return c.TrafficRetention }},
	} {
		file := writeFile(t, `{"`+r.setting+`": "1000h"}`)
		envName, flagName := "AIVIS_"+strings.ToUpper(r.setting), "--"+strings.ReplaceAll(r.setting, "_", "-")
		for _, tc := range []struct {
			env  map[string]string
			args []string
			want time.Duration
		}{
			{map[string]string{"AIVIS_CONFIG": file}, nil, 1000 * time.Hour},
			{map[string]string{"AIVIS_CONFIG": file, envName: "2000h"}, nil, 2000 * time.Hour},
			{map[string]string{"AIVIS_CONFIG": file, envName: "2000h"}, []string{flagName, "3000h"}, 3000 * time.Hour},
		} {
			got, _, err := config.Load(tc.args, env(tc.env), true, nil)
			if err != nil || time.Duration(r.get(got)) != tc.want {
				t.Errorf("%s: %v %v: %v, %v; want %v", r.setting, tc.env, tc.args, r.get(got), err, tc.want)
			}
		}
		if _, _, err := config.Load([]string{flagName, "23h"}, env(nil), true, nil); err == nil || !strings.Contains(err.Error(), r.short) {
			t.Errorf("%s of 23 hours: %v", r.setting, err)
		}
	}
}

// The api and auto_migrate settings are read as every setting is: in the
// file, by their variables, by their flags, each over the one before;
// both true by default, and settings of serve alone.
func TestServeSwitches(t *testing.T) {
	for _, sw := range []struct {
		key, envName, flag string
		get                func(config.Config) bool
	}{
		{"api", "AIVIS_API", "--api", func(c config.Config) bool { return c.API }},
		{"auto_migrate", "AIVIS_AUTO_MIGRATE", "--auto-migrate", func(c config.Config) bool { return c.AutoMigrate }},
	} {
		off := writeFile(t, `{"`+sw.key+`": false}`)
		on := writeFile(t, `{"`+sw.key+`": true}`)
		for _, tc := range []struct {
			env  map[string]string
			args []string
			want bool
		}{
			{nil, nil, true},
			{map[string]string{"AIVIS_CONFIG": off}, nil, false},
			{map[string]string{sw.envName: "false"}, nil, false},
			{nil, []string{sw.flag + "=false"}, false},
			{map[string]string{"AIVIS_CONFIG": off, sw.envName: "true"}, nil, true},
			{map[string]string{"AIVIS_CONFIG": on, sw.envName: "0"}, nil, false},
			{map[string]string{"AIVIS_CONFIG": off, sw.envName: "false"}, []string{sw.flag}, true},
			{map[string]string{"AIVIS_CONFIG": on, sw.envName: "true"}, []string{sw.flag + "=false"}, false},
		} {
			got, _, err := config.Load(tc.args, env(tc.env), true, nil)
			if err != nil || sw.get(got) != tc.want {
				t.Errorf("%v %v: %s %v, %v; want %v", tc.env, tc.args, sw.key, sw.get(got), err, tc.want)
			}
		}
		if _, _, err := config.Load([]string{sw.flag + "=false"}, env(nil), false, nil); err == nil {
			t.Errorf("a command other than serve took %s", sw.flag)
		}
	}
}

// TestNATSURLErrorHidesCredentials: a refused nats_url is not repeated in
// the error, since it may carry a password or a token.
func TestNATSURLErrorHidesCredentials(t *testing.T) {
	for _, u := range []string{"http://admin:s3cret@nats.internal:4222", "nats://s3cret@nats.internal:4222/x", "nats://admin:s3cret@"} {
		_, _, err := config.Load(nil, env(map[string]string{"AIVIS_NATS_URL": u}), true, nil)
		if err == nil || !strings.Contains(err.Error(), "nats_url") {
			t.Fatalf("%s: error %v, want one about nats_url", u, err)
		}
		if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "nats.internal") {
			t.Errorf("the error repeats the URL: %v", err)
		}
	}
}
