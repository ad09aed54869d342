// Package ga4fake is a local stand-in for GA4's Measurement Protocol:
// /mp/collect answers 204 to everything and silently drops what is
// malformed; /debug/mp/collect answers 200 with the validation messages.
package ga4fake

import (
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/aivis/aivis/connectors/ga4/mp"
	"github.com/aivis/aivis/connectors/internal/fakekit"
)

// MeasurementID and APISecret are the stream the fake knows.
const (
	MeasurementID = "G-FAKE1234"
	APISecret     = "fake-secret"
)

// Hit is one event GA4 kept.
type Hit struct {
	ClientID        string
	TimestampMicros int64
	mp.Event
}

// Fake is the fake GA4.
type Fake struct {
	*fakekit.Server
	mu      sync.Mutex
	got     []Hit
	Dropped int // payloads dropped without a word
}

// New starts the fake.
func New() *Fake {
	f := &Fake{}
	f.Server = fakekit.New(f.handle)
	return f
}

// Received are the events kept.
func (f *Fake) Received() []Hit {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Hit(nil), f.got...)
}

func (f *Fake) handle(w http.ResponseWriter, r *http.Request, body []byte) {
	if r.Method != http.MethodPost || (r.URL.Path != "/mp/collect" && r.URL.Path != "/debug/mp/collect") {
		http.NotFound(w, r)
		return
	}
	var p mp.Payload
	var ms []mp.Message
	if err := json.Unmarshal(body, &p); err != nil {
		ms = []mp.Message{{Description: "Unable to parse the payload: " + err.Error(), ValidationCode: "VALUE_INVALID"}}
	} else {
		ms = mp.Validate(p, body, time.Now())
	}
	q := r.URL.Query()
	known := q.Get("measurement_id") == MeasurementID && q.Get("api_secret") == APISecret
	if r.URL.Path == "/debug/mp/collect" {
		// The validation server checks the payload, not the secret.
		if ms == nil {
			ms = []mp.Message{}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"validationMessages": ms})
		return
	}
	f.mu.Lock()
	if len(ms) > 0 || !known {
		f.Dropped++
	} else {
		for _, e := range p.Events {
			f.got = append(f.got, Hit{ClientID: p.ClientID, TimestampMicros: p.TimestampMicros, Event: e})
		}
	}
	f.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}
