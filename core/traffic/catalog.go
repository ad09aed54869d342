package traffic

import (
	"hash/maphash"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
)

// The names of the IP lists agents are verified with, as Ranges and
// DefaultListURLs name them (after their source).
const (
	ListOpenAIGPTBot        = "openai-gptbot"
	ListOpenAISearchBot     = "openai-searchbot"
	ListOpenAIChatGPTUser   = "openai-chatgpt-user"
	ListAnthropicBots       = "anthropic-bots"
	ListPerplexityBot       = "perplexity-bot"
	ListPerplexityUser      = "perplexity-user"
	ListGoogleGooglebot     = "google-googlebot"
	ListGoogleSpecial       = "google-special-crawlers"
	ListGoogleUserFetchers  = "google-user-triggered-fetchers"
	ListGoogleUserFetchersG = "google-user-triggered-fetchers-google"
	ListGoogleUserAgents    = "google-user-triggered-agents"
	ListAppleApplebot       = "apple-applebot"
	ListCommonCrawlCCBot    = "commoncrawl-ccbot"
	ListMicrosoftBingbot    = "microsoft-bingbot"
	ListDuckAssistBot       = "duckduckgo-duckassistbot"
	ListMistralAIUser       = "mistralai-user"
)

// DefaultListURLs are the addresses the operators publish their lists at
// (sources.md 4a), by list name: a starting configuration for Refresh, to
// be overridden, not relied upon. Google's lists moved from
// /static/search/apis/ipranges/ to /static/crawling/ipranges/; the older
// paths are given where the newer one is not confirmed for that list.
// Anthropic's file is referenced by third parties only.
func DefaultListURLs() map[string]string {
	const google = "https://developers.google.com/static/crawling/ipranges/"
	return map[string]string{
		ListOpenAIGPTBot:        "https://openai.com/gptbot.json",
		ListOpenAISearchBot:     "https://openai.com/searchbot.json",
		ListOpenAIChatGPTUser:   "https://openai.com/chatgpt-user.json",
		ListAnthropicBots:       "https://claude.com/crawling/bots.json",
		ListPerplexityBot:       "https://www.perplexity.com/perplexitybot.json",
		ListPerplexityUser:      "https://www.perplexity.com/perplexity-user.json",
		ListGoogleGooglebot:     "https://developers.google.com/static/search/apis/ipranges/googlebot.json",
		ListGoogleSpecial:       google + "special-crawlers.json",
		ListGoogleUserFetchers:  google + "user-triggered-fetchers.json",
		ListGoogleUserFetchersG: google + "user-triggered-fetchers-google.json",
		ListGoogleUserAgents:    google + "user-triggered-agents.json",
		ListAppleApplebot:       "https://search.developer.apple.com/applebot.json",
		ListCommonCrawlCCBot:    "https://index.commoncrawl.org/ccbot.json",
		ListMicrosoftBingbot:    "https://www.bing.com/toolbox/bingbot.json",
		ListDuckAssistBot:       "https://duckduckgo.com/duckassistbot.json",
		ListMistralAIUser:       "https://mistral.ai/mistralai-user-ips.json",
	}
}

// catalogEntry is an agent of the catalog and whether its token is a
// robots.txt token only.
type catalogEntry struct {
	Agent
	// tokenOnly: the operator says no crawler sends this token (Google's
	// "no separate user agent", Apple's "does not crawl webpages"), so a
	// request claiming it is not the operator's: Verify says Spoofed.
	tokenOnly bool
}

var googleUserLists = []string{ListGoogleUserFetchersG, ListGoogleUserFetchers, ListGoogleUserAgents}

// catalogEntries is sources.md 4a as data. Purposes of the "others" row are
// mixed or unsaid there: Other.
var catalogEntries = []catalogEntry{
	{Agent: Agent{"GPTBot", "OpenAI", Train, []string{ListOpenAIGPTBot}}},
	{Agent: Agent{"OAI-SearchBot", "OpenAI", Index, []string{ListOpenAISearchBot}}},
	{Agent: Agent{"ChatGPT-User", "OpenAI", Fetch, []string{ListOpenAIChatGPTUser}}},
	{Agent: Agent{"OAI-AdsBot", "OpenAI", Other, nil}},
	{Agent: Agent{"ClaudeBot", "Anthropic", Train, []string{ListAnthropicBots}}},
	{Agent: Agent{"Claude-SearchBot", "Anthropic", Index, []string{ListAnthropicBots}}},
	{Agent: Agent{"Claude-User", "Anthropic", Fetch, []string{ListAnthropicBots}}},
	{Agent: Agent{"anthropic-ai", "Anthropic", Other, nil}},
	{Agent: Agent{"Claude-Web", "Anthropic", Other, nil}},
	{Agent: Agent{"PerplexityBot", "Perplexity", Index, []string{ListPerplexityBot}}},
	{Agent: Agent{"Perplexity-User", "Perplexity", Fetch, []string{ListPerplexityUser}}},
	{Agent: Agent{"Googlebot", "Google", Index, []string{ListGoogleGooglebot}}},
	{Agent: Agent{"GoogleOther", "Google", Other, []string{ListGoogleGooglebot}}},
	{Agent: Agent{"Google-Extended", "Google", Train, nil}, tokenOnly: true},
	// Which of Google's lists covers these is not verified: any of them.
	{Agent: Agent{"Google-CloudVertexBot", "Google", Index, []string{ListGoogleGooglebot, ListGoogleSpecial}}},
	{Agent: Agent{"Google-NotebookLM", "Google", Fetch, googleUserLists}},
	{Agent: Agent{"Gemini-Deep-Research", "Google", Fetch, googleUserLists}},
	{Agent: Agent{"Applebot", "Apple", Index, []string{ListAppleApplebot}}},
	{Agent: Agent{"Applebot-Extended", "Apple", Train, nil}, tokenOnly: true},
	{Agent: Agent{"meta-externalagent", "Meta", Train, nil}},
	{Agent: Agent{"meta-externalfetcher", "Meta", Fetch, nil}},
	{Agent: Agent{"meta-webindexer", "Meta", Index, nil}},
	{Agent: Agent{"Amazonbot", "Amazon", Index, nil}},
	{Agent: Agent{"Amzn-SearchBot", "Amazon", Index, nil}},
	{Agent: Agent{"Bytespider", "ByteDance", Train, nil}},
	{Agent: Agent{"CCBot", "Common Crawl", Train, []string{ListCommonCrawlCCBot}}},
	{Agent: Agent{"bingbot", "Microsoft", Index, []string{ListMicrosoftBingbot}}},
	{Agent: Agent{"DuckAssistBot", "DuckDuckGo", Fetch, []string{ListDuckAssistBot}}},
	{Agent: Agent{"MistralAI-User", "Mistral", Fetch, []string{ListMistralAIUser}}},
	{Agent: Agent{"cohere-ai", "Cohere", Other, nil}},
	{Agent: Agent{"cohere-training-data-crawler", "Cohere", Other, nil}},
	{Agent: Agent{"YouBot", "You.com", Other, nil}},
	{Agent: Agent{"PhindBot", "Phind", Other, nil}},
	{Agent: Agent{"DeepSeekBot", "DeepSeek", Other, nil}},
	{Agent: Agent{"Manus-User", "Manus", Other, nil}},
	{Agent: Agent{"Devin", "Cognition", Other, nil}},
	{Agent: Agent{"AI2Bot", "Allen Institute for AI", Other, nil}},
	{Agent: Agent{"Diffbot", "Diffbot", Other, nil}},
	{Agent: Agent{"Timpibot", "Timpi", Other, nil}},
	{Agent: Agent{"PetalBot", "Huawei", Other, nil}},
	{Agent: Agent{"Kangaroo Bot", "Kangaroo LLM", Other, nil}},
	{Agent: Agent{"FacebookBot", "Meta", Other, nil}},
	{Agent: Agent{"facebookexternalhit", "Meta", Other, nil}},
}

// Catalog is the Classifier of sources.md's catalog. Agent finds, in one
// pass over the user agent, every token it holds, case-insensitively, and
// the longest wins (Applebot-Extended over Applebot); a small cache of
// recent user agents answers repeats. Verify checks an address against
// the agent's lists in the catalog's current Ranges. A Catalog is safe for
// concurrent use.
type Catalog struct {
	entries []catalogEntry
	byToken map[string]int
	m       *tokenMatcher
	cache   *uaCache
	ranges  atomic.Pointer[Ranges]
}

var _ Classifier = (*Catalog)(nil)

// NewCatalog is the catalog verifying with r (Snapshot(), or a refreshed
// Ranges; nil verifies nothing: every agent with lists is Unverified).
func NewCatalog(r *Ranges) *Catalog {
	c := &Catalog{entries: make([]catalogEntry, len(catalogEntries)), byToken: make(map[string]int, len(catalogEntries))}
	tokens := make([]string, len(catalogEntries))
	for i, e := range catalogEntries {
		e.Lists = slices.Clone(e.Lists)
		c.entries[i] = e
		c.byToken[e.Token] = i
		tokens[i] = e.Token
	}
	c.m = newTokenMatcher(tokens)
	c.cache = newUACache()
	c.SetRanges(r)
	return c
}

// SetRanges makes Verify use r from now on (after a refresh).
func (c *Catalog) SetRanges(r *Ranges) { c.ranges.Store(r) }

// Ranges is the Ranges Verify uses.
func (c *Catalog) Ranges() *Ranges { return c.ranges.Load() }

// Agents lists the catalog, in its order (copies: changing them changes
// nothing). Google-Extended and Applebot-Extended are robots.txt tokens
// only: a request claiming either is Spoofed.
func (c *Catalog) Agents() []Agent {
	out := make([]Agent, len(c.entries))
	for i, e := range c.entries {
		out[i] = e.Agent
		out[i].Lists = slices.Clone(e.Lists)
	}
	return out
}

// Agent is the catalog's agent whose token the user agent holds (the
// longest such token; the first in the catalog on a tie); nil for none.
// The *Agent is the catalog's own: read it, never change it.
func (c *Catalog) Agent(userAgent string) *Agent {
	if userAgent == "" {
		return nil
	}
	i, ok := c.cache.get(userAgent)
	if !ok {
		i = c.m.match(userAgent)
		c.cache.put(userAgent, i)
	}
	if i < 0 {
		return nil
	}
	return &c.entries[i].Agent
}

// Verify checks ip against a's lists: Verified when a list holds it;
// Spoofed when every list is loaded and none holds it, and always for a
// robots.txt-only token; Unverified when a has no lists, when one of them
// is not loaded (the address may be in it), or when ip is not valid.
func (c *Catalog) Verify(a *Agent, ip netip.Addr) Verification {
	if a == nil {
		return Unverified
	}
	if i, ok := c.byToken[a.Token]; ok && c.entries[i].tokenOnly {
		return Spoofed
	}
	if len(a.Lists) == 0 || !ip.IsValid() {
		return Unverified
	}
	r := c.ranges.Load()
	loaded := 0
	for _, l := range a.Lists {
		if !r.Has(l) {
			continue
		}
		loaded++
		if r.Contains(l, ip) {
			return Verified
		}
	}
	if loaded == len(a.Lists) {
		return Spoofed
	}
	return Unverified
}

// tokenMatcher finds tokens in a string in one pass: an Aho-Corasick automaton
// made a DFA over byte classes (the tokens' characters, ASCII case folded;
// every other byte one class).
type tokenMatcher struct {
	class   [256]uint8
	classes int
	delta   []uint16 // state*classes + class -> state
	best    []int16  // state -> the longest token ending there, -1 none
	length  []int    // token -> its length
}

func newTokenMatcher(tokens []string) *tokenMatcher {
	m := &tokenMatcher{classes: 1, length: make([]int, len(tokens))}
	for _, t := range tokens {
		for i := 0; i < len(t); i++ {
			b := foldByte(t[i])
			if m.class[b] == 0 {
				m.class[b] = uint8(m.classes)
				m.classes++
			}
		}
	}
	for b := 'A'; b <= 'Z'; b++ {
		m.class[b] = m.class[b+'a'-'A']
	}
	// The trie: goto[state][class], 0 for none (the root is never a target).
	type node struct {
		next []int
		fail int
		term int
	}
	nodes := []node{{next: make([]int, m.classes), term: -1}}
	for ti, t := range tokens {
		m.length[ti] = len(t)
		s := 0
		for i := 0; i < len(t); i++ {
			c := m.class[t[i]]
			if nodes[s].next[c] == 0 {
				nodes = append(nodes, node{next: make([]int, m.classes), term: -1})
				nodes[s].next[c] = len(nodes) - 1
			}
			s = nodes[s].next[c]
		}
		if nodes[s].term < 0 {
			nodes[s].term = ti
		}
	}
	m.delta = make([]uint16, len(nodes)*m.classes)
	m.best = make([]int16, len(nodes))
	better := func(a, b int) int { // the longer token; the first on a tie
		switch {
		case a < 0:
			return b
		case b < 0:
			return a
		case m.length[b] > m.length[a] || m.length[b] == m.length[a] && b < a:
			return b
		}
		return a
	}
	// Breadth first: a state's fail state is done before it.
	queue := []int{0}
	m.best[0] = -1
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		if s != 0 {
			m.best[s] = int16(better(nodes[s].term, int(m.best[nodes[s].fail])))
		}
		for c := 0; c < m.classes; c++ {
			t := nodes[s].next[c]
			switch {
			case t != 0 && c != 0:
				if s != 0 {
					nodes[t].fail = int(m.delta[nodes[s].fail*m.classes+c])
				}
				m.delta[s*m.classes+c] = uint16(t)
				queue = append(queue, t)
			case s != 0:
				m.delta[s*m.classes+c] = m.delta[nodes[s].fail*m.classes+c]
			}
		}
	}
	return m
}

func foldByte(b byte) byte {
	if 'A' <= b && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}

// match is the index of the longest token in s (the first on a tie), -1
// for none.
func (m *tokenMatcher) match(s string) int {
	state, found, n := 0, -1, 0
	for i := 0; i < len(s); i++ {
		state = int(m.delta[state*m.classes+int(m.class[s[i]])])
		if b := int(m.best[state]); b >= 0 && b != found {
			if l := m.length[b]; l > n || l == n && b < found {
				found, n = b, l
			}
		}
	}
	return found
}

// uaCache remembers the match of recent user agents: a fixed table of
// slots in pairs, a user agent kept in either slot of the pair its hash
// picks. Lock-free: a slot is swapped whole.
type uaCache struct {
	seed  maphash.Seed
	slots [uaCacheSlots]atomic.Pointer[uaCached]
}

const uaCacheSlots = 4096

// uaCacheMaxLen: longer user agents are matched every time, not kept.
const uaCacheMaxLen = 512

type uaCached struct {
	ua    string
	match int
}

func newUACache() *uaCache { return &uaCache{seed: maphash.MakeSeed()} }

// pair is the index of the first slot of ua's pair.
func (c *uaCache) pair(ua string) uint64 {
	return maphash.String(c.seed, ua) & (uaCacheSlots - 2)
}

func (c *uaCache) get(ua string) (int, bool) {
	if len(ua) > uaCacheMaxLen {
		return 0, false
	}
	i := c.pair(ua)
	for _, s := range []uint64{i, i + 1} {
		if e := c.slots[s].Load(); e != nil && e.ua == ua {
			return e.match, true
		}
	}
	return 0, false
}

// put keeps a copy of ua (the caller's may point into a whole log batch)
// in an empty slot of its pair, else in the first.
func (c *uaCache) put(ua string, match int) {
	if len(ua) > uaCacheMaxLen {
		return
	}
	i := c.pair(ua)
	if c.slots[i].Load() != nil && c.slots[i+1].Load() == nil {
		i++
	}
	c.slots[i].Store(&uaCached{ua: strings.Clone(ua), match: match})
}
