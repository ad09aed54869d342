package store

import (
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
)

// ErrUnavailable says that an engine cannot be reached at the moment (its
// server is down, restarting or out of connections): the same call may
// succeed shortly. An engine may return it, or errors of its own that
// Unavailable recognises.
var ErrUnavailable = errors.New("store: unavailable")

// Unavailable reports whether err says that the store could not be reached
// rather than that the call was wrong, and why, in a few words that name
// no host, address, user or database (for a log). It recognises
//   - ErrUnavailable;
//   - what an SQL server answers while it cannot serve: SQLSTATE class 08
//     (connection exception), 57P01 (terminated by an administrator or a
//     shutdown), 57P02 (crash shutdown), 57P03 (cannot connect now: the
//     server is starting up or shutting down) and 53300 (too many
//     connections), found by the SQLSTATE of any error in the chain;
//   - what the network gives while the server is away: a refused or
//     reset connection, a broken pipe, any other failed dial, read or
//     write (net.OpError), a connection that ended in the middle of an
//     answer (unexpected EOF), and pgx's "conn closed", a connection it
//     closed after such a failure;
//   - SQLite's "database is locked", a write lock another process held
//     past the busy timeout.
//
// A call refused this way may have been carried out when the connection
// was lost after the server received its commit.
func Unavailable(err error) (why string, ok bool) {
	if err == nil {
		return "", false
	}
	if errors.Is(err, ErrUnavailable) {
		return "unavailable", true
	}
	var coded interface{ SQLState() string }
	if errors.As(err, &coded) {
		switch c := coded.SQLState(); {
		case strings.HasPrefix(c, "08"), c == "57P01", c == "57P02", c == "57P03", c == "53300":
			return "SQLSTATE " + c, true
		}
	}
	for _, e := range []struct {
		err error
		why string
	}{{syscall.ECONNREFUSED, "connection refused"}, {syscall.ECONNRESET, "connection reset"},
		{syscall.EPIPE, "broken pipe"}, {io.ErrUnexpectedEOF, "connection lost"}} {
		if errors.Is(err, e.err) {
			return e.why, true
		}
	}
	var op *net.OpError
	if errors.As(err, &op) {
		return "network error (" + op.Op + ")", true
	}
	if inChain(err, func(e error) bool { return e.Error() == "conn closed" }) {
		return "connection closed", true
	}
	if inChain(err, func(e error) bool { return e.Error() == "database is locked" }) {
		return "database locked", true
	}
	return "", false
}

// inChain reports whether f holds for err or an error it wraps.
func inChain(err error, f func(error) bool) bool {
	if err == nil {
		return false
	}
	if f(err) {
		return true
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return inChain(u.Unwrap(), f)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if inChain(e, f) {
				return true
			}
		}
	}
	return false
}
