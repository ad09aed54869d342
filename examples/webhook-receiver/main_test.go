package main

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aivis/aivis/webhook"
)

func deliver(t *testing.T, url, secret, id, body string) int {
	t.Helper()
	s, err := webhook.NewSigner(secret)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	s.Headers(req.Header, id, time.Now(), []byte(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestReceiver(t *testing.T) {
	secret, _ := webhook.NewSecret()
	var mu sync.Mutex
	var got []string
	h, err := newHandler(secret, slog.New(slog.NewTextHandler(io.Discard, nil)), func(ev webhook.Event) {
		mu.Lock()
		got = append(got, ev.ID)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	test := `{"id":"evt_1","event":"webhook_test","timestamp":"2026-11-22T10:00:00Z","data":{"webhook_id":"wh_1"}}`
	change := `{"id":"evt_2","event":"ai_visibility_change","timestamp":"2026-11-22T10:00:00Z","data":{"domain":"example.com"}}`
	if code := deliver(t, srv.URL, secret, "evt_1", test); code != 200 {
		t.Fatalf("setup test payload: %d", code)
	}
	if code := deliver(t, srv.URL, secret, "evt_2", change); code != 200 {
		t.Fatalf("event: %d", code)
	}
	if code := deliver(t, srv.URL, secret, "evt_2", change); code != 200 {
		t.Fatalf("a repeated delivery must still get 200: %d", code)
	}
	other, _ := webhook.NewSecret()
	if code := deliver(t, srv.URL, other, "evt_3", change); code != http.StatusUnauthorized {
		t.Fatalf("a delivery signed with another secret: %d", code)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(got, ",") != "evt_1,evt_2" {
		t.Fatalf("handled %v, want each event once", got)
	}
}

func TestRun(t *testing.T) {
	secret, _ := webhook.NewSecret()
	if err := run(context.Background(), nil, "", io.Discard); err == nil {
		t.Fatal("ran without a secret")
	}
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"-addr", "127.0.0.1:0"}, secret, pw) }()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, pr)
	addr := strings.TrimSpace(strings.TrimPrefix(line, "listening on "))
	if code := deliver(t, "http://"+addr+"/", secret, "evt_9", `{"id":"evt_9","event":"webhook_test","timestamp":"2026-11-22T10:00:00Z","data":{}}`); code != 200 {
		t.Fatalf("delivery to the running receiver: %d", code)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestSeenIsBounded(t *testing.T) {
	s := newSeen(2)
	for _, id := range []string{"a", "b", "c"} {
		if !s.add(id) {
			t.Fatalf("%s not new", id)
		}
	}
	if s.add("c") || !s.add("a") {
		t.Fatal("the oldest id should be forgotten, the newest remembered")
	}
}
