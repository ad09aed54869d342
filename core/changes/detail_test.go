package changes

import (
	"encoding/json"
	"slices"
	"testing"
)

// reference is the detail as encoding/json reads it.
type reference struct {
	Sources     []struct{ Domain string } `json:"sources"`
	Citations   []struct{ Domain string } `json:"citations"`
	Competitors []string                  `json:"competitors"`
}

func (r reference) detail() detail {
	d := detail{competitors: len(r.Competitors), domains: []string{}}
	for _, l := range [2][]struct{ Domain string }{r.Sources, r.Citations} {
		for _, s := range l {
			d.domains = append(d.domains, s.Domain)
		}
	}
	return d
}

var details = []string{
	`{"sources":[{"url":"https://www.acme.example/a","title":"A","domain":"www.acme.example"},{"domain":"b.example"}],` +
		`"citations":[{"url":"https://acme.example/p","title":"P","domain":"acme.example","start":3,"end":9}],"queries":["q"],` +
		`"competitors":["Roadrunner","Coyote"],"sentences":[{"text":"Acme \"skates\" {[","sentiment":-0.25e1}],"surface":"model","absent":false}`,
	`{"sources":[],"citations":[],"queries":[],"competitors":[],"sentences":[]}`,
	`{}`, `null`, ` { "Sources" : [ { "DOMAIN" : "x.example" } , null ] , "competitors" : null } `,
	`{"sources":[{"domain":"a.example"}],"sources":[{"domain":"b.example"},{"domain":null},{}]}`,
	`{"sources":[{"domain":"\u00fcber.example","domain":"caf\u00e9.example"}],"error_category":"rate_limited","error_status":429}`,
	`{"citations":[{"title":"t","domain":"réseau.example"}],"competitors":["Ünïcode","\t"]}`,
	`{"sources":[{"domain":"a.example"}],"market":{"country":"DE","language":"de"},"x":[[1,2,{"y":"]"}],true,false,null]}`,
	`{"sources":[{"domain":"a.example"}]`, `{"sources":{}}`, `{"competitors":[1]}`, `{"sources":[{"domain":1}]}`, `[]`, `{"a":1}x`, ``,
}

// readDetail reads what json.Unmarshal into the detail's fields reads,
// and refuses what it refuses.
func TestReadDetail(t *testing.T) {
	for _, s := range details {
		var r reference
		werr := json.Unmarshal([]byte(s), &r)
		got, err := readDetail([]byte(s))
		if (err != nil) != (werr != nil) {
			t.Errorf("%s: error %v, encoding/json's %v", s, err, werr)
			continue
		}
		if err == nil && (got.competitors != r.detail().competitors || !slices.Equal(got.domains, r.detail().domains)) {
			t.Errorf("%s: %+v, want %+v", s, got, r.detail())
		}
	}
}

// On any input json.Unmarshal takes, readDetail reads alike; on any
// other, it does not panic.
func FuzzReadDetail(f *testing.F) {
	for _, s := range details {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := readDetail(b)
		var r reference
		if json.Unmarshal(b, &r) != nil {
			return
		}
		if err != nil || got.competitors != r.detail().competitors || !slices.Equal(got.domains, r.detail().domains) {
			t.Errorf("%q: %+v, %v; want %+v", b, got, err, r.detail())
		}
	})
}
