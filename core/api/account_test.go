package api

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestExportOutlivesTheWriteTimeout: an export whose lines come for
// longer than the server's WriteTimeout arrives whole, its writes moving
// the write deadline on.
func TestExportOutlivesTheWriteTimeout(t *testing.T) {
	defer func(w time.Duration) { exportWindow = w }(exportWindow)
	exportWindow = 300 * time.Millisecond
	const lines = 16
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &streamStart{w: w, contentType: "application/x-ndjson", disposition: `attachment; filename="export.jsonl"`}
		for i := range lines {
			time.Sleep(60 * time.Millisecond) // a slow read of the store
			fmt.Fprintf(sw, "{\"n\":%d}\n", i)
		}
	}))
	srv.Config.WriteTimeout = exportWindow
	srv.Start()
	defer srv.Close()
	res, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if n := bytes.Count(b, []byte("\n")); err != nil || n != lines {
		t.Errorf("got %d lines (%v) over %v, want %d: %s", n, err, lines*60*time.Millisecond, lines, b)
	}
	if ct := res.Header.Get("Content-Type"); ct != "application/x-ndjson" {
		t.Errorf("Content-Type %q", ct)
	}
}
