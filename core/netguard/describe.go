package netguard

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"syscall"
)

// Describe says why an outbound call failed in words that may leave the
// server: the API, the dashboard, delivery logs and logs. It never names
// an address, the one a host name resolved to (the guard refuses to say
// which: that would map the network behind it), the server's own (a read
// error names both ends) or its resolver's (a lookup error names it), nor
// the URL called, whose query or path may carry a secret; callers name the
// destination themselves.
func Describe(err error) string {
	if err == nil {
		return ""
	}
	var (
		dns   *net.DNSError
		cert  *tls.CertificateVerificationError
		host  x509.HostnameError
		auth  x509.UnknownAuthorityError
		inval x509.CertificateInvalidError
		rec   tls.RecordHeaderError
		op    *net.OpError
		ne    net.Error
	)
	switch {
	case errors.Is(err, ErrBlocked):
		return "the host's address is not allowed: only public addresses are reached"
	case errors.As(err, &dns) && dns.IsNotFound:
		return "the host name " + dns.Name + " does not resolve"
	case errors.As(err, &dns) && dns.IsTimeout:
		return "looking up the host name " + dns.Name + " timed out"
	case errors.As(err, &dns):
		return "the host name " + dns.Name + " could not be looked up"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded),
		errors.As(err, &ne) && ne.Timeout():
		return "no response in time"
	case errors.Is(err, context.Canceled):
		return "the call was cancelled"
	case errors.As(err, &host):
		return "the host's TLS certificate is not valid for its name: " + withoutAddresses(host.Error())
	case errors.As(err, &auth):
		return "the host's TLS certificate is signed by an unknown authority"
	case errors.As(err, &inval):
		return "the host's TLS certificate is not valid: " + withoutAddresses(inval.Error())
	case errors.As(err, &cert):
		return "the host's TLS certificate could not be verified"
	case errors.As(err, &rec):
		return "the host did not answer with TLS"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "the connection was refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "the connection was reset"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "the host is unreachable"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the connection closed before a complete answer"
	case errors.As(err, &op):
		return "the connection failed (" + op.Op + ")"
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return withoutAddresses(err.Error())
}

// withoutAddresses replaces every IP address (with or without a port) in
// s: what an error type not known to Describe may carry.
func withoutAddresses(s string) string {
	f := strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune(" ,\"'()<>-", r) })
	for _, w := range f {
		w = strings.TrimRight(w, ":;.")
		if isAddress(w) {
			s = strings.ReplaceAll(s, w, "[address]")
		}
	}
	return s
}

func isAddress(w string) bool {
	if _, err := netip.ParseAddrPort(w); err == nil {
		return true
	}
	_, err := netip.ParseAddr(strings.Trim(w, "[]"))
	return err == nil
}
