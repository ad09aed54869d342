package traffic

import (
	"bytes"
	"io"
	"net/netip"
	"time"
)

// ReadCombined reads a log in Apache's or nginx's combined format, or in
// Common Log Format (no referer or user agent), one request a line:
//
//	%h %l %u [%t] "%r" %>s %b "%{Referer}i" "%{User-Agent}i" ...
//
// "-" is an absent field; quotes within a field are escaped (\" or
// \x22); fields after the user agent are ignored. A first field that is
// no address (a host name) leaves ClientIP unset.
func ReadCombined(r io.Reader, s Sink) error {
	var cp combinedParser
	return eachLine(r, s, func(n int, line []byte) {
		if reason := cp.parse(line); reason != "" {
			s.Malformed(n, line, reason)
			return
		}
		s.Line(n, line, &cp.l)
	})
}

// combinedParser reads combined lines into l, unescaping fields in buf.
type combinedParser struct {
	l   Line
	buf []byte
}

// parse reads line into cp.l; it returns why when it cannot.
func (cp *combinedParser) parse(line []byte) (reason string) {
	cp.l = Line{}
	cp.buf = cp.buf[:0]
	b := bytes.TrimLeft(line, " \t")
	sp := bytes.IndexByte(b, ' ')
	if sp <= 0 {
		return "truncated line"
	}
	cp.l.ClientIP = parseAddr(b[:sp])
	b = b[sp:]
	open := bytes.IndexByte(b, '[')
	if open < 0 {
		return "no time"
	}
	b = b[open+1:]
	end := bytes.IndexByte(b, ']')
	if end < 0 {
		return "no time"
	}
	t, ok := parseCLFTime(b[:end])
	if !ok {
		return "unreadable time"
	}
	cp.l.Time = t
	b = bytes.TrimLeft(b[end+1:], " ")
	req, b, ok := cp.quoted(b)
	if !ok {
		return "no request line"
	}
	if !cp.request(req) {
		return "unreadable request line"
	}
	var tok []byte
	tok, b = token(b)
	status, ok := number(tok)
	if !ok || status > 999 {
		return "unreadable status"
	}
	cp.l.Status = int(status)
	tok, b = token(b)
	size, ok := number(tok)
	if !ok {
		return "unreadable size"
	}
	cp.l.Bytes = size
	b = bytes.TrimLeft(b, " ")
	if len(b) == 0 || b[0] != '"' {
		return "" // Common Log Format, or fields of another format
	}
	ref, b, ok := cp.quoted(b)
	if !ok {
		return "unterminated referer"
	}
	cp.l.Referer = dash(ref)
	b = bytes.TrimLeft(b, " ")
	if len(b) == 0 || b[0] != '"' {
		return ""
	}
	ua, _, ok := cp.quoted(b)
	if !ok {
		return "unterminated user agent"
	}
	cp.l.UserAgent = dash(ua)
	return ""
}

// request splits a request line (method, target, protocol) into cp.l.
func (cp *combinedParser) request(req []byte) bool {
	sp := bytes.IndexByte(req, ' ')
	if sp <= 0 {
		return false
	}
	cp.l.Method = str(req[:sp])
	target := bytes.TrimLeft(req[sp+1:], " ")
	if sp := bytes.IndexByte(target, ' '); sp >= 0 {
		target = target[:sp]
	}
	path, query := splitTarget(target)
	if len(path) == 0 {
		return false
	}
	cp.l.Path, cp.l.Query = str(path), str(query)
	return true
}

// quoted reads the quoted field b starts with and returns it, unescaped,
// and what follows it.
func (cp *combinedParser) quoted(b []byte) (field, rest []byte, ok bool) {
	if len(b) == 0 || b[0] != '"' {
		return nil, b, false
	}
	escaped := false
	for i := 1; i < len(b); i++ {
		switch b[i] {
		case '\\':
			escaped = true
			i++
		case '"':
			field = b[1:i]
			if escaped {
				start := len(cp.buf)
				cp.buf = unescapeLog(cp.buf, field)
				field = cp.buf[start:]
			}
			return field, b[i+1:], true
		}
	}
	return nil, b, false
}

// unescapeLog appends f to dst with Apache's and nginx's escapes (\",
// \\, \xHH, \n, \r, \t) undone.
func unescapeLog(dst, f []byte) []byte {
	for i := 0; i < len(f); i++ {
		c := f[i]
		if c != '\\' || i+1 == len(f) {
			dst = append(dst, c)
			continue
		}
		i++
		switch f[i] {
		case 'x':
			if i+2 < len(f) {
				if h, ok := hexPair(f[i+1], f[i+2]); ok {
					dst = append(dst, h)
					i += 2
					continue
				}
			}
			dst = append(dst, '\\', 'x')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		default:
			dst = append(dst, f[i])
		}
	}
	return dst
}

func hexPair(a, b byte) (byte, bool) {
	x, ok1 := hexDigit(a)
	y, ok2 := hexDigit(b)
	return x<<4 | y, ok1 && ok2
}

func hexDigit(c byte) (byte, bool) {
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

// token returns b's next field separated by spaces, and what follows.
func token(b []byte) (tok, rest []byte) {
	b = bytes.TrimLeft(b, " ")
	if sp := bytes.IndexByte(b, ' '); sp >= 0 {
		return b[:sp], b[sp:]
	}
	return b, nil
}

// number reads a decimal count; "-" and an absent field are 0.
func number(b []byte) (int64, bool) {
	if len(b) == 0 || (len(b) == 1 && b[0] == '-') {
		return 0, true
	}
	if len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// dash is f as a string, "" for "-".
func dash(f []byte) string {
	if len(f) == 1 && f[0] == '-' {
		return ""
	}
	return str(f)
}

// parseAddr reads an address, invalid when b is none (a host name, "-").
func parseAddr(b []byte) netip.Addr {
	if len(b) == 0 || !(b[0] == ':' || hexStart(b[0])) {
		return netip.Addr{}
	}
	a, err := netip.ParseAddr(str(b))
	if err != nil {
		return netip.Addr{}
	}
	return a
}

func hexStart(c byte) bool {
	_, ok := hexDigit(c)
	return ok
}

var months = [...]string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}

// parseCLFTime reads a log's time, 10/Oct/2026:13:55:36 +0000, in UTC.
func parseCLFTime(b []byte) (time.Time, bool) {
	if len(b) != 26 || b[2] != '/' || b[6] != '/' || b[11] != ':' || b[14] != ':' || b[17] != ':' || b[20] != ' ' {
		return time.Time{}, false
	}
	month := 0
	for i, m := range months {
		if string(b[3:6]) == m {
			month = i + 1
			break
		}
	}
	day, ok1 := digits(b[0:2])
	year, ok2 := digits(b[7:11])
	hour, ok3 := digits(b[12:14])
	minute, ok4 := digits(b[15:17])
	sec, ok5 := digits(b[18:20])
	off, ok6 := zoneOffset(b[21:])
	if month == 0 || !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || day < 1 || day > 31 || hour > 23 || minute > 59 || sec > 60 {
		return time.Time{}, false
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, 0, time.UTC)
	return t.Add(-time.Duration(off) * time.Second), true
}

// zoneOffset reads ±hhmm or ±hh:mm in seconds east of UTC.
func zoneOffset(b []byte) (int, bool) {
	if len(b) == 6 && b[3] == ':' {
		b = []byte{b[0], b[1], b[2], b[4], b[5]}
	}
	if len(b) != 5 || (b[0] != '+' && b[0] != '-') {
		return 0, false
	}
	h, ok1 := digits(b[1:3])
	m, ok2 := digits(b[3:5])
	if !ok1 || !ok2 || h > 23 || m > 59 {
		return 0, false
	}
	off := h*3600 + m*60
	if b[0] == '-' {
		off = -off
	}
	return off, true
}

// digits reads b, all decimal digits.
func digits(b []byte) (int, bool) {
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, len(b) > 0
}
