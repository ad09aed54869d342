package client

import (
	"errors"
	"fmt"
	"math"
	"math/big"
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

// ParseUSD parses a decimal number of dollars (JSON number syntax, exponent
// allowed) exactly, without passing through float64.
func ParseUSD(s string) (USD, error) {
	if s == "" || strings.ContainsAny(s, " _") || strings.HasPrefix(s, "+") {
		return 0, ErrUSDSyntax
	}
	if len(s) > 64 {
		return 0, ErrUSDRange
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return 0, ErrUSDSyntax
	}
	r.Mul(r, big.NewRat(1_000_000, 1))
	if !r.IsInt() {
		return 0, ErrUSDPrecision
	}
	n := r.Num()
	if n.CmpAbs(big.NewInt(int64(MaxUSD))) > 0 {
		return 0, ErrUSDRange
	}
	return USD(n.Int64()), nil
}

// String formats the amount as a plain decimal number of dollars ("12.5").
func (u USD) String() string {
	neg := u < 0
	v := int64(u)
	if neg {
		v = -v
	}
	s := strconv.FormatInt(v/1_000_000, 10)
	if frac := v % 1_000_000; frac != 0 {
		s += "." + strings.TrimRight(fmt.Sprintf("%06d", frac), "0")
	}
	if neg {
		s = "-" + s
	}
	return s
}

// MarshalJSON writes the amount as a JSON number of dollars.
func (u USD) MarshalJSON() ([]byte, error) { return []byte(u.String()), nil }

// UnmarshalJSON reads a JSON number of dollars exactly.
func (u *USD) UnmarshalJSON(b []byte) error {
	v, err := ParseUSD(string(b))
	if err != nil {
		return err
	}
	*u = v
	return nil
}
