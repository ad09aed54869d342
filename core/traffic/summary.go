package traffic

import "time"

// Summary is a domain's AI crawler visits and AI referrals over days
// [From, To): what GET /v1/domains/{id}/traffic answers and the
// dashboard's domain page draws.
type Summary struct {
	DomainID string
	From, To time.Time // UTC midnights
	// Agents are the agents seen, most requests first: each one's totals
	// and its requests per day.
	Agents []AgentTraffic
	// Purposes are the requests per purpose (train, index, fetch, other)
	// and per day, spoofed requests left out.
	Purposes []PurposeTraffic
	// TopPages are the pages AI agents requested most (spoofed requests
	// left out), at most TopPages of them.
	TopPages []PageTraffic
	// Problems are the pages on which AI agents (spoofed left out) got
	// 4xx or 5xx answers, most first: per page, agent and status class.
	Problems []Problem
	// Referrals are the visits each assistant sent, most first, and per
	// day.
	Referrals []AssistantTraffic
	// LastBatch is when the latest batch came (nil: none yet).
	LastBatch *time.Time
}

// TopPages is how many pages Summary.TopPages holds at most.
const TopPages = 20

// Statuses are the names of the status classes of store.CrawlerHits's
// Status, in its order.
var Statuses = [5]string{"2xx", "3xx", "4xx", "5xx", "none"}

// AgentTraffic is one agent's requests.
type AgentTraffic struct {
	Agent    string
	Operator string
	Purpose  Purpose
	Hits     int64
	// ByVerification counts the requests verified, unverified and
	// spoofed.
	ByVerification map[Verification]int64
	Status         [5]int64 // by class, as Statuses names them
	Bytes          int64
	Days           []DayCount
}

// DayCount is a count on one day.
type DayCount struct {
	Day   time.Time
	Count int64
}

// PurposeTraffic is the requests of one purpose.
type PurposeTraffic struct {
	Purpose Purpose
	Hits    int64
	Days    []DayCount
}

// PageTraffic is one page's AI agent requests.
type PageTraffic struct {
	Page   string
	Hits   int64
	Agents int // how many agents requested it
}

// Problem is what AI agents got wrong on one page.
type Problem struct {
	Page   string
	Agent  string
	Status string // "4xx" or "5xx"
	Hits   int64
}

// AssistantTraffic is the visits one assistant referred.
type AssistantTraffic struct {
	Assistant string
	Visits    int64
	Days      []DayCount
}

// Page is one page of a domain as GET /v1/domains/{id}/traffic/pages
// joins it: the agents that requested it, the engines whose answers cited
// it in the domain's latest completed scan, and the assistants that sent
// visitors to it.
type Page struct {
	Page      string
	Crawls    []AgentHits      // by agent, spoofed left out, most first
	CitedBy   []EngineCitation // by engine label, most first
	Referrals []AssistantVisits
}

// AgentHits is an agent's requests of a page.
type AgentHits struct {
	Agent string
	Hits  int64
	// Errors are the 4xx and 5xx answers among them.
	Errors int64
}

// EngineCitation is how many of an engine's answers cited a page.
type EngineCitation struct {
	Engine  string
	Answers int
}

// AssistantVisits is the visits an assistant sent to a page.
type AssistantVisits struct {
	Assistant string
	Visits    int64
}
