// Package host starts connector plugins and talks to them: each plugin is a
// separate process started through go-plugin, over gRPC only, with mutual
// TLS made up per process (AutoMTLS), without the server's environment (a
// plugin never sees the server's secrets), its binary checked against the
// SHA-256 recorded when it was registered, and its stderr logged through
// slog.
package host

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/aivis/aivis/plugins/sdk"
)

// Plugin is one running plugin process.
type Plugin struct {
	client *plugin.Client
	proto  plugin.ClientProtocol
	conn   *sdk.Client
	// Protocol is the protocol version the plugin and the host agreed on.
	Protocol int
}

// Options start a plugin.
type Options struct {
	Path string
	// Checksum is the SHA-256 the binary must have; nil skips the check
	// (tests and development only).
	Checksum []byte
	Log      *slog.Logger
	// Env is the plugin's whole environment (the server's is not passed).
	Env []string
}

// Start starts the plugin at opt.Path and connects to it.
func Start(opt Options) (*Plugin, error) {
	if opt.Log == nil {
		opt.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	cmd := exec.Command(opt.Path)
	cmd.Env = append([]string{}, opt.Env...)
	cfg := &plugin.ClientConfig{
		HandshakeConfig:  sdk.Handshake,
		VersionedPlugins: sdk.Plugins(nil),
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		SkipHostEnv:      true,
		Managed:          false,
		Logger:           newLogger(opt.Log.With("plugin", opt.Path)),
	}
	if opt.Checksum != nil {
		cfg.SecureConfig = &plugin.SecureConfig{Checksum: opt.Checksum, Hash: sha256.New()}
	}
	c := plugin.NewClient(cfg)
	proto, err := c.Client()
	if err != nil {
		c.Kill()
		return nil, fmt.Errorf("host: start %s: %w", opt.Path, err)
	}
	raw, err := proto.Dispense(sdk.PluginName)
	if err != nil {
		c.Kill()
		return nil, fmt.Errorf("host: %s: %w", opt.Path, err)
	}
	conn, ok := raw.(*sdk.Client)
	if !ok {
		c.Kill()
		return nil, fmt.Errorf("host: %s: unexpected plugin type %T", opt.Path, raw)
	}
	return &Plugin{client: c, proto: proto, conn: conn, Protocol: c.NegotiatedVersion()}, nil
}

// Connector is the plugin's connector.
func (p *Plugin) Connector() *sdk.Client { return p.conn }

// Pid is the plugin's process id.
func (p *Plugin) Pid() int {
	if rc := p.client.ReattachConfig(); rc != nil {
		return rc.Pid
	}
	return 0
}

// Exited reports whether the plugin process has ended.
func (p *Plugin) Exited() bool { return p.client.Exited() }

// Ping checks that the plugin answers.
func (p *Plugin) Ping(context.Context) error { return p.proto.Ping() }

// Kill ends the plugin process (gracefully first, then by force).
func (p *Plugin) Kill() { p.client.Kill() }

// ErrChecksum is wrapped when a binary's checksum does not match.
var ErrChecksum = plugin.ErrChecksumsDoNotMatch

// IsChecksum reports whether err says the binary changed since it was
// registered.
func IsChecksum(err error) bool { return errors.Is(err, plugin.ErrChecksumsDoNotMatch) }

// newLogger is an hclog.Logger that writes through slog: go-plugin's own
// records, of the host's side and of the plugin's (its transport: mutual
// TLS, addresses, the process starting and exiting), at debug unless they
// warn or report an error; the lines the plugin itself writes to stderr
// (a panic, a line tagged [WARN] or [ERROR]) at the level go-plugin reads
// from them.
func newLogger(log *slog.Logger) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:       "plugin",
		Level:      hclog.Debug,
		Output:     &slogWriter{log: log},
		JSONFormat: true,
	})
}

// slogWriter passes hclog's JSON records to slog, one record each.
type slogWriter struct{ log *slog.Logger }

var levels = map[string]slog.Level{"trace": slog.LevelDebug, "debug": slog.LevelDebug, "info": slog.LevelInfo,
	"warn": slog.LevelWarn, "error": slog.LevelError}

func (w *slogWriter) Write(p []byte) (int, error) {
	var rec map[string]any
	if err := json.Unmarshal(p, &rec); err != nil {
		w.log.Warn(strings.TrimSpace(string(p)))
		return len(p), nil
	}
	level, ok := levels[fmt.Sprint(rec["@level"])]
	if !ok {
		level = slog.LevelInfo
	}
	// go-plugin's records: the host side's logger is "plugin"; the plugin
	// side's hclog records come forwarded with their own timestamp, which
	// the plugin's bare stderr lines lack.
	_, forwarded := rec["timestamp"]
	if (rec["@module"] == "plugin" || forwarded) && level < slog.LevelWarn {
		level = slog.LevelDebug
	}
	if !w.log.Enabled(context.Background(), level) {
		return len(p), nil
	}
	keys := make([]string, 0, len(rec))
	for k := range rec {
		if !strings.HasPrefix(k, "@") && k != "timestamp" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	attrs := make([]slog.Attr, len(keys))
	for i, k := range keys {
		attrs[i] = slog.Any(k, rec[k])
	}
	w.log.LogAttrs(context.Background(), level, fmt.Sprint(rec["@message"]), attrs...)
	return len(p), nil
}

// Inspect computes a plugin binary's SHA-256, starts it with that checksum
// and returns what it says of itself: what registering a plugin records.
func Inspect(ctx context.Context, path string, log *slog.Logger) (sdk.Info, []byte, error) {
	sum, err := Checksum(path)
	if err != nil {
		return sdk.Info{}, nil, err
	}
	p, err := Start(Options{Path: path, Checksum: sum, Log: log})
	if err != nil {
		return sdk.Info{}, nil, err
	}
	defer p.Kill()
	info, err := p.Connector().Info(ctx)
	if err != nil {
		return sdk.Info{}, nil, fmt.Errorf("host: %s: info: %w", path, err)
	}
	return info, sum, nil
}

// Checksum is the SHA-256 of a file.
func Checksum(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("host: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, fmt.Errorf("host: %s: %w", path, err)
	}
	return h.Sum(nil), nil
}
