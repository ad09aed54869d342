package probe

import "testing"

// ParseMarket keeps a country and a language (with a script where given)
// and refuses what is neither, a region in the language, or a code of no
// country.
func TestParseMarket(t *testing.T) {
	for _, tc := range []struct {
		country, lang string
		want          string
	}{
		{"US", "en", "en-US"}, {"de", "DE", "de-DE"}, {"TW", "zh-Hant", "zh-Hant-TW"}, {"BR", "pt", "pt-BR"},
	} {
		m, err := ParseMarket(tc.country, tc.lang)
		if err != nil || m.String() != tc.want {
			t.Errorf("ParseMarket(%q, %q) = %v, %v; want %s", tc.country, tc.lang, m, err, tc.want)
		}
	}
	for _, tc := range []struct{ country, lang string }{
		{"", "en"}, {"USA", "en"}, {"EU", "en"}, {"ZZ", "en"}, {"419", "es"}, {"US", ""}, {"US", "en-GB"}, {"US", "xx-yy-zz-!"}, {"US", "und"},
	} {
		if m, err := ParseMarket(tc.country, tc.lang); err == nil {
			t.Errorf("ParseMarket(%q, %q) = %v, want an error", tc.country, tc.lang, m)
		}
	}
}

// A market an engine does not take through its options is asked for in
// the prompt: the language alone where it takes the country, both where
// it takes neither, nothing where it takes both or there is no market.
func TestMarketPrompt(t *testing.T) {
	m := Market{Country: "DE", Language: "de"}
	for _, tc := range []struct {
		m    Market
		how  string
		want string
	}{
		{m, LocalisePrompt, "best crm\n\n(Answer in German, for someone in Germany.)"},
		{m, LocaliseCountry, "best crm\n\n(Answer in German.)"},
		{m, LocaliseNative, "best crm"},
		{Market{}, LocalisePrompt, "best crm"},
	} {
		if got := marketPrompt("best crm", tc.m, tc.how); got != tc.want {
			t.Errorf("marketPrompt(%v, %s) = %q, want %q", tc.m, tc.how, got, tc.want)
		}
	}
}
