package traffic

import (
	"bufio"
	"bytes"
	"io"
)

// ReadFastly reads a Fastly HTTPS logging batch in any json_format: 2
// (NDJSON), 1 (a JSON array) or 0 (lines of text in combined or Common
// Log Format, Fastly's default, which has no user agent: such lines are
// read as requests of no agent). A syslog prefix (<134>... name: ) before
// a line is skipped.
//
// The names of a JSON entry's fields are the customer's: these are read,
// case-insensitively (the first named of each, when several are given):
//
//	client address  client_ip, clientip, client, ip, remote_addr
//	time            timestamp, time, start_time, time_start, date
//	                (epoch seconds to nanoseconds, RFC 3339 with a zone
//	                offset, Z, UTC or GMT, or none for UTC, or a log's
//	                [10/Oct/2026:13:55:36 +0000])
//	method          method, request_method, request (VCL's req.request;
//	                a whole request line, "GET /a HTTP/1.1", gives the
//	                path too when no path field does)
//	host            host, request_host
//	path            url, path, uri, request_uri, req_url (with the query)
//	status          status, status_code, response_status, httpstatus
//	bytes           bytes, response_body_size, body_size, resp_body_size,
//	                response_bytes, bytes_written, byteswritten, size
//	referer         referer, referrer, http_referer, request_referer
//	user agent      user_agent, useragent, http_user_agent, ua,
//	                request_user_agent
func ReadFastly(r io.Reader, s Sink) error {
	br := bufio.NewReaderSize(r, 64<<10)
	c, err := firstByte(br)
	if err != nil || c == 0 {
		return err
	}
	var fp fastlyParser
	parse := func(n int, rec []byte) {
		if reason := fp.parse(rec); reason != "" {
			s.Malformed(n, rec, reason)
			return
		}
		s.Line(n, rec, &fp.l)
	}
	switch c {
	case '[':
		return eachElement(br, s, parse)
	case '{':
		return eachLine(br, s, parse)
	}
	var cp combinedParser
	return eachLine(br, s, func(n int, line []byte) {
		if reason := cp.parse(syslogBody(line)); reason != "" {
			s.Malformed(n, line, reason)
			return
		}
		s.Line(n, line, &cp.l)
	})
}

// syslogBody is line without a syslog prefix (<pri>timestamp host
// tag: ), line when it has none.
func syslogBody(line []byte) []byte {
	if len(line) < 3 || line[0] != '<' {
		return line
	}
	end := bytes.IndexByte(line, '>')
	if end < 2 || end > 4 {
		return line
	}
	if i := bytes.Index(line[end:], []byte(": ")); i >= 0 {
		return line[end+i+2:]
	}
	return line
}

// fastlyParser reads JSON entries into l.
type fastlyParser struct {
	js jsonScanner
	l  Line
}

// The fields of a Fastly entry, in order of preference within each.
const (
	fastlyIP = iota
	fastlyTime
	fastlyMethod
	fastlyHost
	fastlyPath
	fastlyStatus
	fastlyBytes
	fastlyReferer
	fastlyUA
	fastlyFields
)

// fastlyNames maps a lowercase field name to its field and rank (lower
// is preferred).
var fastlyNames = map[string][2]int{}

func init() {
	for field, names := range [fastlyFields][]string{
		fastlyIP:      {"client_ip", "clientip", "client", "ip", "remote_addr"},
		fastlyTime:    {"timestamp", "time", "start_time", "time_start", "date"},
		fastlyMethod:  {"method", "request_method", "request"},
		fastlyHost:    {"host", "request_host"},
		fastlyPath:    {"url", "path", "uri", "request_uri", "req_url"},
		fastlyStatus:  {"status", "status_code", "response_status", "httpstatus"},
		fastlyBytes:   {"bytes", "response_body_size", "body_size", "resp_body_size", "response_bytes", "bytes_written", "byteswritten", "size"},
		fastlyReferer: {"referer", "referrer", "http_referer", "request_referer"},
		fastlyUA:      {"user_agent", "useragent", "http_user_agent", "ua", "request_user_agent"},
	} {
		for rank, name := range names {
			fastlyNames[name] = [2]int{field, rank}
		}
	}
}

// parse reads entry rec into fp.l, or says why it cannot.
func (fp *fastlyParser) parse(rec []byte) (reason string) {
	fp.l = Line{}
	fp.js.reset()
	var vals [fastlyFields]jsonValue
	var rank [fastlyFields]int
	for i := range rank {
		rank[i] = 1 << 30
	}
	var lower [24]byte
	err := fp.js.object(rec, func(key []byte, v jsonValue) bool {
		if len(key) > len(lower) || v.kind == jsonNull {
			return true
		}
		k := lower[:len(key)]
		for i, c := range key {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			k[i] = c
		}
		if fr, ok := fastlyNames[string(k)]; ok && fr[1] < rank[fr[0]] {
			vals[fr[0]], rank[fr[0]] = v, fr[1]
		}
		return true
	})
	if err != nil {
		return "not a JSON object"
	}
	fp.l.ClientIP = parseAddr(vals[fastlyIP].text())
	fp.l.Time = timeValue(vals[fastlyTime])
	method := vals[fastlyMethod].text()
	target := vals[fastlyPath].text()
	if sp := bytes.IndexByte(method, ' '); sp > 0 {
		// A request line: method, target, protocol.
		if len(target) == 0 {
			target, _, _ = bytes.Cut(bytes.TrimLeft(method[sp+1:], " "), []byte(" "))
		}
		method = method[:sp]
	}
	fp.l.Method = str(method)
	fp.l.Host = str(vals[fastlyHost].text())
	if n, ok := vals[fastlyStatus].int(); ok && n > 0 && n < 1000 {
		fp.l.Status = int(n)
	}
	if n, ok := vals[fastlyBytes].int(); ok && n > 0 {
		fp.l.Bytes = n
	}
	fp.l.Referer = dash(vals[fastlyReferer].text())
	fp.l.UserAgent = dash(vals[fastlyUA].text())
	path, query := splitTarget(target)
	if len(path) == 0 {
		return "no path"
	}
	fp.l.Path, fp.l.Query = str(path), str(query)
	return ""
}
