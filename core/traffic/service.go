package traffic

import (
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aivis/aivis/core/auth"
	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/netguard"
	"github.com/aivis/aivis/core/randid"
	"github.com/aivis/aivis/core/secrets"
	"github.com/aivis/aivis/core/store"
)

// TokenPrefix starts every ingest token, so that one found in a log or a
// repository is known for what it is.
const TokenPrefix = "aivt_"

// Sources are the log sources an ingest token may take: the CDNs that
// deliver to an endpoint (a log file is imported by the CLI, or uploaded
// with an API key).
var Sources = []string{store.TrafficCloudflare, store.TrafficVercel, store.TrafficFastly}

// Store is what the service keeps traffic in: its ingest tokens are
// written in an Update.
type Store interface {
	store.Traffic
	store.Updater
}

// Service is what the API and the CLI do with a domain's traffic: its
// ingest tokens, the batches delivered with them or imported, and the
// aggregates they leave.
type Service struct {
	Store   Store
	Catalog *Catalog
	// Box seals a Vercel drain's signing secret.
	Box *secrets.Box
	Now func() time.Time
	// MaxBatch is the most bytes a batch may hold, decompressed
	// (DefaultMaxBatch when 0).
	MaxBatch int64
	// Sites reads a batch's domain and latest scan for its
	// crawler_errors; nil fires none.
	Sites Sites
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

// NewToken is a token to make for a domain.
type NewToken struct {
	Name   string
	Source string
	// SigningSecret is the secret a Vercel drain signs with (Vercel shows
	// it): required for source vercel, refused for the others.
	SigningSecret string
	// FastlyServiceID is the Fastly service that will deliver (fastly
	// only, optional).
	FastlyServiceID string
}

// CreateToken makes an ingest token for domain d and returns it with its
// secret, which is shown once: only its hash is kept.
func (s *Service) CreateToken(ctx context.Context, d store.MonitoredDomain, n NewToken) (store.IngestToken, string, error) {
	var fs []fault.FieldError
	n.Name = strings.TrimSpace(n.Name)
	if n.Name == "" || utf8.RuneCountInString(n.Name) > 100 || !utf8.ValidString(n.Name) {
		fs = append(fs, fault.FieldError{Field: "name", Message: "must be 1 to 100 characters"})
	}
	switch {
	case !validSource(n.Source):
		fs = append(fs, fault.FieldError{Field: "source", Message: "must be one of " + strings.Join(Sources, ", ")})
	case n.Source == store.TrafficVercel && n.SigningSecret == "":
		fs = append(fs, fault.FieldError{Field: "signing_secret", Message: "required for vercel: the drain's signature secret"})
	case n.Source != store.TrafficVercel && n.SigningSecret != "":
		fs = append(fs, fault.FieldError{Field: "signing_secret", Message: "only a vercel token takes one"})
	case n.Source != store.TrafficFastly && n.FastlyServiceID != "":
		fs = append(fs, fault.FieldError{Field: "fastly_service_id", Message: "only a fastly token takes one"})
	}
	if len(n.SigningSecret) > 256 {
		fs = append(fs, fault.FieldError{Field: "signing_secret", Message: "must be at most 256 characters"})
	}
	if len(n.FastlyServiceID) > 64 || strings.ContainsFunc(n.FastlyServiceID, func(r rune) bool { return !isAlnum(r) }) {
		fs = append(fs, fault.FieldError{Field: "fastly_service_id", Message: "must be a Fastly service id (letters and digits)"})
	}
	if len(fs) > 0 {
		return store.IngestToken{}, "", &fault.Error{Code: fault.ValidationError, Message: "the ingest token is not valid", Details: fs}
	}
	secret := TokenPrefix + randid.String(40)
	t := store.IngestToken{
		ID: randid.New("itok"), AccountID: d.AccountID, ClientID: d.ClientID, DomainID: d.ID,
		Name: n.Name, Source: n.Source, Hash: auth.Hash(secret), Prefix: secret[:len(TokenPrefix)+6],
		FastlyServiceID: n.FastlyServiceID, CreatedAt: s.now(),
	}
	if n.SigningSecret != "" {
		if s.Box == nil {
			return store.IngestToken{}, "", errors.New("traffic: no key to seal a signing secret with")
		}
		t.SigningSecret = s.Box.Seal(n.SigningSecret)
	}
	// In an Update when the request holds an Idempotency-Key, so that the
	// key is marked acted with the token (store.Acted).
	create := func() error { return s.Store.CreateIngestToken(ctx, t) }
	if store.HoldsKey(ctx) {
		create = func() error { return s.Store.Update(ctx, func(tx store.Tx) error { return tx.InsertIngestToken(t) }) }
	}
	if err := create(); err != nil {
		return store.IngestToken{}, "", fmt.Errorf("traffic: create token: %w", err)
	}
	return t, secret, nil
}

func validSource(src string) bool {
	for _, s := range Sources {
		if s == src {
			return true
		}
	}
	return false
}

func isAlnum(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
}

// ErrToken is Authenticate's error for a secret that is no live token of
// the source.
var ErrToken = fault.New(fault.InvalidCredentials, "the ingest token is not valid")

// Authenticate finds the live token of source whose secret this is.
func (s *Service) Authenticate(ctx context.Context, source, secret string) (store.IngestToken, error) {
	if !strings.HasPrefix(secret, TokenPrefix) || len(secret) > 100 {
		return store.IngestToken{}, ErrToken
	}
	t, err := s.Store.IngestTokenByHash(ctx, auth.Hash(secret))
	if errors.Is(err, store.ErrNotFound) {
		return store.IngestToken{}, ErrToken
	} else if err != nil {
		return store.IngestToken{}, err
	}
	if t.RevokedAt != nil || t.Source != source {
		return store.IngestToken{}, ErrToken
	}
	return t, nil
}

// SignedByVercel reports whether signature (x-vercel-signature) is the
// hex HMAC-SHA1 of body under t's signing secret, compared in constant
// time.
func (s *Service) SignedByVercel(t store.IngestToken, body []byte, signature string) bool {
	if t.Source != store.TrafficVercel || t.SigningSecret == "" || s.Box == nil {
		return false
	}
	secret, err := s.Box.Open(t.SigningSecret)
	if err != nil {
		return false
	}
	got, err := hex.DecodeString(strings.TrimSpace(signature))
	if err != nil {
		return false
	}
	mac := hmac.New(sha1.New, []byte(secret))
	mac.Write(body)
	return hmac.Equal(mac.Sum(nil), got)
}

// Result is what one batch did.
type Result struct {
	// Validation: Cloudflare's validation upload, answered and not kept.
	Validation bool
	// Duplicate: the domain had this batch already; nothing was added.
	Duplicate bool
	Batch     store.TrafficBatch
	Hits      int // aggregates of crawler hits the batch added to
	Referrals int // aggregates of referral visits
}

// Ingest reads a batch delivered with token t and adds it to its domain's
// aggregates; it returns once the batch is kept (so that the sender's
// retry of a batch that failed is not counted twice: a batch is kept once
// per domain and content).
func (s *Service) Ingest(ctx context.Context, t store.IngestToken, body io.Reader) (Result, error) {
	return s.ingest(ctx, t.AccountID, t.DomainID, t.ID, t.Source, body)
}

// Import reads a combined log file of domain d and adds it as Ingest
// does.
func (s *Service) Import(ctx context.Context, d store.MonitoredDomain, body io.Reader) (Result, error) {
	return s.ingest(ctx, d.AccountID, d.ID, "", store.TrafficFile, body)
}

func (s *Service) ingest(ctx context.Context, accountID, domainID, tokenID, source string, body io.Reader) (Result, error) {
	agg := NewAggregator(s.Catalog, Assistant, accountID, domainID)
	b, err := Read(source, body, agg, s.MaxBatch)
	switch {
	case errors.Is(err, ErrTooLarge):
		max := s.MaxBatch
		if max <= 0 {
			max = DefaultMaxBatch
		}
		return Result{}, fault.New(fault.PayloadTooLarge, "a batch may hold at most %d MiB of logs, decompressed", max>>20)
	case errors.Is(err, ErrGzip):
		return Result{}, fault.New(fault.ValidationError, "the batch's gzip compression is broken")
	case err != nil:
		return Result{}, err
	case b.Validation:
		return Result{Validation: true}, nil
	}
	r := Result{Batch: store.TrafficBatch{
		ID: randid.Sorted("tbat", s.now()), AccountID: accountID, DomainID: domainID, TokenID: tokenID, Source: source,
		Hash: b.Hash, Lines: b.Lines, Malformed: b.Malformed, Samples: b.Samples, ReceivedAt: s.now(),
	}}
	hits, refs := agg.CrawlerHits(), agg.ReferralVisits()
	r.Hits, r.Referrals = len(hits), len(refs)
	then, err := s.crawlerErrors(ctx, accountID, domainID, hits, r.Batch.ReceivedAt)
	if err != nil {
		return Result{}, err
	}
	// A request that holds an Idempotency-Key marks it acted in the
	// transaction that keeps the batch. A batch is kept once per content
	// hash anyway: a duplicate adds nothing, and marks nothing.
	r.Batch.Then = then
	if store.HoldsKey(ctx) {
		r.Batch.Then = func(tx store.Tx) error {
			if then != nil {
				if err := then(tx); err != nil {
					return err
				}
			}
			return store.MarkActed(ctx, tx)
		}
	}
	dup, err := s.Store.AddTrafficBatch(ctx, r.Batch, hits, refs)
	r.Batch.Then = nil
	if err != nil {
		return Result{}, fmt.Errorf("traffic: keep batch: %w", err)
	}
	r.Duplicate = dup
	return r, nil
}

// LoadRanges verifies agents with the range lists kept in the store (aivis
// crawlers update, the daily refresh) put over the binary's snapshot.
func (s *Service) LoadRanges(ctx context.Context) error {
	lists, _, err := s.Store.CrawlerRanges(ctx)
	if err != nil {
		return fmt.Errorf("traffic: crawler ranges: %w", err)
	}
	kept, err := NewRanges(lists)
	if err != nil {
		return fmt.Errorf("traffic: the crawler ranges kept: %w", err)
	}
	s.Catalog.SetRanges(Merge(Snapshot(), kept))
	return nil
}

// ReplaceRanges keeps the lists of doc, a JSON object of list names
// (DefaultListURLs') and lists as their operators publish them, in place
// of those lists' copies: the other lists kept stay. It returns the names
// replaced.
func (s *Service) ReplaceRanges(ctx context.Context, doc []byte) ([]string, error) {
	var given map[string]json.RawMessage
	if err := json.Unmarshal(doc, &given); err != nil || len(given) == 0 {
		return nil, fault.New(fault.ValidationError, `the lists must be a JSON object {"list name": the list as published, ...}`)
	}
	known := DefaultListURLs()
	lists, _, err := s.Store.CrawlerRanges(ctx)
	if err != nil {
		return nil, fmt.Errorf("traffic: crawler ranges: %w", err)
	}
	if lists == nil {
		lists = map[string][]byte{}
	}
	var names []string
	for name, list := range given {
		if _, ok := known[name]; !ok {
			return nil, fault.New(fault.ValidationError, "no list is named %q (aivis crawlers list names them)", name)
		}
		if _, _, err := ParseList(list); err != nil {
			return nil, fault.New(fault.ValidationError, "list %s: %v", name, err)
		}
		lists[name] = list
		names = append(names, name)
	}
	kept, err := NewRanges(lists)
	if err != nil {
		return nil, fault.New(fault.ValidationError, "%v", err)
	}
	if err := s.Store.SaveCrawlerRanges(ctx, lists, s.now()); err != nil {
		return nil, fmt.Errorf("traffic: keep crawler ranges: %w", err)
	}
	s.Catalog.SetRanges(Merge(Snapshot(), kept))
	slices.Sort(names)
	return names, nil
}

// MaxRangesDocument is the most bytes FetchRanges reads.
const MaxRangesDocument = 16 << 20

// FetchRanges fetches the document at url (what ReplaceRanges takes) with
// client and keeps its lists; on any failure the lists kept stay, and the
// error names neither the URL nor an address.
func (s *Service) FetchRanges(ctx context.Context, client *http.Client, url string) ([]string, error) {
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, errors.New("traffic: crawler ranges: the URL is not valid")
	}
	r.Header.Set("Accept", "application/json")
	resp, err := client.Do(r)
	if err != nil {
		return nil, fmt.Errorf("traffic: crawler ranges: %s", netguard.Describe(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("traffic: crawler ranges: status %d", resp.StatusCode)
	}
	doc, err := io.ReadAll(io.LimitReader(resp.Body, MaxRangesDocument+1))
	if err != nil {
		return nil, fmt.Errorf("traffic: crawler ranges: %s", netguard.Describe(err))
	}
	if len(doc) > MaxRangesDocument {
		return nil, fmt.Errorf("traffic: crawler ranges: the document passes %d MiB", MaxRangesDocument>>20)
	}
	names, err := s.ReplaceRanges(ctx, doc)
	if fe, ok := fault.As(err); ok {
		return nil, fmt.Errorf("traffic: crawler ranges: %s", fe.Message)
	}
	return names, err
}
