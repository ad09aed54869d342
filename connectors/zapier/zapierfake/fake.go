// Package zapierfake is a local stand-in for Zapier's hook receivers: REST
// Hook target URLs, which answer 410 Gone once the Zap is turned off, and
// Catch Hook URLs, throttled past a request rate with 429.
package zapierfake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aivis/aivis/connectors/internal/fakekit"
)

// Hit is one payload a hook accepted.
type Hit struct {
	Hook    string
	Payload map[string]any
}

// Fake is the fake Zapier.
type Fake struct {
	*fakekit.Server
	mu    sync.Mutex
	hooks map[string]bool // path -> live
	got   []Hit
	times []time.Time
	// PerSecond, when set, is how many requests a second are taken before
	// 429 (Zapier: 30).
	PerSecond int
}

// New starts a fake Zapier.
func New() *Fake {
	f := &Fake{hooks: map[string]bool{}}
	f.Server = fakekit.New(f.handle)
	return f
}

// Hook makes a live hook and returns its URL: a REST Hook target
// (/hooks/standard/...) or a Catch Hook (/hooks/catch/...).
func (f *Fake) Hook(kind, id string) string {
	path := fmt.Sprintf("/hooks/%s/%s/", kind, id)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hooks[path] = true
	return f.URL() + path
}

// TurnOff makes a hook gone, as when its Zap is turned off or deleted.
func (f *Fake) TurnOff(url string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hooks[strings.TrimPrefix(url, f.URL())] = false
}

// Received are the accepted payloads.
func (f *Fake) Received() []Hit {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Hit(nil), f.got...)
}

func (f *Fake) handle(w http.ResponseWriter, r *http.Request, body []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	live, known := f.hooks[r.URL.Path]
	var payload map[string]any
	switch {
	case r.Method != http.MethodPost || !known:
		http.NotFound(w, r)
	case !live:
		w.WriteHeader(http.StatusGone)
		fmt.Fprint(w, `{"status":"error","message":"this hook is no longer active"}`)
	case f.throttled():
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprint(w, `{"status":"error","message":"rate limit exceeded"}`)
	case json.Unmarshal(body, &payload) != nil:
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"status":"error","message":"invalid JSON"}`)
	default:
		f.got = append(f.got, Hit{Hook: r.URL.Path, Payload: payload})
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"status":"success","attempt":"%d","id":"%d","request_id":"%d"}`, len(f.got), len(f.got), time.Now().UnixNano())
	}
}

func (f *Fake) throttled() bool {
	if f.PerSecond == 0 {
		return false
	}
	now := time.Now()
	keep := f.times[:0]
	for _, t := range f.times {
		if now.Sub(t) < time.Second {
			keep = append(keep, t)
		}
	}
	f.times = keep
	if len(f.times) >= f.PerSecond {
		return true
	}
	f.times = append(f.times, now)
	return false
}
