package jsonstr

import (
	"encoding/json"
	"testing"
)

func TestAppendMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "evt_0A1b2C", "ai_visibility_change", "a b~!#$%'()*+,-./:;=?@[]^`{|}",
		`quote " and \ backslash`, "<html> & more", "tab\tnewline\n\x00\x1f\x7f", "é ü 日本", "\u2028\u2029", "\xff bad utf-8"} {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := Append([]byte("x"), s); string(got) != "x"+string(want) {
			t.Errorf("Append(%q) = %s, want %s", s, got[1:], want)
		}
	}
}

func FuzzAppend(f *testing.F) {
	f.Add("evt_1")
	f.Add("<\"\\\x00é")
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := Append(nil, s); string(got) != string(want) {
			t.Fatalf("Append(%q) = %s, want %s", s, got, want)
		}
	})
}
