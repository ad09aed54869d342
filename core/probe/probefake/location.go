package probefake

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
)

// Location is the user location a request gave its web search, as the
// fake read it by its provider's rules (sources.md, section 3); the zero
// Location is none.
type Location struct{ Country, Region, City, Timezone string }

// Locations are the user locations of the requests of the kinds that take
// one (openai-chat, openai-responses, perplexity, anthropic) that passed
// the fake's checks, in the order they came: a zero Location for a
// request that gave none.
func (f *Fake) Locations() []Location {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Location(nil), f.locations...)
}

// locate notes a request's user location.
func (f *Fake) locate(l Location) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.locations = append(f.locations, l)
}

// locationShape is how a provider takes a user location.
type locationShape struct {
	// typed: "type":"approximate" is required.
	typed bool
	// nested: the fields are in an object under "approximate" (OpenAI's
	// Chat Completions), not beside type.
	nested bool
	// coordinates: latitude and longitude are taken (Perplexity).
	coordinates bool
}

// The providers' shapes.
var (
	openAIResponsesLocation = locationShape{typed: true}
	openAIChatLocation      = locationShape{typed: true, nested: true}
	perplexityLocation      = locationShape{coordinates: true}
	anthropicLocation       = locationShape{typed: true}
)

// read reads a user_location (at path, for the messages) of the shape:
// the Location, or what is wrong with it.
func (s locationShape) read(path string, raw json.RawMessage) (Location, error) {
	keys := []string{"city", "country", "region", "timezone"}
	if s.coordinates {
		keys = append(keys, "latitude", "longitude")
	}
	top := keys
	if s.nested {
		top = []string{"approximate"}
	}
	if s.typed {
		top = append([]string{"type"}, top...)
	}
	m, err := object(path, raw, top)
	if err != nil {
		return Location{}, err
	}
	if s.typed {
		var typ string
		switch t, ok := m["type"]; {
		case !ok:
			return Location{}, fmt.Errorf("%s.type: Field required", path)
		case json.Unmarshal(t, &typ) != nil || typ != "approximate":
			return Location{}, fmt.Errorf("%s.type: Input should be 'approximate'", path)
		}
	}
	if s.nested {
		a, ok := m["approximate"]
		if !ok {
			return Location{}, fmt.Errorf("%s.approximate: Field required", path)
		}
		path += ".approximate"
		if m, err = object(path, a, keys); err != nil {
			return Location{}, err
		}
	}
	var l Location
	for k, v := range m {
		var dst *string
		switch k {
		case "country":
			dst = &l.Country
		case "region":
			dst = &l.Region
		case "city":
			dst = &l.City
		case "timezone":
			dst = &l.Timezone
		case "latitude", "longitude":
			var n float64
			if json.Unmarshal(v, &n) != nil {
				return Location{}, fmt.Errorf("%s.%s: Input should be a valid number", path, k)
			}
			continue
		default:
			continue
		}
		if json.Unmarshal(v, dst) != nil {
			return Location{}, fmt.Errorf("%s.%s: Input should be a valid string", path, k)
		}
	}
	if c := l.Country; c != "" && (len(c) != 2 || c[0] < 'A' || c[0] > 'Z' || c[1] < 'A' || c[1] > 'Z') {
		return Location{}, fmt.Errorf("%s.country: %q is not an ISO 3166-1 alpha-2 country code", path, c)
	}
	return l, nil
}

// object reads raw as a JSON object whose keys are among allowed.
func object(path string, raw json.RawMessage, allowed []string) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, fmt.Errorf("%s: Input should be an object", path)
	}
	var extra []string
	for k := range m {
		if !slices.Contains(allowed, k) {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		return nil, fmt.Errorf("%s.%s: Extra inputs are not permitted", path, extra[0])
	}
	return m, nil
}
