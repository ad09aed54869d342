package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/config"
	"github.com/aivis/aivis/core/app"
	"github.com/aivis/aivis/core/auth"
	"github.com/aivis/aivis/core/content/analysis"
	"github.com/aivis/aivis/internal/syncbuf"
)

// TestAgainstRunningServer runs the example against a real aivis server
// over HTTPS, with credentials made as the CLI makes them.
func TestAgainstRunningServer(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	cfg := config.Default()
	cfg.DataDir = dir
	svc, err := app.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	a, err := svc.Accounts.Create(ctx, "Example", "starter", false)
	if err != nil {
		t.Fatal(err)
	}
	k, err := svc.Auth.CreateKey(ctx, auth.NewKey{AccountID: a.ID, Name: "example"})
	if err != nil {
		t.Fatal(err)
	}
	svc.Close()

	cfg.Addr, cfg.AdminAddr = "127.0.0.1:0", "127.0.0.1:0"
	srvCtx, stop := context.WithCancel(context.Background())
	var banner syncbuf.Buffer
	done := make(chan error, 1)
	go func() { done <- app.Run(srvCtx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), &banner) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("server: %v", err)
		}
	}()
	url := ""
	re := regexp.MustCompile(`aivis listening on (https://\S+)`)
	for deadline := time.Now().Add(20 * time.Second); url == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := re.FindStringSubmatch(banner.String()); m != nil {
			url = m[1]
		}
	}
	if url == "" {
		t.Fatalf("server did not start: %s", banner.String())
	}

	env := map[string]string{"AIVIS_API_KEY": k.APIKey, "AIVIS_API_SECRET": k.Secret}
	var out bytes.Buffer
	err = run(ctx, []string{"-base-url", url, "-ca-file", filepath.Join(dir, "tls", "cert.pem"), "-domain", "example.com", "-budget", "12.5"},
		func(k string) string { return env[k] }, &out)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	got := out.String()
	// What the server's analysis must find in the example's text.
	want := analysis.Analyze(analysis.ParseText("", Content), analysis.Options{Domain: "example.com", Queries: []string{"what is example.com"}})
	for _, want := range []string{"tier Starter: 59 of 60 requests left this minute; $5000 of $5000 left this month",
		"with a budget of $12.5 (queued)", "1 content requests", "is completed; spent $0.002, $0 reserved",
		fmt.Sprintf("AI-citability score %d/100, %d findings", want.Score, len(want.Findings)), "first fix: " + want.Findings[0].Fix,
		"example.com: no reading yet"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if err := run(ctx, []string{"-base-url", url}, func(string) string { return "" }, &out); err == nil {
		t.Error("ran without credentials")
	}
}
