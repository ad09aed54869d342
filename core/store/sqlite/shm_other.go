//go:build !unix

package sqlite

// commits is unavailable here: every validation reads the cache epoch.
type commits struct{}

func watchCommits(string) *commits { return nil }

func (c *commits) counter() (uint32, bool) { return 0, false }

func (c *commits) close() {}
