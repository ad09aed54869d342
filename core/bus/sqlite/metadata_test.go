package sqlite

import (
	"encoding/json"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"
)

// Metadata is stored as json.Marshal writes it, though built by hand.
func TestEncodeMetadataIsJSONMarshal(t *testing.T) {
	for _, md := range []message.Metadata{
		{"event": "ai_visibility_change", "account_id": "acct_1", "score_change": "12", "domain": "example.com"},
		{"": "empty key", "empty value": "", "json": `{"a":[1,"<&>"]}` + "\u2028\t\\\"", "nul": "a\x00b", "😀": "日本語"},
		{"one": "1"},
	} {
		want, err := json.Marshal(map[string]string(md))
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodeMetadata(md)
		if err != nil || got != string(want) {
			t.Errorf("encodeMetadata = %s, %v\nwant             %s", got, err, want)
		}
		back, err := decodeMetadata(got)
		if err != nil || len(back) != len(md) {
			t.Fatalf("decodeMetadata(%s) = %v, %v", got, back, err)
		}
		for k, v := range md {
			if back[k] != v {
				t.Errorf("%q: %q back, want %q", k, back[k], v)
			}
		}
	}
	if s, err := encodeMetadata(nil); s != "{}" || err != nil {
		t.Errorf("no metadata: %s, %v", s, err)
	}
	if _, err := encodeMetadata(message.Metadata{"k": "\xff"}); err == nil {
		t.Error("invalid UTF-8 encoded")
	}
}
