package sdk

import (
	"net/http"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/aivis/aivis/core/netguard"
)

// HTTPClient is the client a connector makes its outbound calls with: the
// server's SSRF guard (no loopback, private, link-local or metadata
// addresses unless the operator allowed them, checked on the address
// connected to), no redirects followed, timeout per request.
func HTTPClient(timeout time.Duration) *http.Client {
	return Policy().Client(timeout)
}

// Policy is the outbound policy the server passed to this plugin.
func Policy() netguard.Policy {
	p := netguard.Policy{AllowPrivate: os.Getenv(EnvAllowPrivate) == "true"}
	for _, s := range strings.Split(os.Getenv(EnvAllowedTargets), ",") {
		if pr, err := netip.ParsePrefix(strings.TrimSpace(s)); err == nil {
			p.Allow = append(p.Allow, pr)
		}
	}
	return p
}
