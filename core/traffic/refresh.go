package traffic

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sort"
	"sync"

	"github.com/aivis/aivis/core/netguard"
)

// maxListBytes bounds a list's body: Google's largest is some 60 KB.
const maxListBytes = 8 << 20

// refreshWorkers is how many lists are fetched at once.
const refreshWorkers = 4

// ListError is why one list was not refreshed. It names the list and the
// HTTP status, never the URL (whose query may carry a credential) nor an
// address.
type ListError struct {
	List   string
	Status int    // the HTTP status; 0 when none came
	Reason string // what went wrong, in words
}

func (e *ListError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("traffic: list %s: status %d: %s", e.List, e.Status, e.Reason)
	}
	return fmt.Sprintf("traffic: list %s: %s", e.List, e.Reason)
}

// Refresh fetches each list of urls (list name -> URL, e.g.
// DefaultListURLs, as configured) with client and returns last with every
// list that came back good replaced. A list that fails (no answer, a
// status other than 200, an HTML page, a body that does not parse, an
// empty list) keeps last's copy, and a *ListError says why; lists of last
// not in urls are kept as they are. last may be nil; the result never is.
func Refresh(ctx context.Context, client *http.Client, urls map[string]string, last *Ranges) (*Ranges, []error) {
	if client == nil {
		client = http.DefaultClient
	}
	names := make([]string, 0, len(urls))
	for n := range urls {
		names = append(names, n)
	}
	sort.Strings(names)

	fresh := &Ranges{lists: make(map[string]*rangeList)}
	errs := make([]error, len(names))
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, refreshWorkers)
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			l, err := fetchList(ctx, client, name, urls[name])
			if err != nil {
				errs[i] = err
				return
			}
			mu.Lock()
			fresh.lists[name] = l
			mu.Unlock()
		}()
	}
	wg.Wait()
	var failed []error
	for _, err := range errs {
		if err != nil {
			failed = append(failed, err)
		}
	}
	return Merge(last, fresh), failed
}

// fetchList gets and parses one list.
func fetchList(ctx context.Context, client *http.Client, name, url string) (*rangeList, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, &ListError{List: name, Reason: "the URL is not valid"}
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, &ListError{List: name, Reason: netguard.Describe(err)}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil, &ListError{List: name, Status: resp.StatusCode, Reason: http.StatusText(resp.StatusCode)}
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/html" {
		return nil, &ListError{List: name, Status: resp.StatusCode, Reason: ErrHTML.Error()}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxListBytes+1))
	if err != nil {
		return nil, &ListError{List: name, Status: resp.StatusCode, Reason: "reading the body: " + netguard.Describe(err)}
	}
	if len(body) > maxListBytes {
		return nil, &ListError{List: name, Status: resp.StatusCode, Reason: "the body is over 8 MB"}
	}
	prefixes, created, err := ParseList(body)
	if err != nil {
		reason := "not a JSON IP list"
		if errors.Is(err, ErrHTML) || errors.Is(err, ErrEmptyList) {
			reason = err.Error()
		}
		return nil, &ListError{List: name, Status: resp.StatusCode, Reason: reason}
	}
	return buildList(prefixes, created), nil
}
