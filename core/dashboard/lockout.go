package dashboard

import (
	"context"
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
// guard's 429, or its 503 when it cannot count.
func takeFailures(ctx context.Context, now time.Time, cs ...claim) ([]claim, error) {
	for i := range cs {
		if cs[i].guard == nil {
			continue
		}
		var err error
		cs[i].tally, err = cs[i].guard.Take(ctx, cs[i].subject, now)
		if err == nil {
			err = cs[i].tally.Err()
		}
		if err != nil {
			giveBack(ctx, cs[:i])
			return nil, err
		}
	}
	return cs, nil
}

// giveBack returns the failures taken for an attempt that was no failure:
// the password was right, or was never checked. One the guard cannot
// take back (its engine is unreachable) stays counted: the attempt costs
// one of the window's failures, never lets more through.
func giveBack(ctx context.Context, cs []claim) {
	for _, c := range cs {
		if c.guard != nil {
			_ = c.guard.Give(ctx, c.subject, c.tally)
		}
	}
}
