// Command webhook-receiver receives aivis webhook deliveries. It verifies
// each one (Standard Webhooks signatures, with github.com/aivis/aivis/webhook),
// answers 200 to valid deliveries, the webhook_test sent when a webhook is
// set up included, and 401 to those that do not verify, logs each event's
// kind and id, and handles each event once although deliveries are at
// least once (a retry or a redelivery carries the same webhook-id).
//
//	AIVIS_WEBHOOK_SECRET=whsec_... go run ./examples/webhook-receiver -addr :8080
//	AIVIS_WEBHOOK_SECRET=whsec_... go run ./examples/webhook-receiver -addr :8443 -tls-cert cert.pem -tls-key key.pem
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

// run serves until ctx ends. It prints "listening on ADDR" before anything
// else, then a log line per delivery.
func run(ctx context.Context, args []string, secret string, out io.Writer) error {
	fs := flag.NewFlagSet("webhook-receiver", flag.ContinueOnError)
	fs.SetOutput(out)
	addr := fs.String("addr", ":8080", "listen address")
	certFile := fs.String("tls-cert", "", "serve HTTPS with this certificate (PEM; with -tls-key)")
	keyFile := fs.String("tls-key", "", "the certificate's private key (PEM)")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return nil
	} else if err != nil {
		return err
	}
	if (*certFile == "") != (*keyFile == "") {
		return errors.New("-tls-cert and -tls-key go together")
	}
	if secret == "" {
		return errors.New("set AIVIS_WEBHOOK_SECRET to the webhook's whsec_ secret")
	}
	log := slog.New(slog.NewTextHandler(out, nil))
	h, err := newHandler(secret, log, nil)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "listening on %s\n", ln.Addr())
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	if *certFile != "" {
		err = srv.ServeTLS(ln, *certFile, *keyFile)
	} else {
		err = srv.Serve(ln)
	}
	if !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// newHandler returns the receiver: it verifies each delivery with secret
// (webhook.Verifier.Handler answers 400 or 401 to those that fail) and
// passes each event to act once; act may be nil. Put your own processing
// in act. An error from it answers 500, and the delivery is handled again
// when aivis retries it. act should be quick (aivis waits 15 s for the
// answer): hand slow work to a queue.
func newHandler(secret string, log *slog.Logger, act func(webhook.Event) error) (http.Handler, error) {
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
		id := r.Header.Get(webhook.HeaderID)
		// A repeat gets 200 too: otherwise aivis would try it again.
		if !seen.add(id) {
			log.Info("duplicate delivery ignored", "webhook_id", id, "event", ev.Event)
			w.WriteHeader(http.StatusOK)
			return
		}
		if ev.Event == "webhook_test" {
			log.Info("setup test received", "webhook_id", id, "id", ev.ID)
		} else {
			log.Info("event", "event", ev.Event, "webhook_id", id, "id", ev.ID, "timestamp", ev.Timestamp, "data", string(ev.Data))
		}
		if act != nil {
			if err := act(ev); err != nil {
				seen.forget(id)
				log.Error("handling failed; aivis will retry", "webhook_id", id, "event", ev.Event, "err", err)
				http.Error(w, "try again later", http.StatusInternalServerError)
				return
			}
		}
		w.WriteHeader(http.StatusOK)
	})), nil
}

// seen remembers the last n delivery ids, in memory: a receiver that must
// not repeat work across restarts keeps them in its database instead.
type seen struct {
	mu    sync.Mutex
	ids   map[string]int // id -> its slot in ring
	ring  []string       // the ids, oldest at next once full
	next  int
	limit int
}

func newSeen(n int) *seen {
	n = max(n, 1)
	return &seen{ids: make(map[string]int, n), ring: make([]string, 0, n), limit: n}
}

// add reports whether id is new, and remembers it, forgetting the oldest
// id when full.
func (s *seen) add(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.ids[id]; ok {
		return false
	}
	slot := len(s.ring)
	if slot < s.limit {
		s.ring = append(s.ring, id)
	} else {
		slot = s.next
		if old := s.ring[slot]; s.ids[old] == slot {
			delete(s.ids, old)
		}
		s.ring[slot] = id
		s.next = (s.next + 1) % s.limit
	}
	s.ids[id] = slot
	return true
}

// forget removes id, so that its next delivery is handled.
func (s *seen) forget(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.ids, id)
}
