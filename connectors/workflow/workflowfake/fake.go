// Package workflowfake is a local stand-in for the webhook triggers of
// Make (custom webhooks, any JSON up to 5 MB, 200 "Accepted") and n8n
// (Webhook nodes at /webhook/{path}, optional Basic, header or JWT auth,
// 200 {"message":"Workflow was started"}, 404 for a path no active
// workflow listens on, payloads up to 16 MB).
package workflowfake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/aivis/aivis/connectors/internal/fakekit"
)

// Auth is what an n8n Webhook node requires; the zero value is none.
type Auth struct {
	User, Password          string // basic
	HeaderName, HeaderValue string // header
	Token                   string // bearer (JWT)
}

// Run is one payload that started a scenario or workflow.
type Run struct {
	Platform, Hook string
	Payload        map[string]any
}

// Fake is the fake Make and n8n.
type Fake struct {
	*fakekit.Server
	mu        sync.Mutex
	makeHooks map[string]bool
	n8n       map[string]Auth
	got       []Run
}

// New starts the fake.
func New() *Fake {
	f := &Fake{makeHooks: map[string]bool{}, n8n: map[string]Auth{}}
	f.Server = fakekit.New(f.handle)
	return f
}

// MakeHook makes a Make custom webhook and returns its URL.
func (f *Fake) MakeHook(token string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.makeHooks[token] = true
	return f.URL() + "/make/" + token
}

// N8nWebhook activates an n8n workflow listening on path with auth and
// returns its production URL.
func (f *Fake) N8nWebhook(path string, auth Auth) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n8n[path] = auth
	return f.URL() + "/webhook/" + path
}

// Deactivate stops the n8n workflow on path.
func (f *Fake) Deactivate(path string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.n8n, path)
}

// Received are the runs started.
func (f *Fake) Received() []Run {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Run(nil), f.got...)
}

func (f *Fake) handle(w http.ResponseWriter, r *http.Request, body []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var payload map[string]any
	if token, ok := strings.CutPrefix(r.URL.Path, "/make/"); ok {
		switch {
		case !f.makeHooks[token]:
			w.WriteHeader(http.StatusGone)
			fmt.Fprint(w, "There is no scenario listening for this webhook.")
		case len(body) > 5<<20:
			w.WriteHeader(http.StatusRequestEntityTooLarge)
		case json.Unmarshal(body, &payload) != nil:
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, "Invalid JSON.")
		default:
			f.got = append(f.got, Run{Platform: "make", Hook: token, Payload: payload})
			fmt.Fprint(w, "Accepted")
		}
		return
	}
	path, ok := strings.CutPrefix(r.URL.Path, "/webhook/")
	auth, active := f.n8n[path]
	w.Header().Set("Content-Type", "application/json")
	switch {
	case !ok || !active:
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, `{"code":404,"message":"The requested webhook \"POST %s\" is not registered.","hint":"The workflow must be active for a production URL to run successfully."}`, path)
	case !authorized(r, auth):
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `{"code":403,"message":"Authorization data is wrong!"}`)
	case len(body) > 16<<20:
		w.WriteHeader(http.StatusRequestEntityTooLarge)
	case json.Unmarshal(body, &payload) != nil:
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"code":400,"message":"Invalid JSON"}`)
	default:
		f.got = append(f.got, Run{Platform: "n8n", Hook: path, Payload: payload})
		fmt.Fprint(w, `{"message":"Workflow was started"}`)
	}
}

func authorized(r *http.Request, a Auth) bool {
	switch {
	case a.User != "":
		u, p, ok := r.BasicAuth()
		return ok && u == a.User && p == a.Password
	case a.HeaderName != "":
		return r.Header.Get(a.HeaderName) == a.HeaderValue
	case a.Token != "":
		return r.Header.Get("Authorization") == "Bearer "+a.Token
	}
	return true
}
