package client

import (
	"bytes"
	"errors"
	"math"
	"strconv"
	"strings"
)

// USD is an amount of US dollars in millionths of a dollar (micro-dollars).
// On the wire it is a JSON number of dollars with at most six decimals, so
// amounts are exact in both directions: 12.5 is USD(12_500_000).
type USD int64

// Dollars converts whole and fractional dollars, rounding to the micro-dollar.
func Dollars(d float64) USD { return USD(math.Round(d * 1e6)) }

// Cents converts an amount of cents.
func Cents(c int64) USD { return USD(c * 10_000) }

// MaxUSD bounds what ParseUSD accepts: one billion dollars.
const MaxUSD USD = 1_000_000_000 * 1_000_000

// Errors of ParseUSD.
var (
	ErrUSDSyntax    = errors.New("must be a number of dollars, such as 25 or 12.50")
	ErrUSDPrecision = errors.New("must have at most six decimal places")
	ErrUSDRange     = errors.New("must be at most 1000000000")
)

// ParseUSD parses a decimal number of dollars in JSON number syntax
// (exponent allowed) exactly, without passing through float64. Its cost is
// linear in the length of s whatever the exponent, and trailing zeros are
// free: "1.000…0" is one dollar at any length.
func ParseUSD(s string) (USD, error) {
	i, neg := 0, false
	if strings.HasPrefix(s, "-") {
		i, neg = 1, true
	}
	intStart := i
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	intPart := s[intStart:i]
	if intPart == "" || (len(intPart) > 1 && intPart[0] == '0') {
		return 0, ErrUSDSyntax
	}
	var frac string
	if i < len(s) && s[i] == '.' {
		i++
		fracStart := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		if frac = s[fracStart:i]; frac == "" {
			return 0, ErrUSDSyntax
		}
	}
	exp, expHuge := 0, false
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		expNeg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			expNeg = s[i] == '-'
			i++
		}
		expStart := i
		for i < len(s) && isDigit(s[i]) {
			if exp < 1_000_000 {
				exp = exp*10 + int(s[i]-'0')
			}
			i++
		}
		if i == expStart {
			return 0, ErrUSDSyntax
		}
		expHuge = exp >= 1_000_000
		if expNeg {
			exp = -exp
		}
	}
	if i != len(s) {
		return 0, ErrUSDSyntax
	}
	// The significant digits and the power of ten that scales them to
	// micro-dollars.
	digits := strings.TrimLeft(intPart+frac, "0")
	scale := exp - len(frac) + 6
	trimmed := strings.TrimRight(digits, "0")
	scale += len(digits) - len(trimmed)
	digits = trimmed
	switch {
	case digits == "":
		return 0, nil
	case expHuge && exp > 0:
		return 0, ErrUSDRange
	case expHuge || scale < 0:
		return 0, ErrUSDPrecision
	case len(digits)+scale > 16: // MaxUSD has 16 digits
		return 0, ErrUSDRange
	}
	var v int64
	for _, c := range []byte(digits) {
		v = v*10 + int64(c-'0')
	}
	for range scale {
		v *= 10
	}
	if USD(v) > MaxUSD {
		return 0, ErrUSDRange
	}
	if neg {
		v = -v
	}
	return USD(v), nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// String formats the amount as a plain decimal number of dollars ("12.5").
func (u USD) String() string { return string(u.Append(nil)) }

// Append appends the amount as String formats it.
func (u USD) Append(b []byte) []byte {
	v := uint64(u)
	if u < 0 {
		b = append(b, '-')
		v = -v
	}
	b = strconv.AppendUint(b, v/1_000_000, 10)
	if frac := v % 1_000_000; frac != 0 {
		var digits [7]byte
		d := strconv.AppendUint(digits[:0], 1_000_000+frac, 10) // "1" and six digits
		b = append(b, '.')
		b = append(b, bytes.TrimRight(d[1:], "0")...)
	}
	return b
}

// MarshalJSON writes the amount as a JSON number of dollars.
func (u USD) MarshalJSON() ([]byte, error) { return u.Append(nil), nil }

// UnmarshalJSON reads a JSON number of dollars exactly.
func (u *USD) UnmarshalJSON(b []byte) error {
	v, err := ParseUSD(string(b))
	if err != nil {
		return err
	}
	*u = v
	return nil
}
