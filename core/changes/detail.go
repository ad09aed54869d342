package changes

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// A kept answer's detail is JSON that visibility wrote with
// encoding/json; a lift reads three of its members for every answer of
// its windows, tens of thousands of them: readDetail reads those and
// skips the rest without decoding it, as json.Unmarshal into detail would
// read them (members matched case-insensitively, a repeated one the last,
// null an empty list). It trusts the JSON to be well formed where it
// skips it: a detail json.Unmarshal takes, it reads alike.

// detail is what lift reads of a kept answer's detail: how many
// competitors it names, and the domains of its sources and of its
// citations, in that order (repeats kept).
type detail struct {
	competitors int
	domains     []string
}

var errDetail = errors.New("malformed answer detail")

// readDetail reads an answer's detail.
func readDetail(b []byte) (detail, error) {
	var d detail
	var sources, citations list
	i := skipSpace(b, 0)
	if bytes.Equal(bytes.TrimRight(b[i:], " \t\r\n"), []byte("null")) {
		return d, nil
	}
	if i >= len(b) || b[i] != '{' {
		return d, errDetail
	}
	i, err := members(b, i, func(key []byte, b []byte, i int) (int, error) {
		switch {
		case bytes.EqualFold(key, []byte("competitors")):
			d.competitors = 0
			return elements(b, i, func(b []byte, i int) (int, error) {
				d.competitors++
				if b[i] != '"' && b[i] != 'n' {
					return i, errDetail
				}
				return skipValue(b, i)
			})
		case bytes.EqualFold(key, []byte("sources")):
			return sources.read(b, i)
		case bytes.EqualFold(key, []byte("citations")):
			return citations.read(b, i)
		}
		return skipValue(b, i)
	})
	if err != nil {
		return d, err
	}
	if skipSpace(b, i) != len(b) {
		return d, errDetail
	}
	d.domains = append(sources.domains(), citations.domains()...)
	return d, nil
}

// list is a list of sources or citations as json.Unmarshal fills a
// slice: a member repeated refills the slice's array, whose elements
// keep what they held where the new one sets nothing (its capacity grown
// as reflect's by half, at least to 4, the elements past it new).
type list struct {
	array []string // the slice's array, as far as it was written
	n     int      // the slice's length
	cap   int
}

func (l *list) domains() []string { return l.array[:l.n] }

// read reads the list at b[i] (null: none), each element's domain.
func (l *list) read(b []byte, i int) (int, error) {
	if b[i] == 'n' {
		*l = list{}
		return skipValue(b, i)
	}
	l.n = 0
	end, err := elements(b, i, func(b []byte, i int) (int, error) {
		if l.n >= l.cap {
			l.cap = max(l.cap+l.cap/2, 4)
			l.array = l.array[:l.n]
		}
		if l.n == len(l.array) {
			l.array = append(l.array, "")
		}
		i, err := l.element(b, i, &l.array[l.n])
		l.n++
		return i, err
	})
	return end, err
}

// element reads a source or citation at b[i] (null: nothing), setting
// domain to its domain where it has one.
func (l *list) element(b []byte, i int, domain *string) (int, error) {
	if b[i] == 'n' {
		return skipValue(b, i)
	}
	if b[i] != '{' {
		return i, errDetail
	}
	return members(b, i, func(key []byte, b []byte, i int) (int, error) {
		if !bytes.EqualFold(key, []byte("domain")) {
			return skipValue(b, i)
		}
		switch b[i] {
		case 'n':
			return skipValue(b, i) // null leaves it as it was
		case '"':
			end, err := skipValue(b, i)
			if err != nil {
				return end, err
			}
			*domain, err = stringOf(b[i:end])
			return end, err
		}
		return i, errDetail
	})
}

// members calls each with each member of the object at b[i] (its key and
// the index of its value), which returns the index past the value, and
// returns the index past the object.
func members(b []byte, i int, each func(key []byte, b []byte, i int) (int, error)) (int, error) {
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return i, errDetail
		}
		end, err := skipString(b, i)
		if err != nil {
			return end, err
		}
		key := b[i+1 : end-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			s, err := stringOf(b[i:end])
			if err != nil {
				return end, err
			}
			key = []byte(s)
		}
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return i, errDetail
		}
		if i = skipSpace(b, i+1); i >= len(b) {
			return i, errDetail
		}
		if i, err = each(key, b, i); err != nil {
			return i, err
		}
		switch i = skipSpace(b, i); {
		case i < len(b) && b[i] == ',':
			i = skipSpace(b, i+1)
		case i < len(b) && b[i] == '}':
			return i + 1, nil
		default:
			return i, errDetail
		}
	}
}

// elements calls each with the index of each element of the array at
// b[i] (null: none), which returns the index past it, and returns the
// index past the array.
func elements(b []byte, i int, each func(b []byte, i int) (int, error)) (int, error) {
	if b[i] == 'n' {
		return skipValue(b, i)
	}
	if b[i] != '[' {
		return i, errDetail
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, nil
	}
	for {
		if i >= len(b) {
			return i, errDetail
		}
		var err error
		if i, err = each(b, i); err != nil {
			return i, err
		}
		switch i = skipSpace(b, i); {
		case i < len(b) && b[i] == ',':
			i = skipSpace(b, i+1)
		case i < len(b) && b[i] == ']':
			return i + 1, nil
		default:
			return i, errDetail
		}
	}
}

// stringOf is the JSON string s (quotes included) decoded: as it is when
// it holds no escape and only ASCII, else as encoding/json decodes it.
func stringOf(s []byte) (string, error) {
	plain := true
	for _, c := range s[1 : len(s)-1] {
		if c == '\\' || c >= 0x80 {
			plain = false
			break
		}
	}
	if plain {
		return string(s[1 : len(s)-1]), nil
	}
	var out string
	if err := json.Unmarshal(s, &out); err != nil {
		return "", fmt.Errorf("%w: %v", errDetail, err)
	}
	return out, nil
}

// skipValue returns the index past the value at b[i].
func skipValue(b []byte, i int) (int, error) {
	switch c := b[i]; {
	case c == '"':
		return skipString(b, i)
	case c == '{' || c == '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				end, err := skipString(b, i)
				if err != nil {
					return end, err
				}
				i = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1, nil
				}
			}
		}
		return i, errDetail
	case c == 't' || c == 'f' || c == 'n':
		for _, lit := range [...]string{"true", "false", "null"} {
			if bytes.HasPrefix(b[i:], []byte(lit)) {
				return i + len(lit), nil
			}
		}
		return i, errDetail
	case c == '-' || (c >= '0' && c <= '9'):
		j := i + 1
		for j < len(b) && (b[j] >= '0' && b[j] <= '9' || b[j] == '.' || b[j] == 'e' || b[j] == 'E' || b[j] == '+' || b[j] == '-') {
			j++
		}
		return j, nil
	}
	return i, errDetail
}

// skipString returns the index past the string at b[i].
func skipString(b []byte, i int) (int, error) {
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1, nil
		case c == '\\':
			i++
		case c < 0x20:
			return i, errDetail
		}
	}
	return i, errDetail
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}
