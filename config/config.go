// Package config is aivis's configuration: defaults, then a JSON file, then
// AIVIS_* environment variables, then command-line flags, each overriding
// the one before. docs/configuration.md lists every setting.
package config

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/probe"
)

// ErrInvalid is in every error of a configuration's file, environment or
// values (its text, "config", begins them), as opposed to a command
// line's unknown or malformed flags.
var ErrInvalid = errors.New("config")

// Config is the server's configuration.
type Config struct {
	ConfigFile string `json:"-"`
	DataDir    string `json:"data_dir"`
	// Store, Bus and Counter name the engines (core/engines) that keep the
	// data, carry events and count requests.
	Store   string `json:"store"`
	Bus     string `json:"bus"`
	Counter string `json:"counter"`
	// PostgresURL is the database of store postgres: a postgres:// URL or
	// key=value settings, as libpq takes them.
	PostgresURL string `json:"postgres_url"`
	// MasterKeyFile holds the master keys that seal the secrets the store
	// keeps, one a line, each the base64 of 32 bytes (the first seals,
	// every one opens; core/secrets); "": data_dir's master.key, made on
	// the first start. Instances that share a store are each given the
	// same file.
	MasterKeyFile string `json:"master_key_file"`
	// RedisURL is the server of counter redis:
	// redis://[user:password@]host:port/db, rediss:// for TLS.
	RedisURL string `json:"redis_url"`
	// API: this process serves the API and the dashboard (while its rate
	// limits are exact: core/app); false, it runs the workers alone.
	API bool `json:"api"`
	// AutoMigrate: serve applies pending migrations at start; false, it
	// refuses a database with pending ones (aivis migrate up applies
	// them).
	AutoMigrate bool `json:"auto_migrate"`
	// ClusterName prefixes the names a deployment takes in shared engines
	// (NATS streams, subjects and consumers; Redis keys), so that several
	// deployments can share one NATS and one Redis.
	ClusterName string `json:"cluster_name"`
	// NATSURL is the NATS server of bus nats: nats://[user:password@]host:port,
	// several comma-separated.
	NATSURL               string   `json:"nats_url"`
	Addr                  string   `json:"addr"`
	HTTPAddr              string   `json:"http_addr"`
	PublicURL             string   `json:"public_url"`
	TLSCert               string   `json:"tls_cert"`
	TLSKey                string   `json:"tls_key"`
	TrustedProxies        []string `json:"trusted_proxies"`
	CORSAllowedOrigins    []string `json:"cors_allowed_origins"` // origins whose pages may call the API (CORS)
	AllowPrivateTargets   bool     `json:"allow_private_targets"`
	AllowedTargets        []string `json:"allowed_targets"`
	AllowHTTPTargets      bool     `json:"allow_http_targets"`
	WebhookTimeout        Duration `json:"webhook_timeout"`
	DeliveryRetention     Duration `json:"delivery_retention"`
	LogLevel              string   `json:"log_level"`
	LogFormat             string   `json:"log_format"`
	AuthFailuresPerMinute int      `json:"auth_failures_per_minute"`
	CounterFlushInterval  Duration `json:"counter_flush_interval"`
	ShutdownTimeout       Duration `json:"shutdown_timeout"`
	// ShutdownDelay is how long /readyz answers 503 at SIGTERM before the
	// listeners stop taking connections, so that load balancers drain
	// first.
	ShutdownDelay Duration `json:"shutdown_delay"`
	// AdminAddr is the admin listener's address (plain HTTP: the health
	// checks, /metrics, pprof when AdminPprof): loopback by default,
	// never the API's; "" turns it off. Every process on a host needs its
	// own.
	AdminAddr  string `json:"admin_addr"`
	AdminPprof bool   `json:"admin_pprof"`
	// TrustedPluginsDir is a directory whose connector plugins are
	// registered at every start (core/hub.RegisterDir): binaries as
	// trusted as the server's own, such as the container image's
	// connectors; "": none.
	TrustedPluginsDir string `json:"trusted_plugins_dir"`
	// Engines are the AI engines scans probe, of the kinds probe.Kinds
	// (set in the config file only).
	Engines []Engine `json:"engines"`
	// ScanWorkers is how many domain scans run at once.
	ScanWorkers int `json:"scan_workers"`
	// AnswerRetention is how long the answers behind a scan's figures are
	// kept after the scan.
	AnswerRetention Duration `json:"answer_retention"`
	// TrafficRetention is how long the daily aggregates of AI crawler
	// visits and referrals are kept (docs/traffic.md).
	TrafficRetention Duration `json:"traffic_retention"`
	// CrawlerRangesURL, when set, serves the IP range lists of AI crawlers
	// as aivis crawlers update --from reads them; the server fetches it at
	// start and daily (docs/traffic.md).
	CrawlerRangesURL string `json:"crawler_ranges_url"`
	// ContentWorkers is how many content requests are processed at once;
	// 0: this server processes none (requests stay queued for another
	// server on the same data directory).
	ContentWorkers int `json:"content_workers"`
	// ContentEngine is the label of the engine content requests use, an
	// openai-chat engine (default: the first of Engines of that kind;
	// none: the built-in analysis only). The answer engines search the
	// web on every call, which a rewrite must not draw on, for fees the
	// request's budget could not bound.
	ContentEngine string `json:"content_engine"`
	// ContentMaxTokens caps each answer of the engine to a content
	// request: the output part of a call's worst case.
	ContentMaxTokens int `json:"content_max_tokens"`
	// ContentLease is how long a worker's claim on a content request holds
	// without renewal: after a crash, the restarted server takes the
	// request again once it has ended.
	ContentLease Duration `json:"content_lease"`
	// ContentPrices are the fixed prices of content requests' steps.
	ContentPrices ContentPrices `json:"content_prices"`
}

// ContentPrices are what a content request is charged for a page fetched
// and for an analysis, in dollars (at most six decimals).
type ContentPrices struct {
	Fetch    client.USD `json:"fetch"`
	Analysis client.USD `json:"analysis"`
}

// Engine is an AI engine scans ask: by Kind, an OpenAI-compatible
// chat-completions endpoint (a hosted model or a local one: Ollama, vLLM,
// llama.cpp), or an answer engine that searches the web (probe.Kinds).
// The key is read from the environment variable APIKeyEnv, or given as
// APIKey.
type Engine struct {
	Label              string   `json:"label"`
	Kind               string   `json:"kind,omitempty"`
	BaseURL            string   `json:"base_url"`
	Model              string   `json:"model"`
	APIKey             string   `json:"api_key,omitempty"`
	APIKeyEnv          string   `json:"api_key_env,omitempty"`
	InputPricePerMTok  float64  `json:"input_price_per_mtok"`
	OutputPricePerMTok float64  `json:"output_price_per_mtok"`
	SearchPricePer1K   float64  `json:"search_price_per_1k,omitempty"`
	MaxSearches        int      `json:"max_searches,omitempty"`
	Concurrency        int      `json:"concurrency"`
	Timeout            Duration `json:"timeout"`
	// Surface is search_api for an openai-chat engine of a search model
	// (gpt-4o-search-preview): its answers come from a web search, and
	// it takes a market's country ("": its kind's, a model's answers).
	Surface string `json:"surface,omitempty"`
	// XSearch also gives an xai engine the x_search tool (posts on X).
	XSearch bool `json:"x_search,omitempty"`
}

// defaultBaseURLs are the base URLs of the kinds of one provider: its
// API's. An openai-chat engine names its endpoint.
var defaultBaseURLs = map[string]string{
	probe.KindOpenAIResponses: "https://api.openai.com/v1",
	probe.KindPerplexity:      "https://api.perplexity.ai",
	probe.KindAnthropic:       "https://api.anthropic.com",
	probe.KindGemini:          "https://generativelanguage.googleapis.com",
	probe.KindDataForSEO:      "https://api.dataforseo.com",
	probe.KindXAI:             "https://api.x.ai/v1",
	probe.KindSerpAPI:         "https://serpapi.com",
}

// URL is the engine's base URL: BaseURL, or by default its kind's
// provider's API.
func (e Engine) URL() string {
	if e.BaseURL != "" {
		return e.BaseURL
	}
	return defaultBaseURLs[e.Kind]
}

// Key is the engine's API key: from its environment variable when named.
func (e Engine) Key() string {
	if e.APIKeyEnv != "" {
		return os.Getenv(e.APIKeyEnv)
	}
	return e.APIKey
}

// ContentAI is the index in Engines of the engine content requests use:
// the one content_engine names, else the first of kind openai-chat; -1
// when there is none.
func (c Config) ContentAI() int {
	return slices.IndexFunc(c.Engines, func(e Engine) bool {
		return e.Label == c.ContentEngine || c.ContentEngine == "" && cmp.Or(e.Kind, probe.KindOpenAIChat) == probe.KindOpenAIChat
	})
}

// Duration is a time.Duration written as "1s", "250ms" in files and flags.
type Duration time.Duration

func (d Duration) String() string { return time.Duration(d).String() }

// Set parses a duration string.
func (d *Duration) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads a duration string such as "1s".
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("durations are strings such as \"1s\"")
	}
	return d.Set(s)
}

// MinDeliveryRetention is the shortest delivery_retention: longer than a
// delivery's retries take and than an endpoint may fail before it is
// disabled (5 days).
const MinDeliveryRetention = 7 * 24 * time.Hour

// DefaultAdminAddr is where the admin listener is unless admin_addr says:
// loopback, on the port OpenTelemetry's Prometheus exporters take.
const DefaultAdminAddr = "127.0.0.1:9464"

// MinAnswerRetention is the shortest answer_retention: a day.
const MinAnswerRetention = 24 * time.Hour

// MinTrafficRetention is the shortest traffic_retention: a week.
const MinTrafficRetention = 7 * 24 * time.Hour

// Default is the configuration with nothing set.
func Default() Config {
	return Config{
		DataDir:               "./aivis-data",
		Store:                 "sqlite",
		Bus:                   "sqlite",
		Counter:               "memory",
		API:                   true,
		AutoMigrate:           true,
		ClusterName:           "aivis",
		Addr:                  "127.0.0.1:8443",
		LogLevel:              "info",
		LogFormat:             "text",
		AuthFailuresPerMinute: 20,
		CounterFlushInterval:  Duration(time.Second),
		ShutdownTimeout:       Duration(30 * time.Second),
		AdminAddr:             DefaultAdminAddr,
		WebhookTimeout:        Duration(15 * time.Second),
		DeliveryRetention:     Duration(30 * 24 * time.Hour),
		AnswerRetention:       Duration(90 * 24 * time.Hour),
		TrafficRetention:      Duration(400 * 24 * time.Hour),
		ScanWorkers:           2,
		ContentWorkers:        2,
		ContentMaxTokens:      2048,
		ContentLease:          Duration(time.Minute),
		ContentPrices:         ContentPrices{Fetch: client.Dollars(0.001), Analysis: client.Dollars(0.002)},
	}
}

type field struct {
	flag, usage string
	value       flag.Value
	// every command takes it as a flag, not only serve: where the data is
	// and which engines hold it.
	shared bool
}

// fields binds every setting to a flag name; its environment variable is
// AIVIS_ and the flag name in upper case with underscores.
func (c *Config) fields() []field {
	return []field{
		{"data-dir", "directory of the database, TLS material and plugins", (*str)(&c.DataDir), true},
		{"config", "JSON configuration file", (*str)(&c.ConfigFile), true},
		{"store", "storage engine: where accounts, keys, readings, events and deliveries are kept", (*str)(&c.Store), true},
		{"bus", "event bus: what carries events from the store to the delivery engine", (*str)(&c.Bus), true},
		{"counter", "rate-limit counter: what counts requests against the tiers' windows", (*str)(&c.Counter), true},
		{"postgres-url", "database of store postgres: a postgres:// URL or key=value settings", (*str)(&c.PostgresURL), true},
		{"master-key-file", "file of the master keys that seal stored secrets, one a line, each the base64 of 32 bytes, the first sealing (default: master.key in data-dir, made on first start; store postgres needs it)", (*str)(&c.MasterKeyFile), true},
		{"redis-url", "Redis server of counter redis: redis://[user:password@]host:port/db (rediss:// for TLS)", (*str)(&c.RedisURL), true},
		{"api", "serve the API and the dashboard (--api=false: run the workers alone: deliveries, scans, content requests; serve no API, only the admin listener)", (*boolean)(&c.API), false},
		{"auto-migrate", "apply pending schema migrations at start (--auto-migrate=false: refuse to start with pending ones; aivis migrate up applies them)", (*boolean)(&c.AutoMigrate), false},
		{"cluster-name", "prefix of this deployment's NATS streams, subjects and consumers and Redis keys", (*str)(&c.ClusterName), true},
		{"nats-url", "NATS server of bus nats: nats://[user:password@]host:port, several comma-separated", (*str)(&c.NATSURL), true},
		{"addr", "HTTPS listen address", (*str)(&c.Addr), false},
		{"http-addr", "optional plain-HTTP listen address (answers 403 HTTPS_REQUIRED)", (*str)(&c.HTTPAddr), false},
		{"public-url", "base URL users reach the server at (default https://<addr>)", (*str)(&c.PublicURL), false},
		{"tls-cert", "TLS certificate PEM file (default: self-signed, made in the data directory)", (*str)(&c.TLSCert), false},
		{"tls-key", "TLS private key PEM file", (*str)(&c.TLSKey), false},
		{"trusted-proxies", "comma-separated CIDRs whose X-Forwarded-Proto/-For are believed", (*list)(&c.TrustedProxies), false},
		{"cors-allowed-origins", "comma-separated origins (https://app.example.com) whose browser pages may call the API (CORS; default none)", (*list)(&c.CORSAllowedOrigins), false},
		{"allow-private-targets", "let outbound deliveries reach loopback, private and link-local addresses", (*boolean)(&c.AllowPrivateTargets), false},
		{"allowed-targets", "comma-separated CIDRs outbound deliveries may reach despite the guard", (*list)(&c.AllowedTargets), false},
		{"allow-http-targets", "accept webhook endpoints on plain http:// (default: https:// only)", (*boolean)(&c.AllowHTTPTargets), false},
		{"webhook-timeout", "how long one webhook delivery attempt may take", &c.WebhookTimeout, false},
		{"delivery-retention", "how long deliveries and their attempts are kept, deleted webhooks' and connections' too (at least 168h)", &c.DeliveryRetention, false},
		{"answer-retention", "how long the answers behind a scan's figures are kept after the scan (at least 24h)", &c.AnswerRetention, false},
		{"traffic-retention", "how long the daily aggregates of AI crawler visits and referrals are kept (at least 168h)", &c.TrafficRetention, false},
		{"crawler-ranges-url", "a URL of the AI crawlers' IP range lists (as aivis crawlers update --from reads them), fetched at start and daily", (*str)(&c.CrawlerRangesURL), false},
		{"log-level", "debug, info, warn or error", (*str)(&c.LogLevel), false},
		{"log-format", "text or json", (*str)(&c.LogFormat), false},
		{"auth-failures-per-minute", "failed authentications allowed per client address per minute", (*integer)(&c.AuthFailuresPerMinute), false},
		{"counter-flush-interval", "how often request counts are written to the database", &c.CounterFlushInterval, false},
		{"shutdown-timeout", "how long a graceful shutdown waits for requests in flight", &c.ShutdownTimeout, false},
		{"shutdown-delay", "how long /readyz answers 503 at SIGTERM before the listeners stop taking connections (load balancers drain first)", &c.ShutdownDelay, false},
		{"admin-addr", "admin listen address, plain HTTP: /livez, /readyz, /metrics, pprof (\"\": off; keep it off the public network)", (*str)(&c.AdminAddr), false},
		{"admin-pprof", "serve Go's pprof profiles on the admin listener (/debug/pprof/)", (*boolean)(&c.AdminPprof), false},
		{"trusted-plugins-dir", "directory whose connector plugins are registered at every start, as trusted as aivis itself (the image's connectors)", (*str)(&c.TrustedPluginsDir), false},
		{"scan-workers", "how many domain scans run at once", (*integer)(&c.ScanWorkers), false},
		{"content-workers", "how many content requests are processed at once (0: none)", (*integer)(&c.ContentWorkers), false},
		{"content-engine", "label of the engine content requests use, of kind openai-chat (default: the first such)", (*str)(&c.ContentEngine), false},
		{"content-lease", "how long a content request's claim holds without renewal (a crashed one is retaken after it)", &c.ContentLease, false},
	}
}

// EnvName is the environment variable of a flag.
func EnvName(flagName string) string {
	return "AIVIS_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// EnvNames are the environment variables of every setting, AIVIS_CONFIG
// among them.
func EnvNames() []string {
	var c Config
	var names []string
	for _, f := range c.fields() {
		names = append(names, EnvName(f.flag))
	}
	return names
}

// Flags are the settings bound as flags on a command line (Bind's), and
// what the command line set, in order: Load builds the configuration
// from them.
type Flags struct {
	scratch Config // what the flags write, to find --config
	sets    []flagSet
}

type flagSet struct{ name, value string }

// Bind registers the settings' flags on fs: every setting for serve; for
// the other commands, those of where the data is and which engines hold
// it. Its flags, once fs has parsed a command line, go to Load.
func Bind(fs *flag.FlagSet, serve bool) *Flags {
	f := &Flags{scratch: Default()}
	for _, d := range f.scratch.fields() {
		if serve || d.shared {
			fs.Var(recorded{d.value, d.flag, f}, d.flag, d.usage+" (env "+EnvName(d.flag)+")")
		}
	}
	return f
}

// recorded is a setting's flag that notes each value the command line
// gives it.
type recorded struct {
	flag.Value
	name string
	f    *Flags
}

func (r recorded) Set(v string) error {
	if err := r.Value.Set(v); err != nil {
		return err
	}
	r.f.sets = append(r.f.sets, flagSet{r.name, v})
	return nil
}

func (r recorded) IsBoolFlag() bool {
	b, ok := r.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// Type names the value's kind in a command's usage.
func (r recorded) Type() string {
	switch r.Value.(type) {
	case *boolean:
		return "bool"
	case *integer:
		return "int"
	case *list:
		return "strings"
	case *Duration:
		return "duration"
	}
	return "string"
}

// Load builds the configuration: defaults, the file named by --config or
// AIVIS_CONFIG, the environment, then the flags the command line set, and
// validates it. Every command reads the same file and environment, so
// that the CLI acts on the data and the engines the server uses.
func (f *Flags) Load(getenv func(string) string) (Config, error) {
	cfg := Default()
	path := f.scratch.ConfigFile
	if path == "" {
		path = getenv("AIVIS_CONFIG")
	}
	if path != "" {
		if err := cfg.readFile(path); err != nil {
			return Config{}, err
		}
		cfg.ConfigFile = path
	}
	byName := map[string]flag.Value{}
	for _, d := range cfg.fields() {
		byName[d.flag] = d.value
		if v, ok := lookup(getenv, EnvName(d.flag)); ok && d.flag != "config" {
			if err := d.value.Set(v); err != nil {
				return Config{}, fmt.Errorf("%w: %s: %w", ErrInvalid, EnvName(d.flag), err)
			}
		}
	}
	for _, s := range f.sets {
		if err := byName[s.name].Set(s.value); err != nil {
			return Config{}, err // Bind's flag took it
		}
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// Load parses args with the settings' flags (Bind's; extra adds a
// command's own) and builds the configuration (Flags.Load).
func Load(args []string, getenv func(string) string, serve bool, extra func(*flag.FlagSet)) (Config, *flag.FlagSet, error) {
	fs := flag.NewFlagSet("aivis", flag.ContinueOnError)
	fs.SetOutput(new(bytes.Buffer))
	f := Bind(fs, serve)
	if extra != nil {
		extra(fs)
	}
	if err := fs.Parse(args); err != nil {
		return Config{}, nil, err
	}
	cfg, err := f.Load(getenv)
	if err != nil {
		return Config{}, nil, err
	}
	return cfg, fs, nil
}

// Sources says where each setting Load would not leave at its default
// comes from, by its name in the file: "file", "env" or "flag", the last
// that sets it.
func (f *Flags) Sources(getenv func(string) string) map[string]string {
	src := map[string]string{}
	path := f.scratch.ConfigFile
	if path == "" {
		path = getenv("AIVIS_CONFIG")
	}
	if b, err := os.ReadFile(path); path != "" && err == nil {
		var keys map[string]json.RawMessage
		if json.Unmarshal(b, &keys) == nil {
			for k := range keys {
				src[k] = "file"
			}
		}
	}
	var c Config
	for _, d := range c.fields() {
		if _, ok := lookup(getenv, EnvName(d.flag)); ok && d.flag != "config" {
			src[strings.ReplaceAll(d.flag, "-", "_")] = "env"
		}
	}
	for _, s := range f.sets {
		if s.name != "config" {
			src[strings.ReplaceAll(s.name, "-", "_")] = "flag"
		}
	}
	return src
}

func lookup(getenv func(string) string, name string) (string, bool) {
	v := getenv(name)
	return v, v != ""
}

func (c *Config) readFile(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(c); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrInvalid, path, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("%w: %s: unexpected data after the JSON object at byte %d", ErrInvalid, path, dec.InputOffset())
	}
	return nil
}

// Validate checks the settings that can be checked without I/O.
func (c *Config) Validate() error {
	var errs []error
	if c.DataDir == "" {
		errs = append(errs, errors.New("data_dir must be set"))
	}
	if c.Addr == "" {
		errs = append(errs, errors.New("addr must be set"))
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		errs = append(errs, errors.New("tls_cert and tls_key must be set together"))
	}
	for _, p := range append(append([]string{}, c.TrustedProxies...), c.AllowedTargets...) {
		if _, err := ParsePrefix(p); err != nil {
			errs = append(errs, err)
		}
	}
	for _, o := range c.CORSAllowedOrigins {
		if err := checkOrigin(o); err != nil {
			errs = append(errs, err)
		}
	}
	if err := checkPostgresURL(c.PostgresURL); err != nil {
		errs = append(errs, err)
	}
	if err := checkRedisURL(c.RedisURL); err != nil {
		errs = append(errs, err)
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("log_level must be debug, info, warn or error, not %q", c.LogLevel))
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		errs = append(errs, fmt.Errorf("log_format must be text or json, not %q", c.LogFormat))
	}
	if !clusterName.MatchString(c.ClusterName) {
		errs = append(errs, fmt.Errorf("cluster_name must be 1 to 32 letters, digits, '-' or '_', beginning with a letter or digit (a NATS stream name and a prefix of subjects and Redis keys), not %q", c.ClusterName))
	}
	if err := checkNATSURL(c.NATSURL); err != nil {
		errs = append(errs, err)
	}
	if c.AuthFailuresPerMinute < 1 {
		errs = append(errs, errors.New("auth_failures_per_minute must be at least 1"))
	}
	if c.CounterFlushInterval < Duration(10*time.Millisecond) {
		errs = append(errs, errors.New("counter_flush_interval must be at least 10ms"))
	}
	if c.ShutdownTimeout <= 0 {
		errs = append(errs, errors.New("shutdown_timeout must be positive"))
	}
	if c.ShutdownDelay < 0 || c.ShutdownDelay > Duration(5*time.Minute) {
		errs = append(errs, errors.New("shutdown_delay must be between 0s and 5m"))
	}
	if c.AdminAddr != "" {
		if _, port, err := net.SplitHostPort(c.AdminAddr); err != nil {
			errs = append(errs, fmt.Errorf("admin_addr must be host:port (\"\" turns the admin listener off), not %q", c.AdminAddr))
		} else if port != "0" && (c.AdminAddr == c.Addr || c.AdminAddr == c.HTTPAddr) { // port 0: a free port of its own
			errs = append(errs, errors.New("admin_addr must be an address of its own, not the API's (addr, http_addr)"))
		}
	}
	if c.WebhookTimeout < Duration(100*time.Millisecond) || c.WebhookTimeout > Duration(time.Minute) {
		errs = append(errs, errors.New("webhook_timeout must be between 100ms and 1m"))
	}
	if c.DeliveryRetention < Duration(MinDeliveryRetention) {
		errs = append(errs, fmt.Errorf("delivery_retention must be at least %s (7 days: a delivery is retried for days)", MinDeliveryRetention))
	}
	if c.AnswerRetention < Duration(MinAnswerRetention) {
		errs = append(errs, fmt.Errorf("answer_retention must be at least %s (a day)", MinAnswerRetention))
	}
	if u, err := url.Parse(c.CrawlerRangesURL); c.CrawlerRangesURL != "" && (err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "") {
		errs = append(errs, errors.New("crawler_ranges_url must be an http or https URL"))
	}
	if c.TrafficRetention < Duration(MinTrafficRetention) {
		errs = append(errs, fmt.Errorf("traffic_retention must be at least %s (a week)", MinTrafficRetention))
	}
	if c.ScanWorkers < 1 || c.ScanWorkers > 64 {
		errs = append(errs, errors.New("scan_workers must be between 1 and 64"))
	}
	if c.ContentWorkers < 0 || c.ContentWorkers > 64 {
		errs = append(errs, errors.New("content_workers must be between 0 and 64"))
	}
	if c.ContentLease < Duration(time.Second) || c.ContentLease > Duration(time.Hour) {
		errs = append(errs, errors.New("content_lease must be between 1s and 1h"))
	}
	if c.ContentMaxTokens < 16 || c.ContentMaxTokens > 200_000 {
		errs = append(errs, errors.New("content_max_tokens must be between 16 and 200000"))
	}
	if c.ContentPrices.Fetch < 0 || c.ContentPrices.Analysis < 0 {
		errs = append(errs, errors.New("content_prices must not be negative"))
	}
	kinds := map[string]string{} // by label
	for i, e := range c.Engines {
		at := fmt.Sprintf("engines[%d]", i)
		if _, dup := kinds[e.Label]; e.Label == "" || dup {
			errs = append(errs, fmt.Errorf("%s.label must be set and unique", at))
		}
		kind := cmp.Or(e.Kind, probe.KindOpenAIChat)
		kinds[e.Label] = kind
		switch u, err := url.Parse(e.URL()); {
		case !slices.Contains(probe.Kinds, kind):
			errs = append(errs, fmt.Errorf("%s.kind must be one of %s", at, strings.Join(probe.Kinds, ", ")))
		case e.URL() == "":
			errs = append(errs, fmt.Errorf("%s.base_url must be set for kind %s: the Chat Completions endpoint's base, such as https://api.openai.com/v1 or http://127.0.0.1:11434/v1", at, kind))
		case err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "":
			errs = append(errs, fmt.Errorf("%s.base_url must be an http(s) URL such as %s", at, cmp.Or(defaultBaseURLs[kind], "https://api.openai.com/v1")))
		}
		if e.Model == "" {
			errs = append(errs, fmt.Errorf("%s.model must be set", at))
		} else if kind == probe.KindSerpAPI && !slices.Contains(probe.SerpAPIModels, e.Model) {
			errs = append(errs, fmt.Errorf("%s.model of kind %s must be one of %s: the surface SerpApi reads (Google's AI Overview, Google's AI Mode or Copilot)",
				at, probe.KindSerpAPI, strings.Join(probe.SerpAPIModels, ", ")))
		}
		if e.APIKey != "" && e.APIKeyEnv != "" {
			errs = append(errs, fmt.Errorf("%s: set api_key or api_key_env, not both", at))
		}
		if e.MaxSearches < 0 || e.MaxSearches > 20 {
			errs = append(errs, fmt.Errorf("%s.max_searches must be between 0 (the default, 5) and 20", at))
		} else if e.MaxSearches != 0 && kind != probe.KindAnthropic {
			errs = append(errs, fmt.Errorf("%s.max_searches bounds the searches of kind %s only; a %s engine searches as its provider decides", at, probe.KindAnthropic, kind))
		}
		switch {
		case e.Surface != "" && e.Surface != probe.SurfaceSearchAPI:
			errs = append(errs, fmt.Errorf("%s.surface must be %s (a search model) or unset", at, probe.SurfaceSearchAPI))
		case e.Surface != "" && kind != probe.KindOpenAIChat:
			errs = append(errs, fmt.Errorf("%s.surface is for kind %s only (a search model such as gpt-4o-search-preview); a %s engine's surface is its kind's", at, probe.KindOpenAIChat, kind))
		}
		if e.XSearch && kind != probe.KindXAI {
			errs = append(errs, fmt.Errorf("%s.x_search is for kind %s only", at, probe.KindXAI))
		}
		if kind == probe.KindDataForSEO {
			errs = append(errs, checkDataForSEO(at, e)...)
		}
		if e.InputPricePerMTok < 0 || e.OutputPricePerMTok < 0 || e.SearchPricePer1K < 0 {
			errs = append(errs, fmt.Errorf("%s: prices must not be negative", at))
		}
		if e.Concurrency < 0 || e.Concurrency > 256 {
			errs = append(errs, fmt.Errorf("%s.concurrency must be between 0 (the default, 4) and 256", at))
		}
		if e.Timeout < 0 {
			errs = append(errs, fmt.Errorf("%s.timeout must not be negative", at))
		}
	}
	if c.ContentEngine != "" {
		switch kind, ok := kinds[c.ContentEngine]; {
		case !ok:
			errs = append(errs, fmt.Errorf("content_engine %q is not the label of an engine", c.ContentEngine))
		case kind != probe.KindOpenAIChat:
			errs = append(errs, fmt.Errorf("content_engine %q is of kind %s: content requests use an %s engine, as an answer engine searches the web on every call", c.ContentEngine, kind, probe.KindOpenAIChat))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalid, errors.Join(errs...))
	}
	return nil
}

// checkDataForSEO checks a dataforseo engine: its model a surface, its
// key DataForSEO's login:password (where the key is at hand: a variable
// api_key_env names may be set later), never repeated.
func checkDataForSEO(at string, e Engine) []error {
	var errs []error
	if e.Model != "" && e.Model != probe.DataForSEOOverview && e.Model != probe.DataForSEOAIMode {
		errs = append(errs, fmt.Errorf("%s.model of kind %s must be %s (Google's AI Overview) or %s (Google's AI Mode)", at, probe.KindDataForSEO, probe.DataForSEOOverview, probe.DataForSEOAIMode))
	}
	login, password, _ := strings.Cut(e.Key(), ":")
	switch {
	case e.APIKey == "" && e.APIKeyEnv == "":
		errs = append(errs, fmt.Errorf("%s: kind %s needs api_key or api_key_env: DataForSEO's API login and password as login:password", at, probe.KindDataForSEO))
	case e.Key() != "" && (login == "" || password == ""):
		errs = append(errs, fmt.Errorf("%s: the key of kind %s (api_key, or the variable api_key_env names) must be DataForSEO's API login and password as login:password", at, probe.KindDataForSEO))
	}
	return errs
}

// checkOrigin checks an origin of cors_allowed_origins: scheme://host
// with an optional port, as a browser sends it in Origin, and nothing
// else.
func checkOrigin(o string) error {
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil ||
		u.Path != "" || u.RawQuery != "" || u.Fragment != "" || o != strings.ToLower(u.Scheme)+"://"+strings.ToLower(u.Host) {
		return fmt.Errorf("cors_allowed_origins: %q is not an origin: scheme://host[:port] in lower case, without a path, such as https://app.example.com", o)
	}
	return nil
}

// checkPostgresURL checks the form of postgres_url, if set: a
// postgres:// or postgresql:// URL, or key=value settings. Its error never
// repeats the value, which may hold a password.
func checkPostgresURL(s string) error {
	if s == "" {
		return nil
	}
	if strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://") {
		if _, err := url.Parse(s); err != nil {
			return errors.New("postgres_url is not a valid URL (postgres://user:password@host:port/database)")
		}
		return nil
	}
	if !strings.Contains(s, "=") {
		return errors.New("postgres_url must be a postgres:// URL or key=value settings (host=... dbname=...)")
	}
	return nil
}

// clusterName is what cluster_name may be: a valid NATS stream and consumer
// name and subject token (no '.', '*', '>', whitespace or path separators),
// and a Redis key prefix.
var clusterName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$`)

// checkNATSURL checks nats_url, if set: NATS server URLs, comma-separated.
// The error never repeats the setting, which may hold a password or token.
func checkNATSURL(s string) error {
	if s == "" {
		return nil
	}
	for _, part := range strings.Split(s, ",") {
		u, err := url.Parse(strings.TrimSpace(part))
		if err != nil || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" ||
			(u.Scheme != "nats" && u.Scheme != "tls" && u.Scheme != "ws" && u.Scheme != "wss") {
			return errors.New("nats_url must be nats://host:port (or tls://, ws://, wss://), with user:password@ or token@ if the server asks, several comma-separated")
		}
	}
	return nil
}

// checkRedisURL checks the form of redis_url, if set: a redis://,
// rediss:// or unix:// URL. Its error never repeats the value, which may
// hold a password.
func checkRedisURL(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || !(((u.Scheme == "redis" || u.Scheme == "rediss") && u.Host != "") || (u.Scheme == "unix" && u.Path != "")) {
		return errors.New("redis_url must be a redis://[user:password@]host:port/db URL (rediss:// for TLS, unix:///path for a socket)")
	}
	return nil
}

// ParsePrefix reads a CIDR, or a single address as a /32 or /128.
func ParsePrefix(s string) (netip.Prefix, error) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is not a CIDR or an IP address", s)
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

type str string

func (s *str) String() string     { return string(*s) }
func (s *str) Set(v string) error { *s = str(v); return nil }

type list []string

func (l *list) String() string { return strings.Join(*l, ",") }
func (l *list) Set(v string) error {
	*l = nil
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*l = append(*l, p)
		}
	}
	return nil
}

type boolean bool

func (b *boolean) String() string   { return strconv.FormatBool(bool(*b)) }
func (b *boolean) IsBoolFlag() bool { return true }
func (b *boolean) Set(v string) error {
	x, err := strconv.ParseBool(v)
	*b = boolean(x)
	return err
}

type integer int

func (i *integer) String() string { return strconv.Itoa(int(*i)) }
func (i *integer) Set(v string) error {
	x, err := strconv.Atoi(v)
	*i = integer(x)
	return err
}

// Masked is c with its secrets masked, to be shown: the passwords of its
// URLs (postgres_url's password setting too) and the engines' keys.
func (c Config) Masked() Config {
	c.PostgresURL = MaskURL(c.PostgresURL)
	c.RedisURL = MaskURL(c.RedisURL)
	urls := strings.Split(c.NATSURL, ",")
	for i, u := range urls {
		urls[i] = MaskURL(u)
	}
	c.NATSURL = strings.Join(urls, ",")
	c.Engines = slices.Clone(c.Engines)
	for i := range c.Engines {
		if c.Engines[i].APIKey != "" {
			c.Engines[i].APIKey = masked
		}
		c.Engines[i].BaseURL = MaskURL(c.Engines[i].BaseURL)
	}
	return c
}

const masked = "xxxxx"

// passwordSetting is a password in key=value settings (libpq's form).
var passwordSetting = regexp.MustCompile(`(?i)(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|\S*)`)

// MaskURL is s with the password of its user, and of a password query
// parameter or key=value setting, masked.
func MaskURL(s string) string {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || u.Scheme == "" {
		return passwordSetting.ReplaceAllString(s, "${1}"+masked)
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", masked)
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}
