package kit

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aivis/aivis/connectors/internal/kittest"
	"github.com/aivis/aivis/core/text"
	"github.com/aivis/aivis/plugins/sdk"
)

// FuzzByStatus: the usual reading of any answer (a status, a Retry-After,
// a body of any bytes). Its outcome is the status class's; its reason,
// text of at most kittest.MaxReason bytes, names who and the status and
// quotes the answer's snippet: the start of the body as text on one line,
// 200 characters at most (cut with an ellipsis); it waits what
// RetryAfter reads, never less than nothing, and some time when a number
// of seconds, one or more, is asked.
func FuzzByStatus(f *testing.F) {
	for _, s := range []struct {
		status     int
		retryAfter string
		body       string
	}{
		{200, "", ""}, {204, "", "ok"}, {400, "", `{"status":"error","message":"bad"}`}, {410, "", "Gone"},
		{429, "30", "slow down"}, {429, "Wed, 21 Oct 2015 07:28:00 GMT", ""}, {503, "0.5", "<html>\n<body>busy</body>\n</html>"},
		{503, "NaN", ""}, {429, "-1", ""}, {408, " 7 ", ""},
		{400, "", "bad\x00request \xff\xfe"}, {400, "", strings.Repeat("é", 300)}, {400, "", strings.Repeat("a ", 300)},
		{0, "", ""}, {-1, "", ""}, {999, "", "x"}, {302, "", ""},
	} {
		f.Add(s.status, s.retryAfter, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, status int, retryAfter string, body []byte) {
		r := Response{Status: status, Header: http.Header{"Retry-After": {retryAfter}}, Body: body}
		res := ByStatus(r, "The hook")
		if want := kittest.ByStatus(status); res.Outcome != want {
			t.Fatalf("%d: %v, want %v", status, res.Outcome, want)
		}
		said := strings.Join(strings.Fields(text.Clean(string(body), 0)), " ")
		snippet := r.Snippet()
		if n := utf8.RuneCountInString(said); n <= 200 && snippet != said ||
			n > 200 && (utf8.RuneCountInString(snippet) != 200 || !strings.HasSuffix(snippet, "…") || !strings.HasPrefix(said, strings.TrimSuffix(snippet, "…"))) {
			t.Fatalf("the snippet of %q is %q", body, snippet)
		}
		if res.Outcome != sdk.Delivered && (!text.Valid(res.Reason) || len(res.Reason) > kittest.MaxReason ||
			!strings.HasPrefix(res.Reason, "The hook answered "+strconv.Itoa(status)) || !strings.HasSuffix(res.Reason, ": "+snippet)) {
			t.Fatalf("%d %q: the reason %q", status, body, res.Reason)
		}
		wait := RetryAfter(r.Header)
		if s, err := strconv.ParseFloat(strings.TrimSpace(retryAfter), 64); wait < 0 || err == nil && s >= 1 && wait < time.Second {
			t.Fatalf("Retry-After %q: a wait of %s", retryAfter, wait)
		}
		if Retryable(status) && res.RetryAfter != wait {
			t.Fatalf("%d: waits %s where Retry-After %q says %s", status, res.RetryAfter, retryAfter, wait)
		}
	})
}
