package traffic

import (
	"bufio"
	"io"
)

// ReadVercel reads a Vercel log drain's delivery, a JSON array of
// entries or NDJSON. Only entries with a proxy object are requests:
// others (a function's output, a build's) are skipped, uncounted. Of the
// proxy it reads timestamp (Unix milliseconds; the entry's when absent),
// method, host, path (with the query), userAgent (an array: its first
// string), referer, statusCode (-1, no response, is none), clientIp and
// responseByteSize.
func ReadVercel(r io.Reader, s Sink) error {
	var vp vercelParser
	parse := func(n int, rec []byte) {
		ok, reason := vp.parse(rec)
		switch {
		case reason != "":
			s.Malformed(n, rec, reason)
		case ok:
			s.Line(n, rec, &vp.l)
		}
	}
	br := bufio.NewReaderSize(r, 64<<10)
	c, err := firstByte(br)
	if err != nil || c == 0 {
		return err
	}
	if c == '[' {
		return eachElement(br, s, parse)
	}
	return eachLine(br, s, parse)
}

// vercelParser reads drain entries into l.
type vercelParser struct {
	js jsonScanner
	l  Line
}

// parse reads entry rec into vp.l: ok when it is a request, a reason
// when it is malformed, neither for an entry without proxy.
func (vp *vercelParser) parse(rec []byte) (ok bool, reason string) {
	vp.l = Line{}
	vp.js.reset()
	var proxy []byte
	var entryTime jsonValue
	err := vp.js.object(rec, func(key []byte, v jsonValue) bool {
		switch string(key) {
		case "proxy":
			if v.kind == jsonObject {
				proxy = v.raw
			}
		case "timestamp":
			entryTime = v
		}
		return true
	})
	if err != nil {
		return false, "not a JSON object"
	}
	if proxy == nil {
		return false, ""
	}
	var target []byte
	err = vp.js.object(proxy, func(key []byte, v jsonValue) bool {
		switch string(key) {
		case "timestamp":
			vp.l.Time = timeValue(v)
		case "method":
			vp.l.Method = str(v.text())
		case "host":
			vp.l.Host = str(v.text())
		case "path":
			target = v.text()
		case "userAgent":
			vp.l.UserAgent = vp.userAgent(v)
		case "referer":
			vp.l.Referer = str(v.text())
		case "statusCode":
			if n, ok := v.int(); ok && n > 0 && n < 1000 {
				vp.l.Status = int(n)
			}
		case "clientIp":
			vp.l.ClientIP = parseAddr(v.text())
		case "responseByteSize":
			if n, ok := v.int(); ok && n > 0 {
				vp.l.Bytes = n
			}
		}
		return true
	})
	if err != nil {
		return false, "proxy not a JSON object"
	}
	if vp.l.Time.IsZero() {
		vp.l.Time = timeValue(entryTime)
	}
	path, query := splitTarget(target)
	if len(path) == 0 {
		return false, "no path"
	}
	vp.l.Path, vp.l.Query = str(path), str(query)
	return true, ""
}

// userAgent is the first string of the array v, or v when it is one.
func (vp *vercelParser) userAgent(v jsonValue) string {
	if v.kind != jsonArray {
		return str(v.text())
	}
	var ua []byte
	vp.js.array(v.raw, func(e jsonValue) {
		if ua == nil && e.kind == jsonString && len(e.raw) > 0 {
			ua = e.raw
		}
	})
	return str(ua)
}
