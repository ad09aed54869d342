package traffic

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math"
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// The readers of JSON sources read only the fields they need, in place:
// a record's strings are slices of the record, or of a buffer when they
// hold escapes, never values allocated one by one.

// jsonKind is the kind of a JSON value.
type jsonKind byte

const (
	jsonNull jsonKind = iota
	jsonString
	jsonNumber
	jsonBool
	jsonObject
	jsonArray
)

// jsonValue is a value of a record: a string's content (unescaped), a
// number's or a literal's text, an object's or an array's whole text.
type jsonValue struct {
	kind jsonKind
	raw  []byte
}

var errJSON = errors.New("not valid JSON")

// jsonScanner reads records, unescaping strings into buf.
type jsonScanner struct {
	buf []byte
}

// reset forgets the strings of the last record.
func (js *jsonScanner) reset() { js.buf = js.buf[:0] }

// object calls fn with each field of the object b holds, in order, and
// stops at fn's false.
func (js *jsonScanner) object(b []byte, fn func(key []byte, v jsonValue) bool) error {
	i := skipSpace(b, 0)
	if i == len(b) || b[i] != '{' {
		return errJSON
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return nil
	}
	for {
		if i == len(b) || b[i] != '"' {
			return errJSON
		}
		key, next, err := js.str(b, i)
		if err != nil {
			return err
		}
		i = skipSpace(b, next)
		if i == len(b) || b[i] != ':' {
			return errJSON
		}
		v, next, err := js.value(b, skipSpace(b, i+1))
		if err != nil {
			return err
		}
		if !fn(key, v) {
			return nil
		}
		i = skipSpace(b, next)
		if i == len(b) {
			return errJSON
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return nil
		default:
			return errJSON
		}
	}
}

// array calls fn with each element of the array b holds.
func (js *jsonScanner) array(b []byte, fn func(v jsonValue)) error {
	i := skipSpace(b, 0)
	if i == len(b) || b[i] != '[' {
		return errJSON
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return nil
	}
	for {
		v, next, err := js.value(b, i)
		if err != nil {
			return err
		}
		fn(v)
		i = skipSpace(b, next)
		if i == len(b) {
			return errJSON
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case ']':
			return nil
		default:
			return errJSON
		}
	}
}

// value reads the value at b[i:].
func (js *jsonScanner) value(b []byte, i int) (jsonValue, int, error) {
	if i >= len(b) {
		return jsonValue{}, i, errJSON
	}
	switch c := b[i]; {
	case c == '"':
		s, next, err := js.str(b, i)
		return jsonValue{kind: jsonString, raw: s}, next, err
	case c == '{' || c == '[':
		end, err := skipComposite(b, i)
		kind := jsonObject
		if c == '[' {
			kind = jsonArray
		}
		return jsonValue{kind: kind, raw: b[i:end]}, end, err
	case c == '-' || ('0' <= c && c <= '9'):
		j := i + 1
		for j < len(b) && (('0' <= b[j] && b[j] <= '9') || b[j] == '.' || b[j] == 'e' || b[j] == 'E' || b[j] == '+' || b[j] == '-') {
			j++
		}
		return jsonValue{kind: jsonNumber, raw: b[i:j]}, j, nil
	case bytes.HasPrefix(b[i:], []byte("null")):
		return jsonValue{kind: jsonNull}, i + 4, nil
	case bytes.HasPrefix(b[i:], []byte("true")):
		return jsonValue{kind: jsonBool, raw: b[i : i+4]}, i + 4, nil
	case bytes.HasPrefix(b[i:], []byte("false")):
		return jsonValue{kind: jsonBool, raw: b[i : i+5]}, i + 5, nil
	}
	return jsonValue{}, i, errJSON
}

// str reads the string at b[i:] (b[i] is its quote): its content, in
// place when it has no escape.
func (js *jsonScanner) str(b []byte, i int) ([]byte, int, error) {
	start := i + 1
	for j := start; j < len(b); j++ {
		switch b[j] {
		case '"':
			return b[start:j], j + 1, nil
		case '\\':
			return js.unescape(b, start)
		}
	}
	return nil, len(b), errJSON
}

// unescape reads the string whose content starts at b[start:] into buf.
func (js *jsonScanner) unescape(b []byte, start int) ([]byte, int, error) {
	from := len(js.buf)
	for j := start; j < len(b); j++ {
		c := b[j]
		if c == '"' {
			return js.buf[from:], j + 1, nil
		}
		if c != '\\' {
			js.buf = append(js.buf, c)
			continue
		}
		j++
		if j == len(b) {
			break
		}
		switch b[j] {
		case '"', '\\', '/':
			js.buf = append(js.buf, b[j])
		case 'b':
			js.buf = append(js.buf, '\b')
		case 'f':
			js.buf = append(js.buf, '\f')
		case 'n':
			js.buf = append(js.buf, '\n')
		case 'r':
			js.buf = append(js.buf, '\r')
		case 't':
			js.buf = append(js.buf, '\t')
		case 'u':
			r, n := unicodeEscape(b[j+1:])
			if n == 0 {
				return nil, j, errJSON
			}
			js.buf = utf8.AppendRune(js.buf, r)
			j += n
		default:
			return nil, j, errJSON
		}
	}
	return nil, len(b), errJSON
}

// unicodeEscape reads XXXX after \u, with a surrogate pair's second half;
// n is the bytes read.
func unicodeEscape(b []byte) (r rune, n int) {
	r1, ok := hex4(b)
	if !ok {
		return 0, 0
	}
	if utf16.IsSurrogate(r1) && len(b) >= 10 && b[4] == '\\' && b[5] == 'u' {
		if r2, ok := hex4(b[6:]); ok {
			if r := utf16.DecodeRune(r1, r2); r != utf8.RuneError {
				return r, 10
			}
		}
	}
	if utf16.IsSurrogate(r1) {
		return utf8.RuneError, 4
	}
	return r1, 4
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		d, ok := hexDigit(c)
		if !ok {
			return 0, false
		}
		r = r<<4 | rune(d)
	}
	return r, true
}

// skipComposite returns the end of the object or array at b[i:].
func skipComposite(b []byte, i int) (int, error) {
	depth := 0
	for j := i; j < len(b); j++ {
		switch b[j] {
		case '"':
			for j++; j < len(b) && b[j] != '"'; j++ {
				if b[j] == '\\' {
					j++
				}
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return j + 1, nil
			}
		}
	}
	return len(b), errJSON
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// text is v as text: a string's content, a number's digits; "" for
// null and other kinds.
func (v jsonValue) text() []byte {
	if v.kind == jsonString || v.kind == jsonNumber {
		return v.raw
	}
	return nil
}

// int is v as an integer, a number or a string of one; a fraction is
// dropped.
func (v jsonValue) int() (int64, bool) {
	b := v.text()
	if len(b) == 0 {
		return 0, false
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
	}
	var n int64
	for k, c := range b {
		if c == '.' || c == 'e' || c == 'E' {
			if c != '.' || k == 0 {
				f, err := strconv.ParseFloat(str(v.text()), 64)
				if err != nil || math.Abs(f) > 1<<62 {
					return 0, false
				}
				return int64(f), true
			}
			break
		}
		if c < '0' || c > '9' || n > (math.MaxInt64-9)/10 {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// epochTime reads a count since the Unix epoch, its unit told by its
// size: seconds, milliseconds, microseconds or nanoseconds.
func epochTime(n int64) time.Time {
	switch {
	case n <= 0:
		return time.Time{}
	case n < 1e11:
		return time.Unix(n, 0).UTC()
	case n < 1e14:
		return time.UnixMilli(n).UTC()
	case n < 1e17:
		return time.UnixMicro(n).UTC()
	}
	return time.Unix(0, n).UTC()
}

// timeValue reads a time: a number since the epoch (epochTime), in a
// string or not, with a fraction of seconds or not; an RFC 3339 time
// (or one with a ±hhmm offset); a log's 10/Oct/2026:13:55:36 +0000,
// bracketed or not.
func timeValue(v jsonValue) time.Time {
	b := v.text()
	if len(b) == 0 {
		return time.Time{}
	}
	if b[0] >= '0' && b[0] <= '9' && (len(b) < 5 || (b[4] != '-' && b[2] != '/')) {
		if i := bytes.IndexByte(b, '.'); i > 0 && i <= 10 {
			f, err := strconv.ParseFloat(str(b), 64)
			if err != nil {
				return time.Time{}
			}
			sec := math.Floor(f)
			return time.Unix(int64(sec), int64((f-sec)*1e9)).UTC()
		}
		n, ok := v.int()
		if !ok {
			return time.Time{}
		}
		return epochTime(n)
	}
	if len(b) >= 2 && b[0] == '[' && b[len(b)-1] == ']' {
		b = b[1 : len(b)-1]
	}
	if t, ok := parseCLFTime(b); ok {
		return t
	}
	return parseRFC3339(b)
}

// parseRFC3339 reads 2026-10-10T13:55:36[.fraction](Z|±hh:mm|±hhmm), in
// UTC; a space for T is taken too, and UTC, GMT or no zone for Z.
func parseRFC3339(b []byte) time.Time {
	if len(b) < 19 || b[4] != '-' || b[7] != '-' || (b[10] != 'T' && b[10] != 't' && b[10] != ' ') || b[13] != ':' || b[16] != ':' {
		return time.Time{}
	}
	year, ok1 := digits(b[0:4])
	month, ok2 := digits(b[5:7])
	day, ok3 := digits(b[8:10])
	hour, ok4 := digits(b[11:13])
	minute, ok5 := digits(b[14:16])
	sec, ok6 := digits(b[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || sec > 60 {
		return time.Time{}
	}
	rest := b[19:]
	nsec := 0
	if len(rest) > 0 && rest[0] == '.' {
		k := 1
		scale := 100000000
		for k < len(rest) && rest[k] >= '0' && rest[k] <= '9' {
			nsec += int(rest[k]-'0') * scale
			scale /= 10
			k++
		}
		rest = rest[k:]
	}
	off := 0
	rest = bytes.TrimLeft(rest, " ")
	switch string(rest) {
	case "", "Z", "z", "UTC", "GMT":
	default:
		o, ok := zoneOffset(rest)
		if !ok {
			return time.Time{}
		}
		off = o
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC)
	return t.Add(-time.Duration(off) * time.Second)
}

// eachElement calls fn with the text of each element of the JSON array r
// holds, streaming: an element is held whole, the array never. An
// element that is not an object, or too long, is malformed. What follows
// the array is left unread.
func eachElement(r io.Reader, s Sink, fn func(n int, elem []byte)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	if err := skipSpaceReader(br); err != nil {
		return ignoreEOF(err)
	}
	if c, _ := br.ReadByte(); c != '[' {
		s.Malformed(1, nil, "not a JSON array")
		return nil
	}
	var elem []byte
	for n := 1; ; n++ {
		if err := skipSpaceReader(br); err != nil {
			return ignoreEOF(err)
		}
		c, err := br.ReadByte()
		if err != nil {
			return ignoreEOF(err)
		}
		if c == ']' {
			return nil
		}
		if c == ',' {
			n--
			continue
		}
		if c != '{' {
			br.UnreadByte()
			v, err := skipValueReader(br)
			if err != nil && err != io.EOF {
				return err
			}
			s.Malformed(n, v, "not a JSON object")
			if err == io.EOF {
				return nil
			}
			continue
		}
		elem, err = readObject(br, append(elem[:0], c))
		switch {
		case err == errTooLong:
			s.Malformed(n, elem, "entry too long")
		case err != nil:
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				s.Malformed(n, elem, "entry cut short")
				return nil
			}
			return err
		default:
			fn(n, elem)
		}
	}
}

var errTooLong = errors.New("too long")

// readObject reads the rest of an object whose '{' is in elem; past
// maxRecord it keeps the start and skips to the end.
func readObject(br *bufio.Reader, elem []byte) ([]byte, error) {
	depth, inString, escaped, tooLong := 1, false, false, false
	for depth > 0 {
		chunk, err := br.ReadSlice('}')
		if err != nil && err != bufio.ErrBufferFull {
			if err == io.EOF {
				return elem, io.ErrUnexpectedEOF
			}
			return elem, err
		}
		for _, c := range chunk {
			switch {
			case escaped:
				escaped = false
			case inString:
				switch c {
				case '\\':
					escaped = true
				case '"':
					inString = false
				}
			case c == '"':
				inString = true
			case c == '{' || c == '[':
				depth++
			case c == '}' || c == ']':
				depth--
			}
		}
		if len(elem)+len(chunk) > maxRecord {
			tooLong = true
		} else {
			elem = append(elem, chunk...)
		}
	}
	if tooLong {
		return elem, errTooLong
	}
	return elem, nil
}

// skipValueReader reads a value that is no object, up to the ',' or ']'
// after it (left unread); it returns the value's start.
func skipValueReader(br *bufio.Reader) ([]byte, error) {
	var start []byte
	depth, inString, escaped := 0, false, false
	for {
		c, err := br.ReadByte()
		if err != nil {
			return start, err
		}
		switch {
		case escaped:
			escaped = false
		case inString:
			switch c {
			case '\\':
				escaped = true
			case '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			depth++
		case (c == ',' || c == ']') && depth == 0:
			return start, br.UnreadByte()
		case c == ']' || c == '}':
			depth--
		}
		if len(start) < maxExcerpt {
			start = append(start, c)
		}
	}
}

func skipSpaceReader(br *bufio.Reader) error {
	for {
		c, err := br.ReadByte()
		if err != nil {
			return err
		}
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return br.UnreadByte()
		}
	}
}

func ignoreEOF(err error) error {
	if err == io.EOF {
		return nil
	}
	return err
}

// firstByte returns the first byte of r's content that is no space,
// without consuming it; 0 for none.
func firstByte(br *bufio.Reader) (byte, error) {
	if err := skipSpaceReader(br); err != nil {
		return 0, ignoreEOF(err)
	}
	b, err := br.Peek(1)
	if err != nil {
		return 0, ignoreEOF(err)
	}
	return b[0], nil
}
