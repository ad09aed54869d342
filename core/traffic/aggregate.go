package traffic

import (
	"cmp"
	"net/netip"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aivis/aivis/core/store"
)

// MaxSamples is how many malformed records an Aggregator keeps; it
// counts the rest.
const MaxSamples = 5

// maxExcerpt is the longest excerpt of a malformed record kept.
const maxExcerpt = 200

// maxCache is how many user agents, and referers, an Aggregator keeps
// the answer of; it forgets them all when full. Longer ones than
// maxCached bytes are not kept.
const (
	maxCache  = 4096
	maxCached = 512
)

// Aggregator adds up a domain's requests into CrawlerHits and
// ReferralVisits. It implements Sink. Its memory grows with the distinct
// days, pages, agents and assistants, not with the lines. An Aggregator
// is not safe for concurrent use.
type Aggregator struct {
	classifier          Classifier
	assistant           func(referer, query string) (string, bool)
	accountID, domainID string

	index  map[string]int32 // a name's index in names
	names  []string         // pages, agents' tokens, assistants, verifications
	hits   map[hitKey]int32 // an aggregate's index in counts
	counts []hitCount
	refs   map[refKey]int64

	agents    map[string]*Agent      // by user agent
	referrals map[string]referralHit // by referer, for requests without utm_source

	lines, malformed int64
	samples          []store.MalformedLine
}

type hitKey struct {
	day                       int32
	page, agent, verification int32
}

type hitCount struct {
	hits   int64
	status [5]int64
	bytes  int64
}

type refKey struct {
	day, page, assistant int32
}

type referralHit struct {
	assistant string
	ok        bool
}

// NewAggregator returns an Aggregator of domainID of accountID that tells
// agents with c and assistants with assistant (the assistant a referer
// or a query's utm_source names).
func NewAggregator(c Classifier, assistant func(referer, query string) (string, bool), accountID, domainID string) *Aggregator {
	return &Aggregator{
		classifier: c,
		assistant:  assistant,
		accountID:  accountID,
		domainID:   domainID,
		index:      map[string]int32{},
		hits:       map[hitKey]int32{},
		refs:       map[refKey]int64{},
		agents:     map[string]*Agent{},
		referrals:  map[string]referralHit{},
	}
}

// Line adds the request l: an agent's to its hits, another's that an
// assistant referred to the visits. A request without a time is
// malformed.
func (a *Aggregator) Line(n int, raw []byte, l *Line) {
	if l.Time.IsZero() {
		a.Malformed(n, raw, "no valid time")
		return
	}
	a.lines++
	day := dayOf(l.Time)
	if ag := a.agent(l.UserAgent); ag != nil {
		v := a.classifier.Verify(ag, l.ClientIP)
		k := hitKey{day: day, page: a.page(l.Path), agent: a.name(ag.Token), verification: a.name(string(v))}
		i, ok := a.hits[k]
		if !ok {
			i = int32(len(a.counts))
			a.counts = append(a.counts, hitCount{})
			a.hits[k] = i
		}
		c := &a.counts[i]
		c.hits++
		c.status[statusClass(l.Status)]++
		c.bytes += l.Bytes
		return
	}
	if name, ok := a.referral(l.Referer, l.Query); ok {
		a.refs[refKey{day: day, page: a.page(l.Path), assistant: a.name(name)}]++
	}
}

// Malformed counts record n, and keeps it as a sample while there are
// fewer than MaxSamples.
func (a *Aggregator) Malformed(n int, raw []byte, reason string) {
	a.lines++
	a.malformed++
	if len(a.samples) < MaxSamples {
		a.samples = append(a.samples, store.MalformedLine{Line: n, Reason: reason, Excerpt: Excerpt(raw)})
	}
}

// Lines counts the records added, malformed ones included.
func (a *Aggregator) Lines() int64 { return a.lines }

// MalformedLines counts the malformed records.
func (a *Aggregator) MalformedLines() int64 { return a.malformed }

// Samples are the first malformed records.
func (a *Aggregator) Samples() []store.MalformedLine { return slices.Clone(a.samples) }

// CrawlerHits are the agents' hits, by day, page, agent and
// verification.
func (a *Aggregator) CrawlerHits() []store.CrawlerHits {
	out := make([]store.CrawlerHits, 0, len(a.hits))
	for k, i := range a.hits {
		c := a.counts[i]
		out = append(out, store.CrawlerHits{
			AccountID: a.accountID, DomainID: a.domainID,
			Day: dayTime(k.day), Page: a.names[k.page], Agent: a.names[k.agent], Verification: a.names[k.verification],
			Hits: c.hits, Status: c.status, Bytes: c.bytes,
		})
	}
	slices.SortFunc(out, func(x, y store.CrawlerHits) int {
		return cmp.Or(x.Day.Compare(y.Day), strings.Compare(x.Page, y.Page),
			strings.Compare(x.Agent, y.Agent), strings.Compare(x.Verification, y.Verification))
	})
	return out
}

// ReferralVisits are the visits assistants referred, by day, page and
// assistant.
func (a *Aggregator) ReferralVisits() []store.ReferralVisits {
	out := make([]store.ReferralVisits, 0, len(a.refs))
	for k, n := range a.refs {
		out = append(out, store.ReferralVisits{
			AccountID: a.accountID, DomainID: a.domainID,
			Day: dayTime(k.day), Page: a.names[k.page], Assistant: a.names[k.assistant], Visits: n,
		})
	}
	slices.SortFunc(out, func(x, y store.ReferralVisits) int {
		return cmp.Or(x.Day.Compare(y.Day), strings.Compare(x.Page, y.Page), strings.Compare(x.Assistant, y.Assistant))
	})
	return out
}

// agent is the classifier's agent of ua, remembered.
func (a *Aggregator) agent(ua string) *Agent {
	if ua == "" {
		return nil
	}
	if ag, ok := a.agents[ua]; ok {
		return ag
	}
	ag := a.classifier.Agent(ua)
	if len(ua) > maxCached {
		return ag
	}
	if len(a.agents) >= maxCache {
		clear(a.agents)
	}
	a.agents[strings.Clone(ua)] = ag
	return ag
}

// referral is the assistant that referred a request, remembered by
// referer for a request whose query names no utm_source.
func (a *Aggregator) referral(referer, query string) (string, bool) {
	if !containsFold(query, "utm_source") {
		if referer == "" {
			return "", false
		}
		if r, ok := a.referrals[referer]; ok {
			return r.assistant, r.ok
		}
		name, ok := a.assistant(referer, query)
		if len(referer) > maxCached {
			return name, ok
		}
		if len(a.referrals) >= maxCache {
			clear(a.referrals)
		}
		a.referrals[strings.Clone(referer)] = referralHit{assistant: strings.Clone(name), ok: ok}
		return name, ok
	}
	return a.assistant(referer, query)
}

// page is the index of path as a page: cut to store.MaxTrafficPage bytes
// on a character's boundary.
func (a *Aggregator) page(path string) int32 {
	if len(path) > store.MaxTrafficPage {
		cut := store.MaxTrafficPage
		for cut > 0 && !utf8.RuneStart(path[cut]) {
			cut--
		}
		path = path[:cut]
	}
	return a.name(path)
}

// name is the index of s in names: pages, agents' tokens, assistants and
// verifications.
func (a *Aggregator) name(s string) int32 {
	if i, ok := a.index[s]; ok {
		return i
	}
	s = strings.Clone(s)
	i := int32(len(a.names))
	a.names = append(a.names, s)
	a.index[s] = i
	return i
}

// statusClass is the index of status in CrawlerHits.Status.
func statusClass(status int) int {
	switch {
	case status >= 200 && status < 300:
		return 0
	case status >= 300 && status < 400:
		return 1
	case status >= 400 && status < 500:
		return 2
	case status >= 500 && status < 600:
		return 3
	}
	return 4
}

// dayOf is t's UTC day, in days since the Unix epoch.
func dayOf(t time.Time) int32 {
	s := t.Unix()
	d := s / 86400
	if s < 0 && s%86400 != 0 {
		d--
	}
	return int32(d)
}

func dayTime(d int32) time.Time {
	return time.Unix(int64(d)*86400, 0).UTC()
}

// containsFold tells whether s holds sub (lowercase ASCII), in any case.
func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		j := 0
		for ; j < len(sub); j++ {
			c := s[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != sub[j] {
				break
			}
		}
		if j == len(sub) {
			return true
		}
	}
	return false
}

// Excerpt is the start of a record, at most 200 bytes of valid UTF-8,
// with every IPv4 and IPv6 address in it replaced by [address].
func Excerpt(raw []byte) string {
	var b strings.Builder
	for i := 0; i < len(raw) && b.Len() < maxExcerpt; {
		j := i
		for j < len(raw) && addrByte(raw[j]) {
			j++
		}
		if j == i {
			r, size := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && size <= 1 {
				b.WriteRune(utf8.RuneError)
				i++
				continue
			}
			if r < 0x20 && r != '\t' {
				b.WriteByte(' ')
			} else {
				b.Write(raw[i : i+size])
			}
			i += size
			continue
		}
		r := redact(raw[i:j])
		if b.Len()+len(r) > maxExcerpt {
			break // a replacement is never cut
		}
		b.WriteString(r)
		i = j
	}
	s := b.String()
	if len(s) > maxExcerpt {
		cut := maxExcerpt
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	return s
}

// addrByte tells whether c may be part of an address's text.
func addrByte(c byte) bool {
	_, hex := hexDigit(c)
	return hex || c == '.' || c == ':'
}

// redact is run, a run of the characters addresses are made of, with its
// addresses replaced.
func redact(run []byte) string {
	s := string(run)
	if !strings.ContainsAny(s, ".:") {
		return s
	}
	// An address, with a port or not, and a sentence's stop after it.
	t := strings.TrimRight(s, ".:")
	if _, err := netip.ParseAddr(t); err == nil {
		return "[address]" + s[len(t):]
	}
	if _, err := netip.ParseAddrPort(t); err == nil {
		return "[address]" + s[len(t):]
	}
	// Dotted quads within the run.
	var b strings.Builder
	for i := 0; i < len(s); {
		j := i
		for j < len(s) && (s[j] == '.' || ('0' <= s[j] && s[j] <= '9')) {
			j++
		}
		if j == i {
			b.WriteByte(s[i])
			i++
			continue
		}
		quad := strings.Trim(s[i:j], ".")
		if a, err := netip.ParseAddr(quad); err == nil && a.Is4() {
			b.WriteString(s[i:j][:strings.Index(s[i:j], quad)])
			b.WriteString("[address]")
			b.WriteString(s[i:j][strings.Index(s[i:j], quad)+len(quad):])
		} else {
			b.WriteString(s[i:j])
		}
		i = j
	}
	return b.String()
}
