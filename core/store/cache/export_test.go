package cache

// CachedKeys is how many keys the key cache holds.
func CachedKeys(c *Store) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.keys)
}
