// Command webhook-receiver receives aivis webhook deliveries: it verifies
// each signature (Standard Webhooks), answers 200 to valid deliveries (the
// webhook_test sent on setup included) and 401 to the rest, and handles
// each event once although deliveries are at least once.
//
//	AIVIS_WEBHOOK_SECRET=whsec_... go run ./examples/webhook-receiver -addr :8080
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/aivis/aivis/webhook"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv("AIVIS_WEBHOOK_SECRET"), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "webhook-receiver:", err)
		os.Exit(1)
	}
}

// run serves until ctx ends; it prints "listening on ADDR" first.
func run(ctx context.Context, args []string, secret string, out io.Writer) error {
	fs := flag.NewFlagSet("webhook-receiver", flag.ContinueOnError)
	addr := fs.String("addr", ":8080", "listen address")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if secret == "" {
		return errors.New("set AIVIS_WEBHOOK_SECRET to the webhook's whsec_ secret")
	}
	h, err := newHandler(secret, slog.New(slog.NewTextHandler(out, nil)), nil)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "listening on %s\n", ln.Addr())
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// handle is what the receiver does with each new event.
type handle func(webhook.Event)

// newHandler verifies deliveries and passes each event to act once.
func newHandler(secret string, log *slog.Logger, act handle) (http.Handler, error) {
	v, err := webhook.NewVerifier(secret)
	if err != nil {
		return nil, err
	}
	seen := newSeen(10_000)
	return v.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev webhook.Event
		if err := json.NewDecoder(r.Body).Decode(&ev); err != nil {
			http.Error(w, "not an aivis event", http.StatusBadRequest)
			return
		}
		// Answer 200 to a repeat too, or aivis would try it again.
		if !seen.add(r.Header.Get(webhook.HeaderID)) {
			log.Info("duplicate delivery ignored", "id", ev.ID, "event", ev.Event)
			w.WriteHeader(http.StatusOK)
			return
		}
		log.Info("event", "id", ev.ID, "event", ev.Event, "data", string(ev.Data))
		if act != nil {
			act(ev)
		}
		w.WriteHeader(http.StatusOK)
	})), nil
}

// seen remembers the last n delivery ids.
type seen struct {
	mu    sync.Mutex
	ids   map[string]struct{}
	order []string
	n     int
}

func newSeen(n int) *seen { return &seen{ids: make(map[string]struct{}), n: n} }

// add reports whether id is new, and remembers it.
func (s *seen) add(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.ids[id]; ok {
		return false
	}
	if len(s.order) == s.n {
		delete(s.ids, s.order[0])
		s.order = s.order[1:]
	}
	s.ids[id] = struct{}{}
	s.order = append(s.order, id)
	return true
}
