// Package changes keeps what users changed on a monitored domain's site
// (a rewritten page, new FAQ markup; by hand, or when a content request's
// result is marked published) and measures the lift each change caused
// from the answers the domain's scans kept (core/lift): the service
// behind /v1/domains/{id}/changes, and what a worker asks after each scan
// to learn which changes now have their lift (lift_measured).
package changes

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/accounts"
	"github.com/aivis/aivis/core/domains"
	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/probe"
	"github.com/aivis/aivis/core/randid"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/text"
)

// The bounds of a change.
const (
	MaxTitle    = 200  // characters
	MaxNotes    = 4000 // characters
	MaxPages    = 50
	MaxPrompts  = 50
	MaxPageURL  = 2048 // bytes of a page as given
	MaxAhead    = 24 * time.Hour
	DefaultPage = 20
	MaxPage     = 100
)

// earliest is the earliest time a change may have gone live.
var earliest = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// Store is what the service reads and writes.
type Store interface {
	store.Changes
	store.Scans
	store.Content
	store.Domains
	store.Updater
}

// Service keeps the changes of monitored domains and measures their lift.
// Its methods take the monitored domain the caller may see (the API and
// the dashboard read it through visibility.Domains.Get first).
type Service struct {
	Store Store
	Now   func() time.Time
	// PromptLimit is the scanner's Prober.MaxPrompts: the size the
	// generated prompts fill a domain's prompt set up to (0: probe's
	// default). A change targets prompts of that set.
	PromptLimit int
	// Measured, when set, is called in the transaction that marks a
	// change's lift measured (Due): the lift_measured event is published
	// there, so that it is published once.
	Measured func(tx store.Tx, m Measured) error
}

// NewChange is a change as a user describes it.
type NewChange struct {
	Title string
	Notes string
	// At is when the change went live (zero: now); at most MaxAhead
	// ahead.
	At time.Time
	// Pages are URLs on the domain or paths, kept as paths; Prompts, the
	// domain's prompts by text (case aside).
	Pages   []string
	Prompts []string
}

// ErrUnmonitored is FromPublished's when no monitored domain of the
// content request's owner covers the published URL: no change is made.
var ErrUnmonitored = errors.New("changes: the published page is on no monitored domain of its owner")

// Create keeps a change of the domain.
func (s *Service) Create(ctx context.Context, d store.MonitoredDomain, n NewChange) (store.Change, error) {
	var f fault.Fields
	now := s.Now()
	c := store.Change{ID: randid.New("chg"), AccountID: d.AccountID, ClientID: d.ClientID, DomainID: d.ID, CreatedAt: now,
		Title: cleanTitle(&f, n.Title), Notes: cleanNotes(&f, n.Notes), At: cleanAt(&f, "at", n.At, now),
		Pages: cleanPages(&f, d.Domain, n.Pages), Prompts: s.cleanPrompts(&f, d, n.Prompts)}
	if err := f.Err(); err != nil {
		return c, err
	}
	if err := s.insert(ctx, c); err != nil {
		return c, domainError(d, err)
	}
	return c, nil
}

// Get reads a change of the domain.
func (s *Service) Get(ctx context.Context, d store.MonitoredDomain, id string) (store.Change, error) {
	c, err := s.Store.Change(ctx, d.AccountID, d.ID, id)
	return c, changeError(id, err)
}

// List lists a page of the domain's changes, the latest first: those f
// selects by time (its account and domain are set here), Limit 0 is
// DefaultPage and at most MaxPage.
func (s *Service) List(ctx context.Context, d store.MonitoredDomain, f store.ChangeFilter) ([]store.Change, string, error) {
	f.AccountID, f.DomainID, f.Limit = d.AccountID, d.ID, min(cmp.Or(max(f.Limit, 0), DefaultPage), MaxPage)
	cs, next, err := s.Store.ListChanges(ctx, f)
	return cs, next, accounts.CursorError(err)
}

// Delete deletes a change of the domain.
func (s *Service) Delete(ctx context.Context, d store.MonitoredDomain, id string) error {
	return changeError(id, s.Store.DeleteChange(ctx, d.AccountID, d.ID, id))
}

// FromPublished makes the change a content request's result makes when
// it is marked published at pageURL (cr.URL when ""), live at `at` (zero:
// now): on the monitored domain of the request's owner that covers the
// page (its own name first, else the closest), titled after the request,
// targeting the page and those of the request's target queries that are
// the domain's prompts. A request makes one change: marked again, its
// change is returned as it is. ErrUnmonitored when no monitored domain
// covers the page.
func (s *Service) FromPublished(ctx context.Context, accountID, contentRequestID, pageURL string, at time.Time) (store.Change, error) {
	if c, err := s.Store.ChangeOfContentRequest(ctx, accountID, contentRequestID); err == nil || !errors.Is(err, store.ErrNotFound) {
		return c, err
	}
	cr, err := s.Store.ContentRequest(ctx, accountID, contentRequestID)
	if errors.Is(err, store.ErrNotFound) {
		return store.Change{}, fault.New(fault.NotFound, "no content request %s", contentRequestID)
	} else if err != nil {
		return store.Change{}, err
	}
	if cr.Status != client.StatusCompleted {
		return store.Change{}, fault.New(fault.InvalidState, "content request %s is %s: only a completed request's result is published", cr.ID, cr.Status)
	}
	var f fault.Fields
	now := s.Now()
	at = cleanAt(&f, "published_at", at, now)
	pageURL = cmp.Or(strings.TrimSpace(pageURL), cr.URL)
	u, err := url.Parse(pageURL)
	switch {
	case pageURL == "":
		f.Add("url", "is required: the request names no page")
	case len(pageURL) > MaxPageURL || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil:
		f.Add("url", "must be an absolute http or https URL without credentials, at most %d characters", MaxPageURL)
	case !onSite(cr.Domain, u.Hostname()):
		f.Add("url", "must be on %s or one of its subdomains", cr.Domain)
	}
	if err := f.Err(); err != nil {
		return store.Change{}, err
	}
	d, err := s.domainOf(ctx, cr, u.Hostname())
	if err != nil {
		return store.Change{}, err
	}
	c := store.Change{ID: randid.New("chg"), AccountID: d.AccountID, ClientID: d.ClientID, DomainID: d.ID, CreatedAt: now, At: at,
		Title: publishedTitle(cr, pathOf(u)), Notes: fmt.Sprintf("Made when content request %s was marked published.", cr.ID),
		Pages: []string{pathOf(u)}, Prompts: []string{}, ContentRequestID: cr.ID}
	set := s.promptSet(d)
	for _, q := range cr.TargetQueries {
		if p, ok := set[fold(q)]; ok && !slices.Contains(c.Prompts, p) && len(c.Prompts) < MaxPrompts {
			c.Prompts = append(c.Prompts, p)
		}
	}
	// A request makes one change: marked again, it writes nothing.
	err = s.insert(ctx, c)
	if errors.Is(err, store.ErrConflict) {
		return s.Store.ChangeOfContentRequest(ctx, accountID, contentRequestID)
	}
	return c, domainError(d, err)
}

// insert keeps a new change: in an Update when the request holds an
// Idempotency-Key, so that the key is marked acted with the change
// (store.Acted), else in the store's one statement.
func (s *Service) insert(ctx context.Context, c store.Change) error {
	if store.HoldsKey(ctx) {
		return s.Store.Update(ctx, func(tx store.Tx) error { return tx.InsertChange(c) })
	}
	return s.Store.CreateChange(ctx, c)
}

// domainOf is the monitored domain of the request's owner that covers
// host: the request's own domain, else the closest that covers it.
func (s *Service) domainOf(ctx context.Context, cr store.ContentRequest, host string) (store.MonitoredDomain, error) {
	var best store.MonitoredDomain
	cursor := ""
	for {
		ds, next, err := s.Store.ListDomains(ctx, store.DomainFilter{AccountID: cr.AccountID, ClientID: cr.ClientID, Cursor: cursor, Limit: 100})
		if err != nil {
			return best, err
		}
		for _, d := range ds {
			switch {
			case d.Domain == cr.Domain:
				return d, nil
			case onSite(d.Domain, host) && len(d.Domain) > len(best.Domain):
				best = d
			}
		}
		if cursor = next; cursor == "" {
			break
		}
	}
	if best.ID == "" {
		return best, ErrUnmonitored
	}
	return best, nil
}

// publishedTitle is the title of a published request's change: its
// metadata's title when it has one, else what was published where.
func publishedTitle(cr store.ContentRequest, path string) string {
	title := strings.TrimSpace(cr.Metadata["title"])
	if _, bad := text.Control(title); title == "" || bad {
		title = "Published the " + cmp.Or(cr.Type, "optimize") + " result of " + path
	}
	return cut(title, MaxTitle)
}

// cut cuts s to at most n characters.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// domainError is a store's error of a domain's write as the user sees it.
func domainError(d store.MonitoredDomain, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return fault.New(fault.NotFound, "no monitored domain %s", d.ID)
	}
	return err
}

// changeError is a store's error of a change as the user sees it.
func changeError(id string, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return fault.New(fault.NotFound, "no change %s", id)
	}
	return err
}

func cleanTitle(f *fault.Fields, title string) string {
	title = strings.TrimSpace(title)
	if n := utf8.RuneCountInString(title); n == 0 || n > MaxTitle || hasControl(title, false) {
		f.Add("title", "must be 1 to %d characters without control characters", MaxTitle)
	}
	return title
}

func cleanNotes(f *fault.Fields, notes string) string {
	notes = strings.TrimSpace(notes)
	if utf8.RuneCountInString(notes) > MaxNotes || hasControl(notes, true) {
		f.Add("notes", "must be at most %d characters without control characters other than tabs and line breaks", MaxNotes)
	}
	return notes
}

// hasControl says whether s holds a control character (or a byte that is
// not UTF-8); tabs and line breaks are allowed when lines is.
func hasControl(s string, lines bool) bool {
	_, bad := text.Control(s)
	return bad || (!lines && strings.ContainsAny(s, "\t\r\n"))
}

// cleanAt is when a change went live: now when zero, never before
// earliest nor more than MaxAhead ahead.
func cleanAt(f *fault.Fields, field string, at, now time.Time) time.Time {
	switch {
	case at.IsZero():
		return now
	case at.Before(earliest):
		f.Add(field, "must not be before %s", earliest.Format(time.DateOnly))
	case at.After(now.Add(MaxAhead)):
		f.Add(field, "must not be more than a day ahead")
	}
	return at.UTC()
}

// cleanPages reads the pages of a change: each an http(s) URL on the
// domain or a path, kept as its path (without query or fragment), a
// repeated one dropped.
func cleanPages(f *fault.Fields, domain string, in []string) []string {
	out := []string{}
	if len(in) > MaxPages {
		f.Add("pages", "must have at most %d entries", MaxPages)
		return out
	}
	for i, p := range in {
		at := fmt.Sprintf("pages[%d]", i)
		p = strings.TrimSpace(p)
		u, err := url.Parse(p)
		switch {
		case p == "" || len(p) > MaxPageURL || !text.Valid(p) || hasControl(p, false) || err != nil:
			f.Add(at, "must be a URL on %s or a path, 1 to %d characters", domain, MaxPageURL)
			continue
		case u.Scheme == "" && u.Host == "" && strings.HasPrefix(p, "/"):
		case u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || u.User != nil:
			f.Add(at, "must be an http or https URL on %s, or a path that starts with /", domain)
			continue
		case !onSite(domain, u.Hostname()):
			f.Add(at, "must be on %s or one of its subdomains", domain)
			continue
		}
		if path := pathOf(u); !slices.Contains(out, path) {
			out = append(out, path)
		}
	}
	return out
}

// pathOf is a URL's path as a request line has it, "/" for none.
func pathOf(u *url.URL) string {
	return cmp.Or(u.EscapedPath(), "/")
}

// onSite says whether host, as written (Unicode or punycode, any case),
// is the domain or one of its subdomains.
func onSite(domain, host string) bool {
	h, err := domains.Normalize(host)
	return err == nil && domains.Covers(domain, h)
}

// cleanPrompts reads the prompts of a change: each one of the domain's
// prompts, by text (case aside), kept as the domain has it; a repeated
// one dropped.
func (s *Service) cleanPrompts(f *fault.Fields, d store.MonitoredDomain, in []string) []string {
	out := []string{}
	if len(in) > MaxPrompts {
		f.Add("prompts", "must have at most %d entries", MaxPrompts)
		return out
	}
	set := s.promptSet(d)
	for i, p := range in {
		kept, ok := set[fold(p)]
		switch {
		case !ok:
			f.Add(fmt.Sprintf("prompts[%d]", i), "must be one of the domain's prompts (GET /v1/domains/%s/prompts)", d.ID)
		case !slices.Contains(out, kept):
			out = append(out, kept)
		}
	}
	return out
}

// promptSet is the domain's prompts by their folded text: its owner's
// own and those its scans generate after them.
func (s *Service) promptSet(d store.MonitoredDomain) map[string]string {
	subject := probe.Subject{Domain: d.Domain, Brands: d.Brands, Aliases: d.Aliases, Competitors: d.Competitors, Topics: d.Topics}
	for _, p := range d.Prompts {
		subject.Prompts = append(subject.Prompts, probe.Prompt{Text: p.Text, Intent: p.Intent})
	}
	set := map[string]string{}
	for _, p := range probe.Prompts(subject, cmp.Or(s.PromptLimit, probe.DefaultMaxPrompts)) {
		set[fold(p.Text)] = p.Text
	}
	return set
}

// fold is a prompt's text as prompts are told apart: trimmed, in lower
// case.
func fold(p string) string { return strings.ToLower(strings.TrimSpace(p)) }
