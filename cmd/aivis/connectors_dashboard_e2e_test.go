package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/aivis/aivis/plugins/host"
)

// TestDashboardSaysWhyAConnectorDoesNotRun: in headless Chromium, the
// connectors page of a server whose partner connector was rebuilt (a
// SHA-256 not registered) shows it unavailable, why (the new SHA-256's
// prefix, no path), and that its deliveries wait; once the rebuilt binary
// is registered, the page shows it running, with that build.
func TestDashboardSaysWhyAConnectorDoesNotRun(t *testing.T) {
	browser := chromium(t)
	dir := t.TempDir()
	binDir := filepath.Join(t.TempDir(), "secret-place")
	if err := os.Mkdir(binDir, 0o700); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(binDir, "partner-connector")
	buildPartner(t, bin, false)
	cli(t, dir, nil, "plugin", "register", bin)
	buildPartner(t, bin, true)
	sum, err := host.Checksum(bin)
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, dir)
	run, text := ownerBrowser(t, browser, s, "Acme", "owner@acme.example")

	card := `#connector-partner-chat`
	run("connectors page", chromedp.Navigate(s.URL+"/connectors"), chromedp.WaitVisible(card, chromedp.ByQuery))
	if st := text(card + ` .state`); st != "unavailable" {
		t.Errorf("the state shown: %q", st)
	}
	why := text(card + ` .why`)
	if !strings.Contains(why, fmt.Sprintf("SHA-256 %x…", sum[:4])) || !strings.Contains(why, "aivis plugin register") || strings.Contains(why, binDir) {
		t.Errorf("why it does not run: %q", why)
	}
	if w := text(card + ` .waiting`); !strings.Contains(w, "deliveries wait") {
		t.Errorf("what becomes of its deliveries: %q", w)
	}

	cli(t, dir, nil, "plugin", "register", bin)
	deadline := time.Now().Add(30 * time.Second)
	for {
		run("connectors page again", chromedp.Navigate(s.URL+"/connectors"), chromedp.WaitVisible(card, chromedp.ByQuery))
		if text(card+` .state`) == "running" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the connector not shown running within 30 s of its registration: %q", text(card))
		}
		time.Sleep(500 * time.Millisecond)
	}
	if got := text(card + ` code`); got != fmt.Sprintf("%x", sum[:4]) {
		t.Errorf("the build shown: %q", got)
	}
	var waiting int
	run("no wait shown", chromedp.Evaluate(`document.querySelectorAll("#connector-partner-chat .waiting").length`, &waiting))
	if waiting != 0 {
		t.Error("a running connector is said to make its deliveries wait")
	}
}
