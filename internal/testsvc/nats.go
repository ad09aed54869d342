package testsvc

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

var natsServer = &service{
	name:     "NATS",
	env:      "AIVIS_TEST_NATS_URL",
	loopback: "nats://127.0.0.1:4222",
	probe:    natsProbe,
	start:    startNATS,
	clean:    natsDelete,
}

// NATS returns the URL of a NATS server with JetStream and a prefix for
// t alone, to begin the names of its streams, subjects and consumers; the
// streams whose names hold the prefix (a key-value bucket's KV_ stream
// among them) are deleted when t ends.
func NATS(t testing.TB) (url, prefix string) {
	t.Helper()
	return natsServer.withPrefix(t)
}

func natsDelete(ctx context.Context, url, prefix string) error {
	nc, js, err := natsConnect(ctx, url)
	if err != nil {
		return err
	}
	defer nc.Close()
	// All the names first: deleting while listing would shift the pages.
	var names []string
	list := js.StreamNames(ctx)
	for name := range list.Name() {
		if strings.Contains(name, prefix) {
			names = append(names, name)
		}
	}
	if err := list.Err(); err != nil {
		return err
	}
	for _, name := range names {
		if err := js.DeleteStream(ctx, name); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			return err
		}
	}
	return nil
}

func natsConnect(ctx context.Context, url string) (*nats.Conn, jetstream.JetStream, error) {
	timeout := 5 * time.Second
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	nc, err := nats.Connect(url, nats.Timeout(timeout), nats.NoReconnect())
	if err != nil {
		return nil, nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, js, nil
}

// natsProbe also asks for JetStream, which a NATS server may lack.
func natsProbe(ctx context.Context, url string) error {
	nc, js, err := natsConnect(ctx, url)
	if err != nil {
		return err
	}
	defer nc.Close()
	if _, err := js.AccountInfo(ctx); err != nil {
		if errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) {
			return errors.New("the server answers but has no JetStream")
		}
		return err
	}
	return nil
}

func startNATS(s *service) (string, error) {
	bin, err := install("NATS", "nats-server", func() string { return lookup("nats-server", "/usr/sbin", "/usr/bin") })
	if err != nil {
		return "", err
	}
	return s.runPrivate(func(port int) (spec, string, error) {
		dir, err := privateDir("nats")
		return spec{
			Argv: []string{bin, "-a", "127.0.0.1", "-p", strconv.Itoa(port), "-js", "-sd", filepath.Join(dir, "jetstream")},
			Dir:  dir,
			Stop: syscall.SIGTERM,
		}, fmt.Sprintf("nats://127.0.0.1:%d", port), err
	})
}
