package visibility

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/accounts"
	"github.com/aivis/aivis/core/auth"
	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/probe"
	"github.com/aivis/aivis/core/store"
)

// answerDetail is what a scan answer keeps beside its columns
// (store.ScanAnswer.Detail): these fields of client.ScanAnswer, under
// their names, so that the API reads them into it as they are.
type answerDetail struct {
	ErrorCategory *string                 `json:"error_category,omitempty"`
	ErrorStatus   *int                    `json:"error_status,omitempty"`
	Sources       []client.AnswerSource   `json:"sources"`
	Citations     []client.AnswerCitation `json:"citations"`
	Queries       []string                `json:"queries"`
	Competitors   []string                `json:"competitors"`
	Sentences     []client.AnswerSentence `json:"sentences"`
	Surface       string                  `json:"surface,omitempty"`
	Market        *client.Market          `json:"market,omitempty"`
	Absent        bool                    `json:"absent,omitempty"`
}

// answersOf are the answers of a run as a scan keeps them, in the run's
// order (engine by engine, prompt by prompt, run by run), each with its
// engine's kind; a failed probe with its error and no answer.
func answersOf(res probe.Result, engines []probe.Engine) []store.ScanAnswer {
	kinds, surfaces := map[string]string{}, map[string]string{}
	for _, e := range engines {
		kinds[e.Label], surfaces[e.Label] = cmp.Or(e.Kind, probe.KindOpenAIChat), e.Surface()
	}
	out := make([]store.ScanAnswer, len(res.Probes))
	for i, pr := range res.Probes {
		a, f := pr.Answer, pr.Finding
		sa := store.ScanAnswer{Seq: i, PromptIndex: pr.Prompt, Run: pr.Run, Engine: pr.Engine, Kind: kinds[pr.Engine], Market: pr.Market.String(),
			Text: a.Text, Error: pr.Err, SourcesReported: a.SourcesReported, Mentioned: f.Mentioned, Cited: f.Cited, Position: f.Position}
		if pr.Prompt >= 0 && pr.Prompt < len(res.Prompts) {
			sa.Prompt, sa.Intent = res.Prompts[pr.Prompt].Text, res.Prompts[pr.Prompt].Intent
		}
		d := answerDetail{Sources: []client.AnswerSource{}, Citations: []client.AnswerCitation{}, Queries: nonNil(a.Queries),
			Competitors: nonNil(f.Competitors), Sentences: []client.AnswerSentence{}, Surface: surfaces[pr.Engine], Absent: a.Absent}
		if !pr.Market.IsZero() {
			d.Market = &client.Market{Country: pr.Market.Country, Language: pr.Market.Language}
		}
		if pr.Failure != nil {
			d.ErrorCategory = &pr.Failure.Category
			if pr.Failure.Status != 0 {
				d.ErrorStatus = &pr.Failure.Status
			}
		}
		for _, s := range a.Sources {
			d.Sources = append(d.Sources, client.AnswerSource{URL: s.URL, Title: s.Title, Domain: s.Domain})
		}
		for _, c := range a.Citations {
			ac := client.AnswerCitation{URL: c.URL, Title: c.Title, Domain: c.Domain, Text: c.Text}
			if c.Start >= 0 && c.End >= c.Start {
				ac.Start, ac.End = &c.Start, &c.End
			}
			d.Citations = append(d.Citations, ac)
		}
		for _, s := range f.Sentences {
			d.Sentences = append(d.Sentences, client.AnswerSentence{Text: s.Text, Sentiment: math.Round(s.Compound*1e4) / 1e4})
		}
		sa.Detail, _ = json.Marshal(d)
		out[i] = sa
	}
	return out
}

func nonNil(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

// insertAnswers keeps a completed scan's answers with it, in the
// transaction that records its end.
func insertAnswers(tx store.Tx, sc store.Scan, answers []store.ScanAnswer, now time.Time) error {
	if len(answers) == 0 {
		return nil
	}
	for i := range answers {
		answers[i].ScanID, answers[i].RecordedAt = sc.ID, now
	}
	return tx.InsertScanAnswers(answers)
}

// Answers lists a page of the answers of a scan the principal may see
// (f's account and scan are set here).
func (s *Scans) Answers(ctx context.Context, p auth.Principal, scanID string, f store.AnswerFilter) ([]store.ScanAnswer, string, error) {
	if _, err := s.Get(ctx, p, scanID); err != nil {
		return nil, "", err
	}
	f.AccountID, f.ScanID = p.AccountID(), scanID
	as, next, err := s.Store.ListScanAnswers(ctx, f)
	return as, next, accounts.CursorError(err)
}

// ParseAnswerFilter reads the filters of a scan's answers from a query
// (engine, market, prompt, mentioned, cited, q), as the API and the
// dashboard take them.
func ParseAnswerFilter(q url.Values) (store.AnswerFilter, error) {
	var f fault.Fields
	af := store.AnswerFilter{Engine: q.Get("engine"), Query: q.Get("q")}
	for _, p := range [][2]string{{"engine", af.Engine}, {"q", af.Query}} {
		if !utf8.ValidString(p[1]) || utf8.RuneCountInString(p[1]) > 200 {
			f.Add(p[0], "must be at most 200 characters of valid UTF-8")
		}
	}
	if v := q.Get("market"); v != "" {
		m, err := probe.ParseMarketTag(v)
		if err != nil {
			f.Add("market", "%s", err.Error())
		}
		af.Market = m.String()
	}
	if v := q.Get("prompt"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			f.Add("prompt", "must be the index of a prompt of the scan's prompt set: an integer from 0")
		}
		af.Prompt = &n
	}
	for _, b := range []struct {
		name string
		dst  **bool
	}{{"mentioned", &af.Mentioned}, {"cited", &af.Cited}} {
		switch v := q.Get(b.name); v {
		case "":
		case "true", "false":
			yes := v == "true"
			*b.dst = &yes
		default:
			f.Add(b.name, "must be true or false")
		}
	}
	return af, f.Err()
}

// AnswerView is a kept answer as the API and the dashboard show it: its
// columns, and its detail, kept in the API's shape.
func AnswerView(a store.ScanAnswer) (client.ScanAnswer, error) {
	var v client.ScanAnswer
	if err := json.Unmarshal(a.Detail, &v); err != nil {
		return v, fmt.Errorf("scan %s, answer %d: %w", a.ScanID, a.Seq, err)
	}
	v.Seq, v.Prompt, v.Run = a.Seq, client.AnswerPrompt{Index: a.PromptIndex, Text: a.Prompt, Intent: a.Intent}, a.Run
	v.Engine, v.Kind, v.Text, v.SourcesReported = a.Engine, a.Kind, a.Text, a.SourcesReported
	if a.Error != "" {
		v.Error = &a.Error
	}
	v.Mentioned, v.Cited, v.Position = a.Mentioned, a.Cited, a.Position
	v.Queries, v.Competitors = nonNil(v.Queries), nonNil(v.Competitors)
	if v.Sources == nil {
		v.Sources = []client.AnswerSource{}
	}
	if v.Citations == nil {
		v.Citations = []client.AnswerCitation{}
	}
	if v.Sentences == nil {
		v.Sentences = []client.AnswerSentence{}
	}
	return v, nil
}
