// Package sqlitefile is how aivis's database file is opened with
// go-sqlite3: the store and the bus open the same file on connections of
// their own, with the same settings.
package sqlitefile

import (
	"net/url"
	"strings"
)

// Params are the settings of every connection to the file: WAL (readers
// never wait for the writer), a 10 s busy timeout (a writer waits that long
// for another connection's write lock, in this process or another),
// synchronous NORMAL (a commit survives the process, not a power loss
// before the next checkpoint). A caller adds its own (_txlock,
// _query_only, caches).
func Params() url.Values {
	q := url.Values{}
	q.Set("_journal_mode", "WAL")
	q.Set("_busy_timeout", "10000")
	q.Set("_synchronous", "NORMAL")
	return q
}

// escape is what SQLite would read as a URI's syntax in a path.
var escape = strings.NewReplacer("%", "%25", "?", "%3F", "#", "%23")

// DSN is the data source name of the file at path with the settings q.
func DSN(path string, q url.Values) string {
	return "file:" + escape.Replace(path) + "?" + q.Encode()
}
