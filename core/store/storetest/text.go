package storetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/core/store"
)

// Text (store's Text): each string field of each contract, written with a
// NUL, with bytes that are not UTF-8, with the text people write (tabs,
// line feeds, accents, other scripts, emoji) and, of free text, a
// megabyte, is kept exactly or refused alike on every engine: a NUL and
// bytes that are not UTF-8 are refused (store.IsInvalidText) with nothing
// of their write kept; what may hold any bytes keeps them all. Ids,
// states and hashes are left out: their services make them. The words of
// a list that its services make without spaces (scopes, event kinds, a
// connection's domains and the names of its secret settings) are written
// with the refused values alone.

// textValue is one value written into every field.
type textValue struct {
	name, v string
	refused bool // refused, but where the field holds any bytes
	big     bool // written only into free text
	spaces  bool // not written into words
}

var textValues = []textValue{
	{name: "a NUL", v: "before\x00after", refused: true},
	{name: "bytes that are not UTF-8", v: "before\xff\xfeafter", refused: true},
	{name: "people's text", v: "tab\tline\nfeed\r\n, é, 日本語, 🚀 and a real \uFFFD", spaces: true},
	{name: "a megabyte", v: megabyte(), big: true},
}

// megabyte is a megabyte of text of several scripts, cut on a character.
func megabyte() string {
	s := strings.Repeat("aivis ü 日本 🚀 ", 1<<20/20)
	for len(s) > 1<<20 {
		s = s[:len(s)-1]
	}
	return strings.ToValidUTF8(s, "")
}

// textField is one string field of a record.
type textField struct {
	name     string
	big      bool // free text: a megabyte is kept
	word     bool // a word of a list, without spaces
	anyBytes bool // any bytes are kept
	// update: set writes the field of a record it made first with a clean
	// value (before), which a refusal leaves; otherwise set makes the
	// record with the field, and a refusal leaves no record.
	update bool
	before string
	// set writes v into the field of record n; get reads the field of
	// record n (store.ErrNotFound when there is none).
	set func(t *testing.T, s store.Store, n int, v string) error
	get func(s store.Store, n int) (string, error)
}

func testTextKeptOrRefused(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	owners(t, s)
	n := 0
	for _, f := range textFields() {
		for _, v := range textValues {
			if v.big && !f.big || v.spaces && f.word {
				continue
			}
			n++
			err := f.set(t, s, n, v.v)
			got, gerr := f.get(s, n)
			switch {
			case v.refused && !f.anyBytes:
				if !store.IsInvalidText(err) {
					t.Errorf("%s with %s: the write answered %v, not a refusal of its text", f.name, v.name, err)
				}
				switch {
				case f.update && (gerr != nil || got != f.before):
					t.Errorf("%s with %s, refused: the field reads %.40q (%v), not %q as before", f.name, v.name, got, gerr, f.before)
				case !f.update && !errors.Is(gerr, store.ErrNotFound):
					t.Errorf("%s with %s, refused: its record reads %.40q (%v), not ErrNotFound", f.name, v.name, got, gerr)
				}
			case err != nil:
				t.Errorf("%s with %s: %v", f.name, v.name, err)
			case gerr != nil || got != v.v:
				t.Errorf("%s with %s: it reads back %d bytes %.40q (%v), not the %d written", f.name, v.name, len(got), got, gerr, len(v.v))
			}
		}
	}
}

// A read that compares with text no engine keeps is refused alike.
func testTextRefusedInReads(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	owners(t, s)
	answersScan(t, s, "scan_q", "acct_1")
	insertAnswers(t, s, scanAnswers("scan_q", 3, t0))
	for _, v := range textValues {
		_, _, err := s.ListScanAnswers(ctx, store.AnswerFilter{AccountID: "acct_1", ScanID: "scan_q", Query: v.v})
		if v.refused && !store.IsInvalidText(err) {
			t.Errorf("ListScanAnswers searching for %s: %v, not a refusal of its text", v.name, err)
		}
		if !v.refused && err != nil {
			t.Errorf("ListScanAnswers searching for %s: %v", v.name, err)
		}
		_, err = s.UserByEmail(ctx, v.v)
		if v.refused && !store.IsInvalidText(err) {
			t.Errorf("UserByEmail of %s: %v, not a refusal of its text", v.name, err)
		}
	}
}

// id is the id of record n of a kind.
func id(kind string, n int) string { return fmt.Sprintf("%s_t%d", kind, n) }

func textFields() []textField {
	var fs []textField
	add := func(f ...textField) { fs = append(fs, f...) }

	// Accounts and keys.
	add(textField{name: "Account.Name", big: true,
		set: func(_ *testing.T, s store.Store, n int, v string) error {
			return s.CreateAccount(ctx, store.Account{ID: id("acct", n), Name: v, Tier: "starter", Type: store.AccountStandard, CreatedAt: t0})
		},
		get: func(s store.Store, n int) (string, error) {
			a, err := s.Account(ctx, id("acct", n))
			return a.Name, err
		}})
	add(textField{name: "Client.Name", big: true,
		set: func(_ *testing.T, s store.Store, n int, v string) error {
			return s.CreateClient(ctx, store.Client{ID: id("cli", n), AccountID: "acct_1", Name: v, CreatedAt: t0})
		},
		get: func(s store.Store, n int) (string, error) {
			c, err := s.Client(ctx, "acct_1", id("cli", n))
			return c.Name, err
		}})
	key := func(name string, big bool, field func(*store.Key) *string) textField {
		return textField{name: name, big: big,
			set: func(_ *testing.T, s store.Store, n int, v string) error {
				k := newKey(id("key", n), "acct_1", "", t0)
				*field(&k) = v
				return s.CreateKey(ctx, k)
			},
			get: func(s store.Store, n int) (string, error) {
				k, err := s.Key(ctx, id("key", n))
				return *field(&k), err
			}}
	}
	add(key("Key.Name", true, func(k *store.Key) *string { return &k.Name }),
		key("Key.Hint", false, func(k *store.Key) *string { return &k.Hint }))
	add(textField{name: "Key.Scopes", word: true,
		set: func(_ *testing.T, s store.Store, n int, v string) error {
			k := newKey(id("key", n), "acct_1", "", t0)
			k.Scopes = []string{"budget:read", v}
			return s.CreateKey(ctx, k)
		},
		get: func(s store.Store, n int) (string, error) {
			k, err := s.Key(ctx, id("key", n))
			return last(k.Scopes), err
		}})

	// Content requests.
	content := func(name string, big, anyBytes bool, field func(*store.ContentRequest, string), read func(store.ContentRequest) string) textField {
		return textField{name: name, big: big, anyBytes: anyBytes,
			set: func(_ *testing.T, s store.Store, n int, v string) error {
				c := contentRequest(id("cr", n), "acct_1", "", t0)
				field(&c, v)
				return s.Update(ctx, func(tx store.Tx) error { return tx.InsertContentRequest(c) })
			},
			get: func(s store.Store, n int) (string, error) {
				c, err := s.ContentRequest(ctx, "acct_1", id("cr", n))
				return read(c), err
			}}
	}
	add(content("ContentRequest.URL", true, false, func(c *store.ContentRequest, v string) { c.URL = v },
		func(c store.ContentRequest) string { return c.URL }),
		content("ContentRequest.Content", true, true, func(c *store.ContentRequest, v string) { c.Content = v },
			func(c store.ContentRequest) string { return c.Content }),
		content("ContentRequest.TargetQueries", true, false, func(c *store.ContentRequest, v string) { c.TargetQueries = []string{"first", v} },
			func(c store.ContentRequest) string { return last(c.TargetQueries) }),
		content("ContentRequest.Metadata", true, false, func(c *store.ContentRequest, v string) { c.Metadata = map[string]string{"note": v} },
			func(c store.ContentRequest) string { return c.Metadata["note"] }),
		content("ContentRequest.Metadata's keys", false, false, func(c *store.ContentRequest, v string) { c.Metadata = map[string]string{v: "x"} },
			func(c store.ContentRequest) string {
				for k := range c.Metadata {
					return k
				}
				return ""
			}),
		content("ContentRequest.Domain", false, false, func(c *store.ContentRequest, v string) { c.Domain = v },
			func(c store.ContentRequest) string { return c.Domain }))
	add(textField{name: "ContentRequest.FailureReason", big: true, update: true,
		set: func(t *testing.T, s store.Store, n int, v string) error {
			c := contentRequest(id("cr", n), "acct_1", "", t0)
			insertRequests(t, s, c)
			c.FailureReason = v
			return s.Update(ctx, func(tx store.Tx) error { return tx.UpdateContentRequest(c, 0) })
		},
		get: func(s store.Store, n int) (string, error) {
			c, err := s.ContentRequest(ctx, "acct_1", id("cr", n))
			return c.FailureReason, err
		}})

	// Readings and monitored domains.
	add(textField{name: "Reading.Source",
		set: func(_ *testing.T, s store.Store, n int, v string) error {
			_, err := s.AddReading(ctx, store.Reading{AccountID: "acct_1", Domain: id("r", n) + ".example", VisibilityScore: 50,
				Sentiment: "neutral", Source: v, MeasuredAt: t0})
			return err
		},
		get: func(s store.Store, n int) (string, error) {
			r, err := s.LatestReading(ctx, store.ReadingFilter{AccountID: "acct_1", Domain: id("r", n) + ".example"})
			return r.Source, err
		}})
	domain := func(name string, field func(*store.MonitoredDomain, string), read func(store.MonitoredDomain) string) textField {
		return textField{name: name, big: true,
			set: func(_ *testing.T, s store.Store, n int, v string) error {
				d := newDomain(id("dom", n), "acct_1", "", id("d", n)+".example", t0)
				field(&d, v)
				return s.Update(ctx, func(tx store.Tx) error { return tx.InsertDomain(d) })
			},
			get: func(s store.Store, n int) (string, error) {
				d, err := s.MonitoredDomain(ctx, "acct_1", id("dom", n))
				return read(d), err
			}}
	}
	add(domain("MonitoredDomain.Brands", func(d *store.MonitoredDomain, v string) { d.Brands = []string{"Acme", v} },
		func(d store.MonitoredDomain) string { return last(d.Brands) }),
		domain("MonitoredDomain.Aliases", func(d *store.MonitoredDomain, v string) { d.Aliases = []string{v} },
			func(d store.MonitoredDomain) string { return last(d.Aliases) }),
		domain("MonitoredDomain.Competitors", func(d *store.MonitoredDomain, v string) { d.Competitors = []string{v} },
			func(d store.MonitoredDomain) string { return last(d.Competitors) }),
		domain("MonitoredDomain.Topics", func(d *store.MonitoredDomain, v string) { d.Topics = []string{v} },
			func(d store.MonitoredDomain) string { return last(d.Topics) }),
		domain("Prompt.Text", func(d *store.MonitoredDomain, v string) { d.Prompts = []store.Prompt{{Text: v, Intent: "custom"}} },
			func(d store.MonitoredDomain) string {
				return promptAt(d, func(p store.Prompt) string { return p.Text })
			}),
		domain("Prompt.Intent", func(d *store.MonitoredDomain, v string) { d.Prompts = []store.Prompt{{Text: "Who?", Intent: v}} },
			func(d store.MonitoredDomain) string {
				return promptAt(d, func(p store.Prompt) string { return p.Intent })
			}))

	// Scans and their answers.
	add(textField{name: "Scan.Error", big: true,
		set: func(_ *testing.T, s store.Store, n int, v string) error {
			sc := newScan(id("scan", n), "acct_1", "", id("dom", n), t0)
			sc.Status, sc.Error, sc.FinishedAt = store.ScanFailed, v, t0
			return s.Update(ctx, func(tx store.Tx) error { return tx.InsertScan(sc) })
		},
		get: func(s store.Store, n int) (string, error) {
			sc, err := s.Scan(ctx, "acct_1", id("scan", n))
			return sc.Error, err
		}})
	add(textField{name: "Scan.Error (UpdateScan)", big: true, update: true,
		set: func(t *testing.T, s store.Store, n int, v string) error {
			sc := newScan(id("scan", n), "acct_1", "", id("dom", n), t0)
			sc.Status, sc.Attempts, sc.Holder, sc.LeaseUntil = store.ScanRunning, 1, "proc_1", t0.Add(time.Minute)
			update(t, s, "InsertScan", func(tx store.Tx) error { return tx.InsertScan(sc) })
			sc.Status, sc.Error, sc.FinishedAt, sc.Holder, sc.LeaseUntil = store.ScanFailed, v, t0, "", time.Time{}
			return s.Update(ctx, func(tx store.Tx) error { return tx.UpdateScan(sc) })
		},
		get: func(s store.Store, n int) (string, error) {
			sc, err := s.Scan(ctx, "acct_1", id("scan", n))
			return sc.Error, err
		}})
	answer := func(name string, big bool, field func(*store.ScanAnswer) *string) textField {
		return textField{name: name, big: big,
			set: func(t *testing.T, s store.Store, n int, v string) error {
				answersScan(t, s, id("scan", n), "acct_1")
				a := scanAnswers(id("scan", n), 1, t0)
				*field(&a[0]) = v
				return s.Update(ctx, func(tx store.Tx) error { return tx.InsertScanAnswers(a) })
			},
			get: func(s store.Store, n int) (string, error) {
				as, _, err := s.ListScanAnswers(ctx, store.AnswerFilter{AccountID: "acct_1", ScanID: id("scan", n)})
				if err != nil || len(as) == 0 {
					return "", cmpErr(err, store.ErrNotFound)
				}
				return *field(&as[0]), nil
			}}
	}
	add(answer("ScanAnswer.Text", true, func(a *store.ScanAnswer) *string { return &a.Text }),
		answer("ScanAnswer.Error", true, func(a *store.ScanAnswer) *string { return &a.Error }),
		answer("ScanAnswer.Prompt", true, func(a *store.ScanAnswer) *string { return &a.Prompt }),
		answer("ScanAnswer.Intent", false, func(a *store.ScanAnswer) *string { return &a.Intent }),
		answer("ScanAnswer.Engine", false, func(a *store.ScanAnswer) *string { return &a.Engine }),
		answer("ScanAnswer.Kind", false, func(a *store.ScanAnswer) *string { return &a.Kind }))

	// Webhooks and connections.
	webhook := func(name string, big bool, make func(n int) store.Webhook, field func(*store.Webhook, string), read func(store.Webhook) string) textField {
		return textField{name: name, big: big, word: !big,
			set: func(_ *testing.T, s store.Store, n int, v string) error {
				w := make(n)
				field(&w, v)
				return s.Update(ctx, func(tx store.Tx) error { return tx.InsertWebhook(w) })
			},
			get: func(s store.Store, n int) (string, error) {
				w, err := s.Webhook(ctx, "acct_1", id("wh", n))
				return read(w), err
			}}
	}
	hook := func(n int) store.Webhook { return newWebhook(id("wh", n), "acct_1", "", "example.com", t0) }
	conn := func(n int) store.Webhook { return newConnection(id("wh", n), "acct_1", "", t0) }
	add(webhook("Webhook.URL", true, hook, func(w *store.Webhook, v string) { w.URL = v }, func(w store.Webhook) string { return w.URL }),
		webhook("Webhook.Events", false, hook, func(w *store.Webhook, v string) { w.Events = []string{v} },
			func(w store.Webhook) string { return last(w.Events) }),
		webhook("Connection.Name", true, conn, func(w *store.Webhook, v string) { w.Name = v }, func(w store.Webhook) string { return w.Name }),
		webhook("Connection.Domains", false, conn, func(w *store.Webhook, v string) { w.Domains = []string{v} },
			func(w store.Webhook) string { return last(w.Domains) }),
		webhook("Connection.SecretFields", false, conn, func(w *store.Webhook, v string) { w.SecretFields = []string{v} },
			func(w store.Webhook) string { return last(w.SecretFields) }))
	add(textField{name: "Webhook.DisabledReason", big: true, update: true,
		set: func(t *testing.T, s store.Store, n int, v string) error {
			w := hook(n)
			insertWebhooks(t, s, w)
			w.Enabled, w.DisabledReason, w.DisabledAt = false, v, t0
			return s.Update(ctx, func(tx store.Tx) error { return tx.UpdateWebhook(w) })
		},
		get: func(s store.Store, n int) (string, error) {
			w, err := s.Webhook(ctx, "acct_1", id("wh", n))
			return w.DisabledReason, err
		}})
	add(textField{name: "the default webhook URL", big: true, update: true,
		set: func(t *testing.T, s store.Store, n int, v string) error {
			newAccount(t, s, id("acctd", n), store.AccountStandard)
			return s.SetDefaultWebhookURL(ctx, id("acctd", n), "", v)
		},
		get: func(s store.Store, n int) (string, error) { return s.DefaultWebhookURL(ctx, id("acctd", n), "") }})

	// Deliveries and their attempts: the outcome's error and the
	// endpoint's answer, by each way an attempt is written.
	attempt := func(name, how string, big, anyBytes, ofDelivery bool, field func(*store.Attempt, string), read func(store.Delivery, []store.Attempt) string) textField {
		return textField{name: name + " (" + how + ")", big: big, anyBytes: anyBytes, update: ofDelivery,
			set: func(t *testing.T, s store.Store, n int, v string) error {
				w := hook(n)
				d := newDelivery(w.ID, "acct_1", id("dlv", n), id("evt", n), t0)
				update(t, s, "a webhook and its delivery", func(tx store.Tx) error {
					if err := tx.InsertWebhook(w); err != nil {
						return err
					}
					_, err := tx.InsertDelivery(d)
					return err
				})
				a := store.Attempt{DeliveryID: d.ID, N: 1, At: t0, StatusCode: 500}
				field(&a, v)
				o := store.DeliveryOutcome{Attempt: a, Status: store.DeliveryPending, Step: 1, Next: t0.Add(time.Minute)}
				return s.Update(ctx, func(tx store.Tx) error {
					switch how {
					case "AddAttempt":
						return tx.AddAttempt(a)
					case "RecordOutcomes":
						_, err := tx.RecordOutcomes([]store.HeldOutcome{{DeliveryID: d.ID, DeliveryOutcome: o}})
						return err
					}
					return tx.RecordOutcome(d.ID, "", o)
				})
			},
			get: func(s store.Store, n int) (string, error) {
				d, as, err := s.Delivery(ctx, id("wh", n), id("dlv", n))
				switch {
				case err != nil:
					return "", err
				case !ofDelivery && len(as) == 0:
					return "", store.ErrNotFound
				}
				return read(d, as), nil
			}}
	}
	for _, how := range []string{"RecordOutcome", "RecordOutcomes", "AddAttempt"} {
		add(attempt("Attempt.Error", how, true, false, false, func(a *store.Attempt, v string) { a.Error = v },
			func(_ store.Delivery, as []store.Attempt) string { return as[0].Error }),
			attempt("Attempt.ResponseBody", how, true, true, false, func(a *store.Attempt, v string) { a.ResponseBody = v },
				func(_ store.Delivery, as []store.Attempt) string { return as[0].ResponseBody }),
			attempt("Attempt.Result", how, false, false, false, func(a *store.Attempt, v string) { a.Result = v },
				func(_ store.Delivery, as []store.Attempt) string { return as[0].Result }))
		if how != "AddAttempt" {
			add(attempt("Delivery.LastError", how, true, false, true, func(a *store.Attempt, v string) { a.Error = v },
				func(d store.Delivery, _ []store.Attempt) string { return d.LastError }))
		}
	}

	// The event log.
	add(textField{name: "LoggedEvent.Domain",
		set: func(_ *testing.T, s store.Store, n int, v string) error {
			return s.Update(ctx, func(tx store.Tx) error {
				return tx.LogEvents(store.LoggedEvent{ID: id("evt", n), AccountID: "acct_1", Event: "ai_visibility_change", Domain: v,
					Payload: []byte(`{}`), CreatedAt: t0})
			})
		},
		get: func(s store.Store, n int) (string, error) {
			es, _, err := s.RecentEvents(ctx, store.EventFilter{AccountID: "acct_1", Limit: 1000})
			for _, e := range es {
				if e.ID == id("evt", n) {
					return e.Domain, err
				}
			}
			return "", cmpErr(err, store.ErrNotFound)
		}})

	// People: what a user and an invitation keep of themselves.
	add(textField{name: "Invitation.Email",
		set: func(_ *testing.T, s store.Store, n int, v string) error {
			return s.CreateInvitation(ctx, store.Invitation{TokenHash: []byte(id("inv", n)), AccountID: "acct_1", Email: v, Role: "viewer",
				InvitedBy: "someone", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)})
		},
		get: func(s store.Store, n int) (string, error) {
			inv, err := s.Invitation(ctx, []byte(id("inv", n)), t0)
			return inv.Email, err
		}})
	add(textField{name: "User.PasswordHash", update: true, before: "$argon2id$v=19$m=65536,t=1,p=4$before",
		set: func(t *testing.T, s store.Store, n int, v string) error {
			u := newUser(t, s, id("usr", n), "acct_1", id("u", n)+"@example.com", "viewer")
			must(t, s.SetPassword(ctx, u.ID, "$argon2id$v=19$m=65536,t=1,p=4$before", t0, nil), "SetPassword")
			return s.SetPassword(ctx, u.ID, v, t0, nil)
		},
		get: func(s store.Store, n int) (string, error) {
			u, err := s.User(ctx, id("usr", n))
			return u.PasswordHash, err
		}})

	// Plugins: the registry and the health instances report.
	plugin := func(name string, big bool, field func(*store.PluginRecord) *string) textField {
		return textField{name: name, big: big,
			set: func(_ *testing.T, s store.Store, n int, v string) error {
				p := store.PluginRecord{Name: id("plugin", n), Path: "/usr/lib/aivis/" + id("plugin", n), SHA256: []byte("sum"),
					Kind: "connector", Version: "1.0.0", DisplayName: "Plugin", RegisteredAt: t0}
				*field(&p) = v
				return s.PutPlugin(ctx, p)
			},
			get: func(s store.Store, n int) (string, error) {
				ps, err := s.ListPlugins(ctx)
				for _, p := range ps {
					if p.Name == id("plugin", n) {
						return *field(&p), err
					}
				}
				return "", cmpErr(err, store.ErrNotFound)
			}}
	}
	add(plugin("PluginRecord.Path", true, func(p *store.PluginRecord) *string { return &p.Path }),
		plugin("PluginRecord.Version", false, func(p *store.PluginRecord) *string { return &p.Version }),
		plugin("PluginRecord.DisplayName", true, func(p *store.PluginRecord) *string { return &p.DisplayName }))
	add(textField{name: "PluginHealth.Problem", big: true,
		set: func(_ *testing.T, s store.Store, n int, v string) error {
			return s.PutPluginHealth(ctx, id("proc", n), []store.PluginHealth{{Plugin: "slack", State: "restarting", Problem: v, CheckedAt: t0}})
		},
		get: func(s store.Store, n int) (string, error) {
			hs, err := s.ListPluginHealth(ctx, t0.Add(-time.Hour))
			for _, h := range hs {
				if h.Instance == id("proc", n) {
					return h.Problem, err
				}
			}
			return "", cmpErr(err, store.ErrNotFound)
		}})
	add(trafficTextFields()...)
	add(changeTextFields()...)
	return fs
}

// last is the last element of a list, "" of none.
func last(l []string) string {
	if len(l) == 0 {
		return ""
	}
	return l[len(l)-1]
}

// promptAt is a field of a domain's first prompt, "" when it has none.
func promptAt(d store.MonitoredDomain, field func(store.Prompt) string) string {
	if len(d.Prompts) == 0 {
		return ""
	}
	return field(d.Prompts[0])
}

// cmpErr is err, or otherwise when err is nil.
func cmpErr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}
