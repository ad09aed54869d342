package traffic

import (
	"bytes"
	"embed"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Ranges holds named lists of address prefixes, as operators publish
// them (openai-gptbot, google-googlebot, ...), and finds whether an
// address lies in a list. A Ranges is never changed once built: it is safe
// for concurrent use, and a refresh builds a new one.
type Ranges struct {
	lists map[string]*rangeList
}

// rangeList is one list, its prefixes merged into sorted, disjoint spans.
type rangeList struct {
	created  time.Time
	prefixes int
	v4       []span4
	v6       []span6
}

// span4 is an inclusive span of IPv4 addresses.
type span4 struct{ lo, hi uint32 }

// span6 is an inclusive span of IPv6 addresses, each as two 64-bit halves.
type span6 struct{ lo, hi u128 }

type u128 struct{ hi, lo uint64 }

func (a u128) less(b u128) bool { return a.hi < b.hi || a.hi == b.hi && a.lo < b.lo }

// next is a+1; ok is false when a is the last address.
func (a u128) next() (n u128, ok bool) {
	if a.lo != ^uint64(0) {
		return u128{a.hi, a.lo + 1}, true
	}
	if a.hi != ^uint64(0) {
		return u128{a.hi + 1, 0}, true
	}
	return a, false
}

// NewRanges parses each named list (the operators' JSON shape, see
// ParseList) and builds a Ranges. Any list that does not parse fails the
// whole call, its name in the error.
func NewRanges(lists map[string][]byte) (*Ranges, error) {
	r := &Ranges{lists: make(map[string]*rangeList, len(lists))}
	for name, data := range lists {
		prefixes, created, err := ParseList(data)
		if err != nil {
			return nil, fmt.Errorf("traffic: list %s: %w", name, err)
		}
		r.lists[name] = buildList(prefixes, created)
	}
	return r, nil
}

// buildList sorts and merges prefixes into spans.
func buildList(prefixes []netip.Prefix, created time.Time) *rangeList {
	l := &rangeList{created: created, prefixes: len(prefixes)}
	for _, p := range prefixes {
		p = p.Masked()
		first := p.Addr()
		if first.Is4() {
			lo := addr4(first)
			hi := lo | uint32(uint64(1)<<(32-p.Bits())-1)
			l.v4 = append(l.v4, span4{lo, hi})
			continue
		}
		lo := addr6(first)
		hi := lo
		host := 128 - p.Bits()
		switch {
		case host >= 64:
			hi.lo = ^uint64(0)
			hi.hi |= uint64(1)<<(host-64) - 1 // all ones at host 128
		case host > 0:
			hi.lo |= uint64(1)<<host - 1
		}
		l.v6 = append(l.v6, span6{lo, hi})
	}
	l.v4 = merge4(l.v4)
	l.v6 = merge6(l.v6)
	return l
}

// merge4 sorts spans and joins those that overlap or touch.
func merge4(s []span4) []span4 {
	sort.Slice(s, func(i, j int) bool { return s[i].lo < s[j].lo })
	out := s[:0]
	for _, x := range s {
		if n := len(out); n > 0 && (x.lo <= out[n-1].hi || out[n-1].hi != ^uint32(0) && x.lo == out[n-1].hi+1) {
			out[n-1].hi = max(out[n-1].hi, x.hi)
			continue
		}
		out = append(out, x)
	}
	return slices.Clip(out)
}

// merge6 is merge4 for IPv6.
func merge6(s []span6) []span6 {
	sort.Slice(s, func(i, j int) bool { return s[i].lo.less(s[j].lo) })
	out := s[:0]
	for _, x := range s {
		if n := len(out); n > 0 {
			last := &out[n-1]
			after, ok := last.hi.next()
			if !last.hi.less(x.lo) || ok && x.lo == after {
				// x starts inside last or right after it.
				if last.hi.less(x.hi) {
					last.hi = x.hi
				}
				continue
			}
		}
		out = append(out, x)
	}
	return slices.Clip(out)
}

func addr4(a netip.Addr) uint32 {
	b := a.As4()
	return binary.BigEndian.Uint32(b[:])
}

func addr6(a netip.Addr) u128 {
	b := a.As16()
	return u128{binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])}
}

// contains reports whether ip lies in the list.
func (l *rangeList) contains(ip netip.Addr) bool {
	ip = ip.Unmap()
	if ip.Is4() {
		x := addr4(ip)
		// The first span whose end is at or past x.
		i := sort.Search(len(l.v4), func(i int) bool { return l.v4[i].hi >= x })
		return i < len(l.v4) && l.v4[i].lo <= x
	}
	if !ip.Is6() {
		return false
	}
	x := addr6(ip)
	i := sort.Search(len(l.v6), func(i int) bool { return !l.v6[i].hi.less(x) })
	return i < len(l.v6) && !x.less(l.v6[i].lo)
}

// Contains reports whether ip lies in the named list; false when there is
// no such list. IPv4-mapped IPv6 addresses count as IPv4.
func (r *Ranges) Contains(list string, ip netip.Addr) bool {
	if r == nil {
		return false
	}
	l := r.lists[list]
	return l != nil && l.contains(ip)
}

// Has reports whether the named list is loaded.
func (r *Ranges) Has(list string) bool {
	if r == nil {
		return false
	}
	_, ok := r.lists[list]
	return ok
}

// Names lists the loaded lists, sorted.
func (r *Ranges) Names() []string {
	if r == nil {
		return nil
	}
	names := make([]string, 0, len(r.lists))
	for n := range r.lists {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Created is the named list's creationTime (UTC; zero when the list gave
// none or is not loaded).
func (r *Ranges) Created(list string) time.Time {
	if l := r.lookup(list); l != nil {
		return l.created
	}
	return time.Time{}
}

// Len is the number of prefixes the named list was published with.
func (r *Ranges) Len(list string) int {
	if l := r.lookup(list); l != nil {
		return l.prefixes
	}
	return 0
}

func (r *Ranges) lookup(list string) *rangeList {
	if r == nil {
		return nil
	}
	return r.lists[list]
}

// Merge is base with override's lists put in: a list of override replaces
// base's of the same name (an operator's fresh copy, or one configured
// by the site owner). Either may be nil. Neither is changed.
func Merge(base, override *Ranges) *Ranges {
	out := &Ranges{lists: make(map[string]*rangeList)}
	for _, r := range []*Ranges{base, override} {
		if r == nil {
			continue
		}
		for n, l := range r.lists {
			out.lists[n] = l
		}
	}
	return out
}

// ErrHTML is ParseList's error for an HTML page served where a list was
// expected (an operator's error or login page).
var ErrHTML = errors.New("an HTML page, not an IP list")

// ErrEmptyList is ParseList's error for a list with no prefix in it.
var ErrEmptyList = errors.New("no prefixes in the list")

// ParseList reads an operator's IP list:
//
//	{"creationTime":"2026-01-14T15:45:48.000000",
//	 "prefixes":[{"ipv6Prefix":"2001:4860:4801:10::/64"},{"ipv4Prefix":"66.249.64.0/27"}]}
//
// It is tolerant, as the lists in the field differ: creationTime with or
// without a time zone (none means UTC) and with any fraction of a second,
// or absent; unknown keys anywhere (Common Crawl's synctoken and notes);
// either key holding either family; a bare address as a host prefix; host
// bits set; other keys of a prefix object read when they hold a
// CIDR-looking string. A prefix that does not parse is skipped. An HTML
// page, a body that is not JSON, and a list left with no prefix are
// errors.
func ParseList(data []byte) (prefixes []netip.Prefix, created time.Time, err error) {
	body := bytes.TrimSpace(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")))
	if len(body) > 0 && body[0] == '<' {
		return nil, time.Time{}, ErrHTML
	}
	var doc struct {
		CreationTime any                          `json:"creationTime"`
		Prefixes     []map[string]json.RawMessage `json:"prefixes"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, time.Time{}, fmt.Errorf("not a JSON IP list: %w", err)
	}
	if s, ok := doc.CreationTime.(string); ok {
		created = parseCreated(s)
	}
	for _, obj := range doc.Prefixes {
		if p, ok := objectPrefix(obj); ok {
			prefixes = append(prefixes, p)
		}
	}
	if len(prefixes) == 0 {
		return nil, created, ErrEmptyList
	}
	return prefixes, created, nil
}

// objectPrefix is the prefix of one object of "prefixes": its ipv4Prefix
// or ipv6Prefix, else any other string value that parses.
func objectPrefix(obj map[string]json.RawMessage) (netip.Prefix, bool) {
	for _, k := range []string{"ipv4Prefix", "ipv6Prefix"} {
		if p, ok := rawPrefix(obj[k]); ok {
			return p, true
		}
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if p, ok := rawPrefix(obj[k]); ok {
			return p, true
		}
	}
	return netip.Prefix{}, false
}

func rawPrefix(raw json.RawMessage) (netip.Prefix, bool) {
	var s string
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		return netip.Prefix{}, false
	}
	return parsePrefix(s)
}

// parsePrefix reads a CIDR prefix or a bare address, as a masked prefix.
func parsePrefix(s string) (netip.Prefix, bool) {
	s = strings.TrimSpace(s)
	if !strings.Contains(s, "/") {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return netip.Prefix{}, false
		}
		a = a.Unmap()
		return netip.PrefixFrom(a, a.BitLen()), true
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, false
	}
	if p.Addr().Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	return p.Masked(), true
}

// createdLayouts are the creationTime forms seen: Google's and OpenAI's
// microseconds without a zone, Common Crawl's Z.
var createdLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
}

// parseCreated reads a creationTime; zero when none of the layouts fits.
func parseCreated(s string) time.Time {
	s = strings.TrimSpace(s)
	for _, layout := range createdLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC()
		}
	}
	return time.Time{}
}

//go:embed ranges/*.json
var snapshotFiles embed.FS

var (
	snapshotOnce sync.Once
	snapshot     *Ranges
)

// Snapshot is the lists shipped in the binary (ranges/*.json, each named
// after its file; ranges/README.md says where and when each was taken).
// They verify agents until a refresh replaces them. The same *Ranges is
// returned on every call; it must not be relied upon to be fresh.
func Snapshot() *Ranges {
	snapshotOnce.Do(func() {
		entries, err := snapshotFiles.ReadDir("ranges")
		if err != nil {
			panic("traffic: embedded ranges: " + err.Error())
		}
		lists := make(map[string][]byte, len(entries))
		for _, e := range entries {
			data, err := snapshotFiles.ReadFile(path.Join("ranges", e.Name()))
			if err != nil {
				panic("traffic: embedded ranges: " + err.Error())
			}
			lists[strings.TrimSuffix(e.Name(), ".json")] = data
		}
		r, err := NewRanges(lists)
		if err != nil {
			panic("traffic: embedded ranges: " + err.Error())
		}
		snapshot = r
	})
	return snapshot
}
