package sdk

import (
	"cmp"
	"encoding/json"
	"errors"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/aivis/aivis/core/netguard"
)

// Redacted stands where Redact removed a secret.
const Redacted = "[redacted]"

// urlPattern finds the URLs in a text; Go quotes the URL of its errors,
// so a quote ends one.
var urlPattern = regexp.MustCompile("(?i)\\b[a-z][a-z0-9+.-]*://[^\\s\"'<>`]+")

// Redact makes text fit to leave a connector (a Result's Reason, a log
// line): each of secrets, as written and URL- or JSON-encoded, is replaced
// by [redacted], and so is the path and the query of a secret that is a
// URL (a hook URL's path is its credential), and the start of any of
// these where the text was cut (see cutStarts); every URL left in the
// text loses its user name, password, query and fragment. The server does
// the same to every reason with the connection's secret settings, so a
// connector that forgets is still safe, but its logs are its own.
func Redact(text string, secrets ...string) string {
	var forms []string
	for _, s := range secrets {
		forms = append(forms, secretForms(s)...)
	}
	if len(forms) > 0 {
		// The longest first, in one pass: a secret URL before its path,
		// and nothing is found again inside a replacement.
		slices.SortFunc(forms, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
		forms = slices.Compact(forms)
		pairs := make([]string, 0, 2*len(forms))
		for _, f := range forms {
			pairs = append(pairs, f, Redacted)
		}
		text = cutStarts(strings.NewReplacer(pairs...).Replace(text), forms)
	}
	return urlPattern.ReplaceAllStringFunc(text, stripURL)
}

// minCut is the shortest start of a secret cutStarts redacts.
const minCut = 4

// cutStarts redacts in text the start (minCut bytes or more) of one of
// forms, the longest first, that ends where the text was cut: before an
// ellipsis, which a reason cut to a length ends with (the part of an
// answer it quotes may end inside a secret), or at the text's end.
func cutStarts(text string, forms []string) string {
	var b strings.Builder
	for {
		part, rest, cut := strings.Cut(text, "…")
		b.WriteString(cutStart(part, forms))
		if !cut {
			return b.String()
		}
		b.WriteString("…")
		text = rest
	}
}

// cutStart is s with its end redacted if it is the start of one of forms.
func cutStart(s string, forms []string) string {
	for _, f := range forms {
		for n := min(len(f)-1, len(s)); n >= minCut; n-- {
			if strings.HasSuffix(s, f[:n]) {
				return s[:len(s)-n] + Redacted
			}
		}
	}
	return s
}

// secretForms are the ways a secret may be written in a text.
func secretForms(s string) []string {
	if s == "" {
		return nil
	}
	forms := []string{s}
	if u, err := url.Parse(s); err == nil && u.Host != "" {
		if p := u.EscapedPath(); len(p) > 1 {
			forms = append(forms, p, u.Path)
		}
		if pw, ok := u.User.Password(); ok {
			forms = append(forms, pw)
		}
		forms = append(forms, u.RawQuery, u.Fragment)
	}
	var out []string
	for _, f := range forms {
		j, _ := json.Marshal(f)
		// JSON as Go writes it, and as others do with "/" escaped too.
		js := string(j[1 : len(j)-1])
		out = append(out, f, url.QueryEscape(f), url.PathEscape(f), js, strings.ReplaceAll(js, "/", `\/`))
	}
	return slices.DeleteFunc(out, func(f string) bool { return f == "" })
}

// stripURL is a URL without its user information, query and fragment.
func stripURL(u string) string {
	i := strings.Index(u, "://") + len("://")
	rest := u[i:]
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	host, path := rest[:end], rest[end:]
	if at := strings.LastIndexByte(host, '@'); at >= 0 {
		host = host[at+1:]
	}
	if q := strings.IndexAny(path, "?#"); q >= 0 {
		path = path[:q]
	}
	return u[:i] + host + path
}

// ErrorText says what went wrong with a request that got no answer, fit
// for a Result's Reason: the method, the scheme and host it went to, and
// what happened (netguard.Describe), but nothing else of its URL (the
// path, query or user information may be credentials), nor the addresses
// the name resolved to or the resolver's.
func ErrorText(err error) string {
	var to string
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil && u.Host != "" {
			to = strings.ToUpper(ue.Op) + " " + u.Scheme + "://" + u.Host + ": "
		}
	}
	return to + Redact(netguard.Describe(err))
}
