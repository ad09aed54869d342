// Package storetest is the suite every storage engine passes, the way
// every Watermill pub/sub passes pubsub/tests: one case per contract of
// core/store (round trips of every record, pages that neither skip nor
// repeat, uniqueness, owner isolation, budgets and caps under concurrent
// callers, claims, retention, the time range), each run on a fresh, empty
// store. An engine's tests hand Run a constructor:
//
//	func TestStore(t *testing.T) { storetest.Run(t, newStore) }
//
// Each case is a subtest named after its domain and contract (for example
// TestStore/Content/BudgetCapUnderConcurrency), and its failures name the
// method and the rule that broke.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aivis/aivis/core/store"
)

// Constructor makes a fresh, empty store for one test and closes it when
// the test ends. reopen opens another handle on that same store, as the
// CLI or another instance of the server would (closed when the test that
// asked for it ends); the two see each other's commits.
type Constructor func(t *testing.T) (s store.Store, reopen func(t *testing.T) store.Store)

// A test is one contract's case.
type test struct {
	name string
	run  func(t *testing.T, newStore Constructor)
}

// groups are the cases by domain, in the order of core/store's files.
var groups = []struct {
	name  string
	tests []test
}{
	{"Isolation", []test{
		{"UpdateIsAllOrNothing", testUpdateIsAllOrNothing},
		{"ReadsSeeEveryCommitOfEveryHandle", testReadsSeeEveryCommit},
		{"ConcurrentWritersOnTwoHandles", testConcurrentHandles},
		{"PingAnswersWithinItsContext", testPing},
	}},
	{"Times", []test{
		{"RangeKeptExactlyInUTC", testTimeRange},
		{"OutsideTheRangeKeptOrRefused", testTimesOutsideTheRange},
		{"BoundsOutsideTheRange", testBoundsOutsideTheRange},
	}},
	{"Accounts", []test{
		{"RoundTripAndUniqueIDs", testAccounts},
		{"ClientsBelongToOneAccount", testClients},
	}},
	{"Keys", []test{
		{"RoundTripAndUniqueHash", testKeys},
		{"RevocationIsNeverPostponed", testRevokeKey},
	}},
	{"Counters", []test{
		{"SaveCountsNeverLowersAWindow", testSaveCountsNeverLowers},
		{"SavesThatRaceNeverLowerACount", testSaveCountsUnderConcurrency},
		{"UsageAddsUp", testUsageAddsUp},
		{"UsageListPages", testListUsage},
		{"TakeCountsAllOrNone", testTakeWindows},
		{"TakeExactUnderConcurrencyOnTwoHandles", testTakeWindowsUnderConcurrency},
	}},
	{"Content", []test{
		{"RoundTrip", testContentRequestRoundTrip},
		{"RefusesWhatNoRequestMayBe", testContentRequestConstraints},
		{"BudgetLedger", testBudgetLedger},
		{"ReleaseOfAnUntouchedMonthRefused", testBudgetLedgerNegativeDeltaOnNewMonth},
		{"BudgetCapUnderConcurrency", testBudgetCapUnderConcurrency},
		{"ActiveRequestCapUnderConcurrency", testActiveCapUnderConcurrency},
		{"Idempotency", testIdempotency},
		{"ListPagesNeitherSkipNorRepeat", testListContentRequests},
		{"ListPagesWithRowsAddedBetween", testListContentRequestsWhileAdding},
		{"ListMalformedCursor", testListContentRequestsMalformedCursor},
		{"ListDefaultLimit", testListContentRequestsDefaultLimit},
		{"RetentionOfIdempotencyRecords", testDeleteIdempotencyBefore},
		{"IdempotencyMarkedActedWithItsUpdate", testActedCommitsWithItsUpdate},
	}},
	{"Readings", []test{
		{"RoundTripAndRefusals", testReadings},
		{"AccountWideReadsMergeOwners", testAccountWideReadings},
		{"ListPagesWithRowsAddedBetween", testListReadingsWhileAdding},
		{"LatestOfEachMonitoredDomain", testLatestReadings},
		{"LatestInATransaction", testLatestReadingInTransaction},
		{"InsertReadings", testInsertReadings},
	}},
	{"Domains", []test{
		{"RoundTripAndOwners", testDomains},
		{"ListPages", testListDomains},
		{"CapUnderConcurrency", testDomainCapUnderConcurrency},
	}},
	{"Scans", []test{
		{"RoundTripAndOwners", testScans},
		{"DueDomains", testDueDomains},
		{"AnswersRoundTripFiltersAndPages", testScanAnswers},
		{"PruneAnswersInBoundedBatchesOldestFirst", testPruneScanAnswers},
		{"ListCompletedPages", testListScans},
		{"AroundATime", testScansAround},
		{"AnswerFactsAndEnginesOfManyScans", testAnswerFacts},
	}},
	{"Webhooks", []test{
		{"RoundTripWithSecrets", testWebhooks},
		{"ConnectionsRoundTrip", testConnections},
		{"HealthWritesOnlyHealth", testWebhookHealth},
		{"MatchAndCount", testMatchWebhooks},
		{"ListPages", testListWebhooks},
		{"DefaultURL", testDefaultWebhookURL},
		{"DeletedKeptUntilItsDeliveriesAgeOut", testDeletedWebhook},
		{"PruneDeletedInBoundedBatchesOldestFirst", testPruneDeleted},
		{"WebhookCapUnderConcurrency", testWebhookCapUnderConcurrency},
		{"ConnectionCapUnderConcurrency", testConnectionCapUnderConcurrency},
		{"SealedValuesListedAsStored", testSealedValuesListed},
		{"ReplaceSealedOnlyIfUnchanged", testReplaceSealed},
	}},
	{"Deliveries", []test{
		{"RoundTripOncePerWebhookAndEvent", testDeliveries},
		{"ListByEventTimeAndRedeliver", testDeliveriesByEventTime},
		{"NextDue", testNextDue},
		{"Backlog", testDeliveryBacklog},
		{"PruneInBoundedBatchesOldestFirst", testPruneDeliveries},
		{"OutcomeOfAPrunedDelivery", testOutcomeOfAPrunedDelivery},
		{"BatchesAsOneAtATime", testDeliveryBatches},
	}},
	{"Claims", []test{
		{"ContentRequestClaimedOnceUnderConcurrency", testContentClaimsUnderConcurrency},
		{"ScanClaimedOnceUnderConcurrency", testScanClaimsUnderConcurrency},
		{"DeliveryClaimedOnceUnderConcurrency", testDeliveryClaimsUnderConcurrency},
		{"ClaimsPassOverLeases", testClaimsPassOverLeases},
		{"OutcomeFencedByLease", testOutcomeFencedByLease},
		{"InsertedLeaseAndRenewal", testInsertedLeaseAndRenewal},
		{"DeleteEndsLeases", testDeleteEndsLeases},
		{"ScanClaimFencedAndOneActivePerDomain", testScanClaimFenced},
		{"ContentClaimFenced", testContentClaimFenced},
	}},
	// Events: the outbox's case (Publish seen by a subscriber once its
	// Update commits, never when it rolls back) needs the engine's bus,
	// and goes here once a constructor gives one.
	{"Events", []test{
		{"LoggedOnceNewestFirstByOwner", testEventLog},
		{"PruneInBoundedBatchesOldestFirst", testPruneEvents},
	}},
	{"People", []test{
		{"UsersAndSessions", testUsersAndSessions},
		{"InvitationUsedOnceUnderConcurrency", testInvitationUsedOnce},
		{"BootstrapRules", testBootstrap},
		{"ExpiredForgotten", testDeleteExpired},
	}},
	{"Traffic", []test{
		{"RoundTrip", testTrafficRoundTrip},
		{"SameBatchAddsOnce", testTrafficBatchOnce},
		{"ThenCommitsWithTheBatch", testTrafficBatchThen},
		{"SameBatchOnceUnderConcurrencyOnTwoHandles", testTrafficBatchOnceUnderConcurrency},
		{"AggregatesAddUp", testTrafficAggregatesAddUp},
		{"OwnersAndDomainDeleted", testTrafficOwners},
		{"RevocationIsNeverPostponed", testTrafficRevoke},
		{"FilterByDays", testTrafficDays},
		{"DeleteTrafficBefore", testDeleteTrafficBefore},
		{"CrawlerRangesReplacedAllAtOnce", testCrawlerRanges},
		{"TextRefusedInReads", testTrafficTextRefusedInReads},
	}},
	{"Changes", []test{
		{"RoundTrip", testChangeRoundTrip},
		{"ListPagesNeitherSkipNorRepeat", testListChanges},
		{"ListPagesWithRowsAddedBetween", testListChangesWhileAdding},
		{"FilterByTime", testChangesFilterByTime},
		{"OwnersDeleteAndDomainDeleted", testChangeOwnersAndDelete},
		{"OncePerContentRequest", testChangeOncePerContentRequest},
		{"OncePerContentRequestUnderConcurrencyOnTwoHandles", testChangeOncePerContentRequestUnderConcurrency},
		{"TextRefusedInReads", testChangeTextRefusedInReads},
		{"LiftMeasuredOnce", testMarkLiftMeasured},
		{"LiftMeasuredOnceUnderConcurrencyOnTwoHandles", testMarkLiftMeasuredUnderConcurrency},
		{"InsertedInATransaction", testInsertedInATransaction},
	}},
	{"Text", []test{
		{"KeptOrRefusedAlike", testTextKeptOrRefused},
		{"RefusedInReads", testTextRefusedInReads},
	}},
	{"Plugins", []test{
		{"RegistryRoundTrip", testPlugins},
		{"RegistryBuilds", testPluginBuilds},
		{"HealthPerInstance", testPluginHealth},
		{"HealthPerInstanceUnderConcurrency", testPluginHealthUnderConcurrency},
	}},
	// Caches: an engine whose reads are cached (core/store/cache) hands Run
	// its stores as the server reads them, so every case holds of the
	// caches too: Isolation/ReadsSeeEveryCommitOfEveryHandle revokes a key
	// and changes a tier through a second handle and checks the first sees
	// it from the next read on.
}

// Run runs every case on stores newStore makes, each in parallel with the
// others on a store of its own.
func Run(t *testing.T, newStore Constructor) {
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			for _, c := range g.tests {
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					c.run(t, newStore)
				})
			}
		})
	}
}

var (
	ctx = context.Background()
	// t0 is the suite's present: a time with nanoseconds, in UTC.
	t0 = time.Date(2025, 6, 10, 14, 20, 30, 123456789, time.UTC)
	// elsewhere is a zone of no whole hour: times given in it come back
	// in UTC, the same instant.
	elsewhere = time.FixedZone("UTC+05:45", 5*3600+45*60)
	errBoom   = errors.New("storetest: the caller's own error")
	// errRefused is what a caller of the concurrency cases returns when
	// its check finds the limit reached.
	errRefused = errors.New("storetest: over the limit")
)

// concurrency is how many callers the concurrency cases run at once.
const concurrency = 32

// must stops the test when err is not nil, saying what failed.
func must(t *testing.T, err error, what string, args ...any) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", fmt.Sprintf(what, args...), err)
	}
}

// update runs fn in one Update of s, stopping the test when it fails.
func update(t *testing.T, s store.Store, what string, fn func(store.Tx) error) {
	t.Helper()
	must(t, s.Update(ctx, fn), "Update (%s)", what)
}

func newAccount(t *testing.T, s store.Store, id, typ string) store.Account {
	t.Helper()
	a := store.Account{ID: id, Name: "Account " + id, Tier: "starter", Type: typ, CreatedAt: t0}
	must(t, s.CreateAccount(ctx, a), "CreateAccount(%s)", id)
	return a
}

func newClient(t *testing.T, s store.Store, accountID, id string) store.Client {
	t.Helper()
	c := store.Client{ID: id, AccountID: accountID, Name: "Client " + id, CreatedAt: t0}
	must(t, s.CreateClient(ctx, c), "CreateClient(%s)", id)
	return c
}

// owners makes the owners most cases need: the agency acct_1 with its
// client cli_1, and acct_2, a standard account; it returns acct_1.
func owners(t *testing.T, s store.Store) store.Account {
	t.Helper()
	a := newAccount(t, s, "acct_1", store.AccountAgency)
	newAccount(t, s, "acct_2", store.AccountStandard)
	newClient(t, s, "acct_1", "cli_1")
	return a
}

// idsOf is the ids of xs, in their order.
func idsOf[T any, K any](xs []T, id func(T) K) []K {
	out := make([]K, len(xs))
	for i, x := range xs {
		out[i] = id(x)
	}
	return out
}

// walk lists every page of a list from the first, page(cursor) giving
// one, and returns the ids they held in order. Pages hold at most limit,
// and a page with a next cursor is full.
func walk(t *testing.T, what string, limit int, page func(cursor string) (ids []string, next string, err error)) []string {
	t.Helper()
	var out []string
	cursor := ""
	for pages := 1; ; pages++ {
		ids, next, err := page(cursor)
		must(t, err, "%s, page %d", what, pages)
		if len(ids) > limit || next != "" && len(ids) != limit {
			t.Fatalf("%s, page %d: %d items at a limit of %d, next cursor %q", what, pages, len(ids), limit, next)
		}
		out = append(out, ids...)
		if next == "" {
			return out
		}
		if pages > 10_000 {
			t.Fatalf("%s: the pages do not end", what)
		}
		cursor = next
	}
}

// onceEach checks the rows a walk of pages listed while rows were being
// added: each row there when the walk began listed once, none twice, and
// each after the one before it (before says which comes first).
func onceEach[T any, K comparable](t *testing.T, what string, there []K, listed []T, key func(T) K, before func(a, b T) bool) {
	t.Helper()
	seen := map[K]int{}
	for _, x := range listed {
		seen[key(x)]++
	}
	for _, k := range there {
		if seen[k] != 1 {
			t.Errorf("%s: %v, there when the walk began, was listed %d times", what, k, seen[k])
		}
	}
	for k, n := range seen {
		if n > 1 {
			t.Errorf("%s: %v was listed %d times", what, k, n)
		}
	}
	for i := 1; i < len(listed); i++ {
		if !before(listed[i-1], listed[i]) {
			t.Errorf("%s: %v listed before %v, out of order", what, key(listed[i-1]), key(listed[i]))
		}
	}
}

// together runs fn(i) for i in [0, n) on n goroutines released at once,
// and waits for them all.
func Together(n int, fn func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			fn(i)
		})
	}
	close(start)
	wg.Wait()
}

// handles are n handles on one store: the first is s, the others opened
// by reopen, so that concurrent callers spread over several processes'
// worth of handles.
func handles(t *testing.T, s store.Store, reopen func(*testing.T) store.Store, n int) []store.Store {
	hs := []store.Store{s}
	for len(hs) < n {
		hs = append(hs, reopen(t))
	}
	return hs
}

// tally counts outcomes: nil as admitted, errRefused as refused, any
// other error apart.
type tally struct {
	mu       sync.Mutex
	admitted int
	refused  int
	other    []error
}

func (c *tally) add(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case err == nil:
		c.admitted++
	case errors.Is(err, errRefused):
		c.refused++
	default:
		c.other = append(c.other, err)
	}
}
