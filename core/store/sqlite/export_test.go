package sqlite

// CommitCounter reads the WAL index's commit counter as the cache sees it.
func CommitCounter(db *DB) (uint32, bool) { return db.fresh.commits.counter() }

// ClaimQueries are the queries of a content request's claim, runnable as
// they stand (with their parameters bound to nulls).
var ClaimQueries = []string{`SELECT id FROM content_requests ` + claimExpired, claimAccount, claimClient,
	`SELECT id FROM content_requests ` + claimOldest}

// ReadingsQuery is the query of LatestReading and ListReadings.
var ReadingsQuery = readingsQuery
