// Package browsertest holds what the tests that drive a headless Chromium
// share.
package browsertest

import (
	"context"

	"github.com/chromedp/chromedp"
)

// Leaving runs an action that leaves the page (a link followed, a form
// sent) and waits until the page it leads to has loaded: the actions after
// it query that page, never the old one's elements or a node of a
// document being replaced ("No node with given id found").
func Leaving(a chromedp.Action) chromedp.Action {
	return chromedp.ActionFunc(func(ctx context.Context) error {
		_, err := chromedp.RunResponse(ctx, a)
		return err
	})
}
