package store_test

import (
	"encoding/base64"
	"testing"
	"time"

	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/storetest"
	"github.com/aivis/aivis/core/text"
)

func raw(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// FuzzAnswerCursor: AnswerSeq reads back exactly what AnswerCursor made
// (the same seq) and refuses everything else with ErrMalformed, other
// writings of the same number among them.
func FuzzAnswerCursor(f *testing.F) {
	for _, c := range []string{store.AnswerCursor(0), store.AnswerCursor(7), store.AnswerCursor(1 << 40), "", "seq:7", raw("seq:"),
		raw("seq:-1"), raw("seq: 7"), raw("seq:7\x00"), raw("seq:99999999999999999999"),
		base64.URLEncoding.EncodeToString([]byte("seq:7")), base64.StdEncoding.EncodeToString([]byte("seq:7?>"))} {
		f.Add(c, 7)
	}
	f.Fuzz(func(t *testing.T, cursor string, seq int) {
		storetest.CheckCursor(t, store.AnswerCursor, store.AnswerSeq, func(a, b int) bool { return a == b },
			func(n int) bool { return n >= 0 }, seq, cursor)
	})
}

// FuzzDeliveryCursor: DeliveryAfter reads back exactly what DeliveryCursor
// made of an event id (text) and refuses everything else with
// ErrMalformed.
func FuzzDeliveryCursor(f *testing.F) {
	for _, c := range []string{store.DeliveryCursor("evt_1"), store.DeliveryCursor("évt"), "", "!!!", raw("evt_1") + "=",
		base64.StdEncoding.EncodeToString([]byte("evt_1?>")), raw("\xff"), raw("evt\x00")} {
		f.Add(c, "evt_2")
	}
	f.Fuzz(func(t *testing.T, cursor, eventID string) {
		storetest.CheckCursor(t, store.DeliveryCursor, store.DeliveryAfter, func(a, b string) bool { return a == b },
			func(id string) bool { return id != "" && text.Valid(id) }, eventID, cursor)
	})
}

// FuzzUsageCursor: UsageAfter reads back exactly what UsageCursor made of
// an hour and a key id (text) and refuses everything else with
// ErrMalformed.
func FuzzUsageCursor(f *testing.F) {
	type at struct {
		ns  int64
		key string
	}
	enc := func(a at) string { return store.UsageCursor(time.Unix(0, a.ns), a.key) }
	dec := func(c string) (at, error) {
		h, k, err := store.UsageAfter(c)
		return at{h.UnixNano(), k}, err
	}
	for _, c := range []string{enc(at{1764000000000000000, "key_1"}), enc(at{-5, "k"}), "", "!!!", raw("1 key_1"), raw("01 key_1"),
		raw("1 "), raw(" key_1"), raw("1 key\x00"), raw("1 \xff"), raw("+1 key_1"), raw("99999999999999999999 key_1")} {
		f.Add(c, int64(1764000000000000000), "key_2")
	}
	f.Fuzz(func(t *testing.T, cursor string, ns int64, key string) {
		storetest.CheckCursor(t, enc, dec, func(a, b at) bool { return a == b },
			func(a at) bool { return a.key != "" && text.Valid(a.key) }, at{ns, key}, cursor)
	})
}
