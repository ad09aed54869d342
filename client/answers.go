package client

// ScanAnswer is one answer behind a scan's figures, or a probe that
// failed (GET /v1/visibility/scans/{id}/answers).
type ScanAnswer struct {
	// Seq is the answer's place among the scan's answers, from 0.
	Seq    int          `json:"seq"`
	Prompt AnswerPrompt `json:"prompt"`
	// Run is which of the prompt's runs on the engine it is, from 0.
	Run    int    `json:"run"`
	Engine string `json:"engine"`
	Kind   string `json:"kind"`
	Text   string `json:"text"`
	// Error is why the probe failed (no answer), in words; null for an
	// answer. ErrorCategory is its category (rate_limited, refused_key,
	// provider_error, timeout, bad_request) and ErrorStatus the HTTP
	// status the engine answered (null when none came, or for an answer).
	Error         *string `json:"error"`
	ErrorCategory *string `json:"error_category"`
	ErrorStatus   *int    `json:"error_status"`
	// SourcesReported says whether the engine reported its sources; an
	// answer without them is not counted as citing nothing.
	SourcesReported bool             `json:"sources_reported"`
	Sources         []AnswerSource   `json:"sources"`
	Citations       []AnswerCitation `json:"citations"`
	// Queries are the web searches the engine says it ran.
	Queries   []string `json:"queries"`
	Mentioned bool     `json:"mentioned"`
	Cited     bool     `json:"cited"`
	// Position is the brand's rank among the brands the answer names, by
	// first mention; 0 when it is not named.
	Position    int      `json:"position"`
	Competitors []string `json:"competitors"`
	// Sentences are those that name the brand, each with its sentiment.
	Sentences []AnswerSentence `json:"sentences"`
	// Surface is the engine's (model, search_api or serp); Market the
	// market the prompt was asked in (null: the scan asked none); Absent
	// says the surface showed no AI answer for the prompt (a Google
	// search without an AI Overview): an answer that names and cites
	// nothing, not a failure. Answers kept before surfaces have none.
	Surface string  `json:"surface,omitempty"`
	Market  *Market `json:"market,omitempty"`
	Absent  bool    `json:"absent,omitempty"`
}

// AnswerPrompt is the prompt an answer answers: its place in the scan's
// prompt set, its text and its intent.
type AnswerPrompt struct {
	Index  int    `json:"index"`
	Text   string `json:"text"`
	Intent string `json:"intent"`
}

// AnswerSource is a page the engine reports it consulted.
type AnswerSource struct {
	URL    string `json:"url"`
	Title  string `json:"title"`
	Domain string `json:"domain"`
}

// AnswerCitation is a source the answer's text cites; Start and End are
// the byte offsets of the span it supports, null when the engine gives
// none, and Text the cited text when the engine gives it ("" else).
type AnswerCitation struct {
	URL    string `json:"url"`
	Title  string `json:"title"`
	Domain string `json:"domain"`
	Start  *int   `json:"start"`
	End    *int   `json:"end"`
	Text   string `json:"text"`
}

// AnswerSentence is a sentence that names the brand and its sentiment,
// VADER's compound score from -1 to 1.
type AnswerSentence struct {
	Text      string  `json:"text"`
	Sentiment float64 `json:"sentiment"`
}
