// Package traffic reads the logs of a monitored domain's site (Cloudflare
// Logpush, Vercel log drains, Fastly HTTPS logging, Apache and nginx
// combined log files), tells the requests of AI crawlers and assistants
// apart by their user agent, verifies each against the operator's
// published IP ranges, finds the visits an AI assistant referred, and
// keeps only aggregates: per day, page, agent and verification, and per
// day, page and assistant. No client address, query string or log line
// leaves this package.
package traffic

import (
	"net/netip"
	"time"
)

// Purpose is why an AI agent requests a page.
type Purpose string

// The purposes of sources.md's catalog.
const (
	Train Purpose = "train" // collects training data
	Index Purpose = "index" // builds an AI search index
	Fetch Purpose = "fetch" // fetches a page because a user asked
	Other Purpose = "other" // mixed, or not said
)

// Verification is what a request's address says of its claim to be an
// agent.
type Verification string

const (
	// Verified: from the operator's published ranges.
	Verified Verification = "verified"
	// Unverified: the operator publishes no ranges, or none are known.
	Unverified Verification = "unverified"
	// Spoofed: the operator publishes ranges, and the address is outside
	// them.
	Spoofed Verification = "spoofed"
)

// Agent is an AI crawler or assistant of the catalog.
type Agent struct {
	// Token is matched, case-insensitively, as a substring of the
	// User-Agent; it names the agent in aggregates (e.g. GPTBot).
	Token    string
	Operator string
	Purpose  Purpose
	// Lists name the IP range lists that verify the agent (Ranges); none
	// when its operator publishes none.
	Lists []string
}

// Line is one request of a log, as every source's reader gives it.
type Line struct {
	Time      time.Time
	Method    string
	Host      string
	Path      string // without the query
	Query     string // the raw query: read for utm_source, never kept
	Status    int    // 0 when the source gives none (-1 in Vercel's)
	Bytes     int64
	Referer   string
	UserAgent string
	ClientIP  netip.Addr // read to verify an agent, never kept
}

// Classifier tells which agent a request claims to be and whether its
// address bears the claim out.
type Classifier interface {
	// Agent is the catalog's agent the user agent names; nil for none.
	Agent(userAgent string) *Agent
	// Verify checks ip against a's lists.
	Verify(a *Agent, ip netip.Addr) Verification
}
