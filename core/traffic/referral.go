package traffic

import "strings"

// assistantHosts are the referer hosts of sources.md 4b, each matched
// anchored: the host itself or a subdomain of it (www.perplexity.ai), never
// a host that merely ends the same (evilchatgpt.com).
var assistantHosts = []struct{ domain, id string }{
	{"chatgpt.com", "chatgpt"},
	{"chat.openai.com", "chatgpt"},
	{"perplexity.ai", "perplexity"},
	{"gemini.google.com", "gemini"},
	{"copilot.microsoft.com", "copilot"},
	{"claude.ai", "claude"},
	{"grok.com", "grok"},
	{"meta.ai", "meta_ai"},
	{"chat.mistral.ai", "mistral"},
	{"chat.deepseek.com", "deepseek"},
	{"you.com", "you"},
	{"phind.com", "phind"},
	{"poe.com", "poe"},
	{"kagi.com", "kagi"},
}

// Assistant tells which AI assistant referred a visit, from its Referer
// and its raw query string: a utm_source naming an assistant (ChatGPT
// appends utm_source=chatgpt.com to the links it cites; "chatgpt" and the
// other assistants' hosts are taken too) wins over the Referer; else the
// Referer's host, matched anchored. The id is short and stable (chatgpt,
// perplexity, gemini, copilot, claude, grok, meta_ai, mistral, deepseek,
// you, phind, poe, kagi).
//
// Google's AI Overviews and AI Mode send www.google.com, as organic
// Google does, and Bing's Copilot Search www.bing.com: they cannot be told
// apart and are not referrals here. Many assistant clicks (mobile apps
// above all) come with no Referer at all: counts are a floor.
//
// It allocates nothing.
func Assistant(referer, query string) (assistant string, ok bool) {
	if v, found := utmSource(query); found {
		if id, ok := utmAssistant(v); ok {
			return id, true
		}
	}
	return hostAssistant(refererHost(referer))
}

// Assistants lists the ids Assistant gives, each once.
func Assistants() []string {
	var ids []string
	for _, h := range assistantHosts {
		if len(ids) == 0 || ids[len(ids)-1] != h.id {
			ids = append(ids, h.id)
		}
	}
	return ids
}

// utmSource is the raw value of the query's first utm_source parameter.
func utmSource(query string) (string, bool) {
	query = strings.TrimPrefix(query, "?")
	for query != "" {
		var part string
		part, query, _ = strings.Cut(query, "&")
		key, value, _ := strings.Cut(part, "=")
		if strings.EqualFold(key, "utm_source") {
			return value, true
		}
	}
	return "", false
}

// utmAssistant reads a utm_source value: "chatgpt" or an assistant's host,
// percent-encoded or not.
func utmAssistant(v string) (string, bool) {
	if strings.ContainsAny(v, "%+") {
		var buf [64]byte
		n, ok := utmUnescape(buf[:], v)
		if !ok {
			return "", false
		}
		return utmName(string(buf[:n]))
	}
	return utmName(v)
}

func utmName(v string) (string, bool) {
	v = strings.TrimSpace(v)
	if strings.EqualFold(v, "chatgpt") {
		return "chatgpt", true
	}
	return hostAssistant(refererHost(v))
}

// unescape percent-decodes s into buf; false when it does not fit or is
// malformed.
func utmUnescape(buf []byte, s string) (int, bool) {
	n := 0
	for i := 0; i < len(s); i++ {
		if n == len(buf) {
			return 0, false
		}
		switch c := s[i]; c {
		case '+':
			buf[n] = ' '
		case '%':
			if i+2 >= len(s) {
				return 0, false
			}
			hi, ok1 := utmHexDigit(s[i+1])
			lo, ok2 := utmHexDigit(s[i+2])
			if !ok1 || !ok2 {
				return 0, false
			}
			buf[n] = hi<<4 | lo
			i += 2
		default:
			buf[n] = c
		}
		n++
	}
	return n, true
}

func utmHexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// refererHost is the host of a Referer (a URL, or a bare host and path):
// no scheme, user, port, path, query or trailing dot.
func refererHost(ref string) string {
	s := strings.TrimSpace(ref)
	if i := strings.Index(s, "://"); i >= 0 {
		s = s[i+3:]
	} else {
		s = strings.TrimPrefix(s, "//")
	}
	if i := strings.IndexAny(s, "/?#"); i >= 0 {
		s = s[:i]
	}
	if i := strings.LastIndexByte(s, '@'); i >= 0 {
		s = s[i+1:]
	}
	if strings.HasPrefix(s, "[") { // an IPv6 literal
		return ""
	}
	if i := strings.IndexByte(s, ':'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSuffix(s, ".")
}

// hostAssistant matches host, case-insensitively, against assistantHosts.
func hostAssistant(host string) (string, bool) {
	if host == "" {
		return "", false
	}
	for _, h := range assistantHosts {
		d := h.domain
		if len(host) < len(d) {
			continue
		}
		cut := len(host) - len(d)
		if strings.EqualFold(host[cut:], d) && (cut == 0 || host[cut-1] == '.') {
			return h.id, true
		}
	}
	return "", false
}
