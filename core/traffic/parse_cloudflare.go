package traffic

import (
	"bytes"
	"io"
)

// ReadCloudflare reads a Cloudflare Logpush batch of the http_requests
// dataset in NDJSON, one object a line. The fields read are ClientIP,
// ClientRequestHost, ClientRequestMethod, ClientRequestPath,
// ClientRequestURI (the query, and the path when ClientRequestPath is
// absent), ClientRequestUserAgent, ClientRequestReferer,
// EdgeResponseStatus, EdgeResponseBytes and EdgeStartTimestamp (unixnano
// or unix, an integer, or an RFC 3339 string); a null is an absent
// value and other fields are ignored. The validation object Cloudflare
// sends when a job is made is skipped.
func ReadCloudflare(r io.Reader, s Sink) error {
	var cp cloudflareParser
	return eachLine(r, s, func(n int, line []byte) {
		ok, reason := cp.parse(line)
		switch {
		case reason != "":
			s.Malformed(n, line, reason)
		case ok:
			s.Line(n, line, &cp.l)
		}
	})
}

// IsCloudflareValidation tells whether content, decompressed, is the
// object Cloudflare uploads to check a Logpush destination.
func IsCloudflareValidation(content []byte) bool {
	content = bytes.TrimSpace(content)
	if end, err := skipComposite(content, 0); err != nil || end != len(content) {
		return false
	}
	var js jsonScanner
	fields, tests := 0, false
	err := js.object(content, func(key []byte, v jsonValue) bool {
		fields++
		tests = string(key) == "content" && v.kind == jsonString && string(v.raw) == "tests"
		return true
	})
	return err == nil && fields == 1 && tests
}

// cloudflareParser reads Logpush records into l.
type cloudflareParser struct {
	js jsonScanner
	l  Line
}

// parse reads line into cp.l: ok when it is a request, a reason when it
// is malformed, neither for the validation object.
func (cp *cloudflareParser) parse(line []byte) (ok bool, reason string) {
	cp.l = Line{}
	cp.js.reset()
	var path, uri []byte
	validation := false
	err := cp.js.object(line, func(key []byte, v jsonValue) bool {
		switch string(key) {
		case "ClientIP":
			cp.l.ClientIP = parseAddr(v.text())
		case "ClientRequestHost":
			cp.l.Host = str(v.text())
		case "ClientRequestMethod":
			cp.l.Method = str(v.text())
		case "ClientRequestPath":
			path = v.text()
		case "ClientRequestURI":
			uri = v.text()
		case "ClientRequestUserAgent":
			cp.l.UserAgent = str(v.text())
		case "ClientRequestReferer":
			cp.l.Referer = str(v.text())
		case "EdgeResponseStatus":
			if n, ok := v.int(); ok && n > 0 && n < 1000 {
				cp.l.Status = int(n)
			}
		case "EdgeResponseBytes":
			if n, ok := v.int(); ok && n > 0 {
				cp.l.Bytes = n
			}
		case "EdgeStartTimestamp":
			cp.l.Time = timeValue(v)
		case "content":
			validation = v.kind == jsonString && string(v.raw) == "tests"
		}
		return true
	})
	if err != nil {
		return false, "not a JSON object"
	}
	uriPath, query := splitTarget(uri)
	if path == nil {
		path = uriPath
	} else if i := bytes.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	if validation && len(path) == 0 && cp.l.Time.IsZero() {
		return false, ""
	}
	if len(path) == 0 {
		return false, "no path"
	}
	cp.l.Path, cp.l.Query = str(path), str(query)
	return true, ""
}
