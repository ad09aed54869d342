package limits

// Bound sets the most subjects g keeps (100,000 by default), so that
// tests reach the bound with few addresses, and Size is how many it keeps.
func (g *AuthGuard) Bound(n int) { g.maxEntries = n }
func (g *AuthGuard) Size() int   { return len(g.m) }

// Queued is how many commands wait for the next round trip to r's server.
func (r *Redis) Queued() int {
	r.conn.rdb.mu.Lock()
	defer r.conn.rdb.mu.Unlock()
	return len(r.conn.rdb.queue)
}
