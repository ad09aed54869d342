package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/aivis/aivis/connectors/internal/kit"
	"github.com/aivis/aivis/plugins/sdk"
)

// settings of a workflow connection: the trigger's URL and the
// authentication an n8n Webhook node may require.
type settings struct {
	Platform    string `json:"platform"`
	WebhookURL  string `json:"webhook_url"`
	Auth        string `json:"auth"`
	Username    string `json:"username"`
	Password    string `json:"password"`
	HeaderName  string `json:"header_name"`
	HeaderValue string `json:"header_value"`
	Token       string `json:"token"`
}

var schema = json.RawMessage(`{
  "type": "object",
  "title": "Make or n8n",
  "required": ["webhook_url"],
  "properties": {
    "platform": {"type": "string", "enum": ["make", "n8n", "other"], "default": "other", "title": "Platform"},
    "webhook_url": {"type": "string", "format": "uri", "title": "Webhook URL",
      "description": "Make: https://hook.{region}.make.com/...; n8n: the production URL {host}/webhook/{path} of an active workflow."},
    "auth": {"type": "string", "enum": ["none", "basic", "header", "bearer"], "default": "none", "title": "Authentication"},
    "username": {"type": "string", "title": "User (basic)"},
    "password": {"type": "string", "title": "Password (basic)"},
    "header_name": {"type": "string", "title": "Header name (header)"},
    "header_value": {"type": "string", "title": "Header value (header)"},
    "token": {"type": "string", "title": "Token (bearer, e.g. an n8n JWT)"}
  },
  "additionalProperties": false
}`)

type connector struct{ client *http.Client }

func (c *connector) Info() sdk.Info {
	return sdk.Info{Name: "workflow", Kind: "workflow", Version: "1.0.0", DisplayName: "Make / n8n",
		Description:    "Starts a Make scenario or an n8n workflow with each aivis event.",
		SettingsSchema: schema, SecretFields: []string{"webhook_url", "password", "header_value", "token"},
		DestinationFields: []string{"webhook_url"}, MaxBatch: 1}
}

func parse(raw json.RawMessage) (settings, kit.Fields) {
	var s settings
	if f := kit.Decode(raw, &s); f != nil {
		return s, f
	}
	var f kit.Fields
	f.OneOf("platform", s.Platform, "make", "n8n", "other")
	f.URL("webhook_url", s.WebhookURL, true, false)
	if s.Platform == "n8n" && strings.Contains(s.WebhookURL, "/webhook-test/") {
		f.Add("webhook_url", "is n8n's test URL, which listens only while the editor waits: use the production URL (/webhook/...) of the active workflow")
	}
	f.OneOf("auth", s.Auth, "none", "basic", "header", "bearer")
	need := func(field, v string) {
		if v == "" {
			f.Add(field, "is required with %s authentication", s.Auth)
		}
	}
	switch s.Auth {
	case "basic":
		need("username", s.Username)
		need("password", s.Password)
		if strings.Contains(s.Username, ":") {
			f.Add("username", "must not contain a colon")
		}
	case "header":
		need("header_name", s.HeaderName)
		need("header_value", s.HeaderValue)
		if s.HeaderName != "" && !validHeaderName(s.HeaderName) {
			f.Add("header_name", "must be an HTTP header name")
		}
	case "bearer":
		need("token", s.Token)
	}
	return s, f
}

func validHeaderName(n string) bool {
	for _, r := range n {
		if r > 126 || r <= 32 || strings.ContainsRune(`()<>@,;:\"/[]?={}`, r) {
			return false
		}
	}
	return http.CanonicalHeaderKey(n) != "Host" && http.CanonicalHeaderKey(n) != "Content-Length"
}

func (c *connector) ValidateSettings(_ context.Context, raw json.RawMessage) []sdk.FieldError {
	_, f := parse(raw)
	return f
}

// Deliver POSTs each event's JSON body to the trigger.
func (c *connector) Deliver(ctx context.Context, raw json.RawMessage, evs []sdk.Event) []sdk.Result {
	s, f := parse(raw)
	if len(f) > 0 {
		return kit.All(len(evs), sdk.FailedResult(f.Err()))
	}
	who := map[string]string{"make": "Make", "n8n": "n8n"}[s.Platform]
	if who == "" {
		who = "the workflow"
	}
	out := make([]sdk.Result, len(evs))
	for i, ev := range evs {
		h := http.Header{"Idempotency-Key": {ev.ID}, "X-Aivis-Event": {ev.Kind}}
		switch s.Auth {
		case "basic":
			req, _ := http.NewRequest(http.MethodPost, "/", nil)
			req.SetBasicAuth(s.Username, s.Password)
			h.Set("Authorization", req.Header.Get("Authorization"))
		case "header":
			h.Set(s.HeaderName, s.HeaderValue)
		case "bearer":
			h.Set("Authorization", "Bearer "+s.Token)
		}
		r, err := kit.Do(ctx, c.client, http.MethodPost, s.WebhookURL, h, ev.Body)
		if err != nil {
			out[i] = kit.Unreachable(who, err)
			continue
		}
		out[i] = result(r, who)
	}
	return out
}

// result reads the trigger's answer: beyond the usual, n8n's 404 for a
// workflow that is not active and 401/403 for refused credentials say
// what to fix.
func result(r kit.Response, who string) sdk.Result {
	switch {
	case r.Status == http.StatusNotFound && strings.Contains(string(r.Body), "not registered"):
		return sdk.FailedResult(fmt.Sprintf("%s: the webhook is not registered: activate the workflow (%s)", who, r.Snippet()))
	case r.Status == http.StatusUnauthorized || r.Status == http.StatusForbidden:
		return sdk.FailedResult(fmt.Sprintf("%s refused the credentials (%d): check the authentication settings", who, r.Status))
	case r.Status == http.StatusRequestEntityTooLarge:
		return sdk.FailedResult(fmt.Sprintf("%s: the event is larger than the trigger takes (413)", who))
	}
	return kit.ByStatus(r, who)
}
