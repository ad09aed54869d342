package dashboard

import (
	"time"

	"github.com/aivis/aivis/core/limits"
)

// Failed sign-ins allowed per email address in a window, from any client
// address: the guard per client address alone lets many addresses try
// passwords against one user. They are counted whether the address has a
// user or not, so that the answer tells nothing about who signs in.
const (
	emailFailures      = 10
	emailFailureWindow = 15 * time.Minute
)

// claim is a failure of a subject taken from a guard for one attempt at a
// password.
type claim struct {
	guard   limits.Guard // nil: none
	subject limits.Subject
	tally   limits.Tally
}

// takeFailures counts a failure of each subject before the password is
// checked, each in one atomic step, so that concurrent guesses never pass
// a guard's limit (argon2id is costly: guesses past it are not even
// hashed). A refusal gives back the failures already taken and is the
// guard's 429.
func takeFailures(now time.Time, cs ...claim) ([]claim, error) {
	for i := range cs {
		if cs[i].guard == nil {
			continue
		}
		cs[i].tally = cs[i].guard.Take(cs[i].subject, now)
		if err := cs[i].tally.Err(); err != nil {
			giveBack(cs[:i])
			return nil, err
		}
	}
	return cs, nil
}

// giveBack returns the failures taken for an attempt that was no failure:
// the password was right, or was never checked.
func giveBack(cs []claim) {
	for _, c := range cs {
		if c.guard != nil {
			c.guard.Give(c.subject, c.tally)
		}
	}
}
