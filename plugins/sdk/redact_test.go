package sdk_test

import (
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aivis/aivis/core/netguard"
	"github.com/aivis/aivis/plugins/sdk"
)

func TestRedact(t *testing.T) {
	for _, tc := range []struct {
		text    string
		secrets []string
		want    string
	}{
		{`Post "https://u:pw@api.example/mp/collect?api_secret=abc&x=1#top": EOF`, nil,
			`Post "https://api.example/mp/collect": EOF`},
		{"see http://user@host.example:8443/a?b and HTTPS://h.example?q", nil,
			"see http://host.example:8443/a and HTTPS://h.example"},
		{"token xoxb-1-2 and xoxb-1-2 again", []string{"xoxb-1-2"}, "token [redacted] and [redacted] again"},
		// As written, query- and path-escaped, JSON-escaped.
		{"a&b c+d/e a%26b+c%2Bd%2Fe a&b%20c+d%2Fe a\\u0026b c+d/e", []string{"a&b c+d/e"}, "[redacted] [redacted] [redacted] [redacted]"},
		// A secret URL: the whole, its path alone, its query alone.
		{`hook https://hooks.example/services/T1/B2/XyZ?s=1 then 404 /services/T1/B2/XyZ, s=1`,
			[]string{"https://hooks.example/services/T1/B2/XyZ?s=1"}, "hook [redacted] then 404 [redacted], [redacted]"},
		// JSON with its slashes escaped, as PHP writes it.
		{`no hook http:\/\/hooks.example\/services\/T1\/B2\/XyZ`, []string{"https://hooks.example/services/T1/B2/XyZ"},
			`no hook http:\/\/hooks.example[redacted]`},
		// The start of a secret where the text was cut, 4 bytes or more:
		// before an ellipsis or at the end.
		{"answered 400: see https://hooks.example/services/T1/B2/Xy… (activate it)", []string{"https://hooks.example/services/T1/B2/XyZ"},
			"answered 400: see [redacted]… (activate it)"},
		{"key sk-abcd… then sk-abc, sk-… and sk-", []string{"sk-abcdefgh"}, "key [redacted]… then sk-abc, sk-… and sk-"},
		{"key sk-abcd… then sk-abc", []string{"sk-abcdefgh"}, "key [redacted]… then [redacted]"},
		// A short secret is not found again inside a replacement.
		{"e then secret", []string{"e", "secret"}, "[redacted] th[redacted]n [redacted]"},
		{"nothing here", []string{""}, "nothing here"},
	} {
		if got := sdk.Redact(tc.text, tc.secrets...); got != tc.want {
			t.Errorf("Redact(%q, %q)\n = %q\nwant %q", tc.text, tc.secrets, got, tc.want)
		}
	}
}

func TestErrorText(t *testing.T) {
	dns := &url.Error{Op: "Post", URL: "https://u:pw@hooks.invalid/catch/123/abc?api_secret=s3",
		Err: &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Name: "hooks.invalid", Server: "10.0.0.53:53", Err: "no such host", IsNotFound: true}}}
	refused := &url.Error{Op: "Get", URL: "http://api.example:8080/v1?k=v",
		Err: &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(10, 9, 8, 7), Port: 8080},
			Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}}
	for err, want := range map[error]string{
		dns:     "POST https://hooks.invalid: the host name hooks.invalid does not resolve",
		refused: "GET http://api.example:8080: the connection was refused",
	} {
		if got := sdk.ErrorText(err); got != want {
			t.Errorf("ErrorText(%v)\n = %q\nwant %q", err, got, want)
		}
	}

	// A real refusal of the outbound guard names neither the address nor
	// the URL's secrets.
	_, err := netguard.Policy{}.Client(5 * time.Second).Get("http://user:pw@localhost:9/hook/s3cr3t?token=t0k3n")
	got := sdk.ErrorText(err)
	if !strings.HasPrefix(got, "GET http://localhost:9: ") || !strings.Contains(got, "not allowed") {
		t.Errorf("a refused address: %q (from %v)", got, err)
	}
	for _, f := range []string{"127.0.0.1", "::1", "pw", "s3cr3t", "t0k3n"} {
		if strings.Contains(got, f) {
			t.Errorf("a refused address: %q carries %q", got, f)
		}
	}
}
