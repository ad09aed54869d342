// A connector that misbehaves on request, for the host's tests: the
// settings' "mode" is ok, hang, garbage (wrong result count), crash,
// warn (a warning on stderr), leak (a reason that tells its secret
// settings, "secret" and the hook URL "url", in every form), dirty (a
// permanent failure whose reason holds a NUL and bytes that are not
// UTF-8, as a destination's answer may), or wait
// (it writes the file "started" in the directory "dir" and delivers once
// a file "release" is there). It names no destination settings. Its
// version is "0" unless built with -ldflags "-X main.version=...".
// With TESTPLUGIN_NEWER set it also offers a protocol version the host
// does not know.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-plugin"

	"github.com/aivis/aivis/plugins/sdk"
)

type bad struct{}

var version = "0"

func (bad) Info() sdk.Info {
	return sdk.Info{Name: "test", Kind: "other", Version: version, SettingsSchema: json.RawMessage(`{"type":"object"}`),
		SecretFields: []string{"secret", "url"}, MaxBatch: 10}
}

func (bad) ValidateSettings(context.Context, json.RawMessage) []sdk.FieldError { return nil }

func (bad) Deliver(ctx context.Context, raw json.RawMessage, events []sdk.Event) []sdk.Result {
	var s struct{ Mode, Secret, URL, Dir string }
	json.Unmarshal(raw, &s)
	switch s.Mode {
	case "leak":
		u, _ := url.Parse(s.URL)
		why := fmt.Sprintf("settings %s; secret %s, %s, %s; Post %q: refused; path %s; elsewhere https://user:pw@other.example/p?token=t0k3n#frag",
			raw, s.Secret, url.QueryEscape(s.Secret), url.PathEscape(s.Secret), s.URL, u.Path)
		out := make([]sdk.Result, len(events))
		for i := range out {
			out[i] = sdk.RetryResult(0, why)
		}
		return out
	case "dirty":
		out := make([]sdk.Result, len(events))
		for i := range out {
			out[i] = sdk.FailedResult("hook answered 400: bad\x00request \xff\xfe")
		}
		return out
	case "hang":
		time.Sleep(time.Hour)
	case "wait":
		os.WriteFile(filepath.Join(s.Dir, "started"), nil, 0o600)
		for {
			if _, err := os.Stat(filepath.Join(s.Dir, "release")); err == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	case "garbage":
		return []sdk.Result{}
	case "crash":
		os.Exit(3)
	case "warn":
		// The log package writes to the process's stderr, which the host
		// reads, as plugins are told to warn.
		log.SetFlags(0)
		log.Print("[WARN] the test plugin was asked to warn")
	}
	out := make([]sdk.Result, len(events))
	for i := range out {
		out[i] = sdk.DeliveredResult()
	}
	return out
}

func main() {
	if os.Getenv("TESTPLUGIN_NEWER") == "" {
		sdk.Serve(bad{})
	}
	// A plugin newer than its host: it also speaks a protocol version 2
	// the host does not know, and must be spoken to in version 1.
	v1 := sdk.Plugins(bad{})[1]
	plugin.Serve(&plugin.ServeConfig{HandshakeConfig: sdk.Handshake, GRPCServer: plugin.DefaultGRPCServer,
		VersionedPlugins: map[int]plugin.PluginSet{1: v1, 2: v1}})
}
