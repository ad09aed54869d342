package events_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/aivis/aivis/core/events"
)

func TestMessageRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 22, 10, 0, 0, 123456789, time.FixedZone("x", 3600))
	ev, err := events.New(events.VisibilityChange, at, "acct_1", "cli_1", "example.com", events.VisibilityChangeData{Domain: "example.com", VisibilityScore: 72})
	if err != nil {
		t.Fatal(err)
	}
	ev.ScoreChange = 12
	m, err := ev.Message()
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	if err := json.Unmarshal(m.Payload, &body); err != nil {
		t.Fatal(err)
	}
	if len(body) != 4 || body["id"] != ev.ID || body["event"] != "ai_visibility_change" || body["timestamp"] != "2026-11-22T09:00:00.123456Z" {
		t.Fatalf("body %s: want {id, event, timestamp, data} in UTC with microseconds", m.Payload)
	}
	if !strings.HasPrefix(ev.ID, "evt_") || m.UUID != ev.ID {
		t.Fatalf("id %q, uuid %q", ev.ID, m.UUID)
	}
	back, err := events.FromMessage(m)
	if err != nil {
		t.Fatal(err)
	}
	if back.ID != ev.ID || back.AccountID != "acct_1" || back.ClientID != "cli_1" || back.Domain != "example.com" || back.ScoreChange != 12 {
		t.Fatalf("back %+v", back)
	}
}

func TestFirstReadingAndTargets(t *testing.T) {
	ev, _ := events.New(events.WebhookTest, time.Now(), "acct_1", "", "example.com", events.WebhookTestData{WebhookID: events.Optional("wh_1")})
	ev.WebhookID = "wh_1"
	m, _ := ev.Message()
	back, err := events.FromMessage(m)
	if err != nil || back.WebhookID != "wh_1" || back.ClientID != "" || back.ScoreChange != -1 {
		t.Fatalf("%+v %v", back, err)
	}
}

// A citation_change carries its absolute change in points as a routing
// fact, and no score change; other kinds carry none.
func TestCitationChangeRoundTrip(t *testing.T) {
	ev, err := events.New(events.CitationChange, time.Now(), "acct_1", "", "example.com", events.CitationChangeData{
		Domain: "example.com", Engine: "Perplexity", Kind: "perplexity", CitationChange: -33.33,
		CitationRate: events.Rate{Value: 1.0 / 3, Hits: 1, Of: 3}, PreviousCitationRate: events.Rate{Value: 2.0 / 3, Hits: 2, Of: 3}})
	if err != nil {
		t.Fatal(err)
	}
	ev.CitationChange = 33.33
	m, _ := ev.Message()
	if got := m.Metadata.Get("citation_change"); got != "33.33" || m.Metadata.Get("score_change") != "" {
		t.Fatalf("metadata %v", m.Metadata)
	}
	back, err := events.FromMessage(m)
	if err != nil || back.CitationChange != 33.33 || back.ScoreChange != -1 {
		t.Fatalf("%+v %v", back, err)
	}
	var data map[string]any
	json.Unmarshal(back.Data, &data)
	if data["citation_change"] != -33.33 || data["source_share"] != nil || data["client_id"] != nil {
		t.Errorf("data %s", back.Data)
	}
	for _, k := range []string{"source_share", "previous_source_share", "client_id"} {
		if _, ok := data[k]; !ok {
			t.Errorf("data %s: %s missing, want null", back.Data, k)
		}
	}
	m.Metadata.Set("citation_change", "x")
	if _, err := events.FromMessage(m); err == nil {
		t.Error("a citation change that is no number")
	}
	other, _ := events.New(events.ScanCompleted, time.Now(), "acct_1", "", "example.com", events.ScanCompletedData{})
	other.CitationChange = 5
	if m, _ := other.Message(); m.Metadata.Get("citation_change") != "" {
		t.Errorf("scan_completed carries a citation change: %v", m.Metadata)
	}
}

// A crawler_errors carries its count of error hits as a routing fact;
// other kinds carry none.
func TestCrawlerErrorsRoundTrip(t *testing.T) {
	ev, err := events.New(events.CrawlerErrors, time.Now(), "acct_1", "cli_1", "example.com", events.CrawlerErrorsData{
		Domain: "example.com", Days: []string{"2026-11-27"}, Errors: 3, PagesWithErrors: 1,
		Pages: []events.CrawlerErrorsPage{{Path: "/pricing", Errors: 3,
			Agents:  []events.CrawlerErrorsAgent{{Agent: "GPTBot", Verification: "verified", Status4xx: 2, Status5xx: 1}},
			CitedBy: []events.CrawlerErrorsEngine{{Engine: "ChatGPT", Answers: 4}}}}})
	if err != nil {
		t.Fatal(err)
	}
	ev.CrawlerErrors = 3
	m, _ := ev.Message()
	if got := m.Metadata.Get("crawler_errors"); got != "3" || m.Metadata.Get("citation_change") != "" {
		t.Fatalf("metadata %v", m.Metadata)
	}
	back, err := events.FromMessage(m)
	if err != nil || back.CrawlerErrors != 3 || back.ClientID != "cli_1" {
		t.Fatalf("%+v %v", back, err)
	}
	var data events.CrawlerErrorsData
	if err := json.Unmarshal(back.Data, &data); err != nil || data.Pages[0].Agents[0].Status5xx != 1 || data.Days[0] != "2026-11-27" {
		t.Errorf("data %s: %v", back.Data, err)
	}
	m.Metadata.Set("crawler_errors", "1.5")
	if _, err := events.FromMessage(m); err == nil {
		t.Error("a count of error hits that is no integer")
	}
	other, _ := events.New(events.ScanCompleted, time.Now(), "acct_1", "", "example.com", events.ScanCompletedData{})
	other.CrawlerErrors = 5
	if m, _ := other.Message(); m.Metadata.Get("crawler_errors") != "" {
		t.Errorf("scan_completed carries crawler errors: %v", m.Metadata)
	}
}

func TestRefusals(t *testing.T) {
	if _, err := events.New("nope", time.Now(), "a", "", "", nil); err == nil {
		t.Error("an unknown kind")
	}
	if _, err := events.New(events.ScanCompleted, time.Now(), "a", "", "", func() {}); err == nil {
		t.Error("data that is not JSON")
	}
	for _, m := range []*message.Message{
		message.NewMessage("evt_1", []byte("not json")),
		message.NewMessage("evt_2", []byte(`{"id":"evt_other","event":"scan_completed","timestamp":"2026-11-22T10:00:00Z","data":{}}`)),
	} {
		m.Metadata.Set("event", "scan_completed")
		if _, err := events.FromMessage(m); err == nil {
			t.Errorf("message %s accepted", m.UUID)
		}
	}
	for _, k := range events.Kinds {
		if !events.Known(k) {
			t.Errorf("%s not known", k)
		}
	}
}

// A message's payload is what json.Marshal makes of the body, byte for
// byte, though it is built by hand.
func TestAppendJSONIsJSONMarshal(t *testing.T) {
	at := time.Date(2026, 11, 22, 10, 0, 0, 120000000, time.FixedZone("x", -5400))
	for _, b := range []events.Body{
		{ID: "evt_1", Event: events.VisibilityChange, Timestamp: at.UTC(), Data: json.RawMessage(`{"domain":"example.com","visibility_score":72}`)},
		{ID: "evt_<\"odd\">", Event: "é", Timestamp: at, Data: json.RawMessage(`[1,"\u003c\u0026",null]`)},
		{ID: "", Event: "", Timestamp: time.Time{}, Data: nil},
		{ID: "evt_2", Event: events.ScanCompleted, Timestamp: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Data: json.RawMessage(`{}`)},
	} {
		want, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		if got := b.AppendJSON(nil); string(got) != string(want) {
			t.Errorf("AppendJSON = %s\nwant         %s", got, want)
		}
	}
	ev := events.Event{Body: events.Body{ID: "evt_3", Event: events.ScanCompleted, Timestamp: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}}
	if _, err := ev.Message(); err == nil {
		t.Error("a timestamp past the year 9999 made a message")
	}
}

// FromMessage reads the bodies Message writes without encoding/json, and
// any other spelling of a body with it: both give the same event.
func TestFromMessageReadsEverySpelling(t *testing.T) {
	at := time.Date(2026, 11, 22, 10, 0, 0, 120000000, time.UTC)
	ev, err := events.New(events.VisibilityChange, at, "acct_1", "", "example.com", events.VisibilityChangeData{Domain: "example.com", VisibilityScore: 72})
	if err != nil {
		t.Fatal(err)
	}
	m, err := ev.Message()
	if err != nil {
		t.Fatal(err)
	}
	fast, err := events.FromMessage(m)
	if err != nil {
		t.Fatal(err)
	}
	spaced := m.Copy()
	spaced.Payload = []byte(`{ "data": ` + string(ev.Data) + `, "timestamp": "2026-11-22T10:00:00.12Z", "event": "ai_visibility_change", "id": "` + ev.ID + `" }`)
	slow, err := events.FromMessage(spaced)
	if err != nil {
		t.Fatal(err)
	}
	for _, got := range []events.Event{fast, slow} {
		if got.ID != ev.ID || got.Event != ev.Event || !got.Timestamp.Equal(ev.Timestamp) || string(got.Data) != string(ev.Data) ||
			got.AccountID != "acct_1" || got.Domain != "example.com" {
			t.Errorf("read back %+v, want %+v", got, ev)
		}
	}
	for _, bad := range []string{
		string(m.Payload[:len(m.Payload)-1]),                                         // cut short
		strings.Replace(string(m.Payload), `"data":{`, `"data":{,`, 1),               // data that is not JSON
		strings.Replace(string(m.Payload), `"timestamp":"2026`, `"timestamp":"x`, 1), // no time
	} {
		c := m.Copy()
		c.Payload = []byte(bad)
		if _, err := events.FromMessage(c); err == nil {
			t.Errorf("body %s read", bad)
		}
	}
}
