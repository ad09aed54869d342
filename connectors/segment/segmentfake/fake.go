// Package segmentfake is a local stand-in for Segment's HTTP Tracking API
// (/v1/track and /v1/batch with Basic auth by write key) and for
// RudderStack's compatible one: 200 for everything but invalid JSON, an
// oversized body or a call without a user (400); calls past 32 KB or past
// 2,500 in a batch are dropped while answering 200; messageId
// de-duplicates; 429 with Retry-After when throttled.
package segmentfake

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/aivis/aivis/connectors/internal/fakekit"
)

// WriteKey is the key the fake accepts.
const WriteKey = "wk_fake"

// Call is one track call the fake kept.
type Call struct {
	Type, UserID, AnonymousID, Event, MessageID, Timestamp string
	Properties                                             map[string]any
}

// Fake is the fake Segment.
type Fake struct {
	*fakekit.Server
	mu         sync.Mutex
	calls      []Call
	seen       map[string]bool
	Duplicates int // calls dropped as repeats of a messageId
	Dropped    int // calls dropped for their size or the batch's length
	// Rudder makes the fake answer as RudderStack does: 200 text "OK".
	Rudder bool
}

// New starts the fake.
func New() *Fake {
	f := &Fake{seen: map[string]bool{}}
	f.Server = fakekit.New(f.handle)
	return f
}

// Received are the calls kept, de-duplicated.
func (f *Fake) Received() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Call(nil), f.calls...)
}

func (f *Fake) handle(w http.ResponseWriter, r *http.Request, body []byte) {
	if r.Method != http.MethodPost || (r.URL.Path != "/v1/track" && r.URL.Path != "/v1/batch") {
		http.NotFound(w, r)
		return
	}
	auth, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Basic ")
	key, _ := base64.StdEncoding.DecodeString(auth)
	if string(key) != WriteKey+":" {
		fail(w, http.StatusUnauthorized, "Invalid write key")
		return
	}
	if len(body) > 500<<10 {
		fail(w, http.StatusBadRequest, "Request body too large")
		return
	}
	var raws []json.RawMessage
	if r.URL.Path == "/v1/batch" {
		var b struct {
			Batch []json.RawMessage `json:"batch"`
		}
		if json.Unmarshal(body, &b) != nil {
			fail(w, http.StatusBadRequest, "Invalid JSON")
			return
		}
		raws = b.Batch
	} else {
		raws = []json.RawMessage{body}
	}
	var calls []Call
	dropped := 0
	for i, raw := range raws {
		var c Call
		var m struct {
			Type        string         `json:"type"`
			UserID      string         `json:"userId"`
			AnonymousID string         `json:"anonymousId"`
			Event       string         `json:"event"`
			MessageID   string         `json:"messageId"`
			Timestamp   string         `json:"timestamp"`
			Properties  map[string]any `json:"properties"`
		}
		if json.Unmarshal(raw, &m) != nil {
			fail(w, http.StatusBadRequest, "Invalid JSON")
			return
		}
		if m.UserID == "" && m.AnonymousID == "" {
			fail(w, http.StatusBadRequest, "userId or anonymousId is required")
			return
		}
		if len(raw) > 32<<10 || i >= 2500 {
			dropped++
			continue
		}
		c = Call{Type: m.Type, UserID: m.UserID, AnonymousID: m.AnonymousID, Event: m.Event, MessageID: m.MessageID,
			Timestamp: m.Timestamp, Properties: m.Properties}
		if c.Type == "" {
			c.Type = "track"
		}
		calls = append(calls, c)
	}
	f.mu.Lock()
	f.Dropped += dropped
	for _, c := range calls {
		if c.MessageID != "" && f.seen[c.MessageID] {
			f.Duplicates++
			continue
		}
		f.seen[c.MessageID] = true
		f.calls = append(f.calls, c)
	}
	rudder := f.Rudder
	f.mu.Unlock()
	if rudder {
		fmt.Fprint(w, "OK")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, `{"success":true}`)
}

func fail(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"success":false,"message":%q}`, msg)
}
