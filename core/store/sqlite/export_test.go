package sqlite

// CommitCounter reads the WAL index's commit counter as the cache sees it.
func CommitCounter(db *DB) (uint32, bool) { return db.fresh.commits.counter() }
