package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The OpenAPI document is checked against the running server: every
// response a test receives is validated against the schema the document
// gives for its operation and status.

const docURL = "https://aivis.test/openapi.json"

var openapi struct {
	once     sync.Once
	doc      map[string]any
	compiler *jsonschema.Compiler
	schemas  sync.Map // pointer -> *jsonschema.Schema
	paths    []pathTemplate
	err      error
}

type pathTemplate struct {
	template string
	re       *regexp.Regexp
}

func loadOpenAPI() error {
	openapi.once.Do(func() {
		b, err := os.ReadFile("../../core/api/openapi.json")
		if err != nil {
			openapi.err = err
			return
		}
		if err := json.Unmarshal(b, &openapi.doc); err != nil {
			openapi.err = err
			return
		}
		res, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			openapi.err = err
			return
		}
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		if err := c.AddResource(docURL, res); err != nil {
			openapi.err = err
			return
		}
		openapi.compiler = c
		paths, _ := openapi.doc["paths"].(map[string]any)
		for p := range paths {
			re := "^" + regexp.MustCompile(`\\\{[^}]+\\\}`).ReplaceAllString(regexp.QuoteMeta(p), `[^/]+`) + "$"
			openapi.paths = append(openapi.paths, pathTemplate{p, regexp.MustCompile(re)})
		}
	})
	return openapi.err
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// resolve follows a local $ref in the document.
func resolve(node any, pointer string) (any, string, error) {
	for i := 0; i < 10; i++ {
		m, ok := node.(map[string]any)
		if !ok {
			return node, pointer, nil
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return node, pointer, nil
		}
		if !strings.HasPrefix(ref, "#/") {
			return nil, "", fmt.Errorf("non-local $ref %s", ref)
		}
		pointer = ref[1:]
		node = openapi.doc
		for _, part := range strings.Split(ref[2:], "/") {
			part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
			mm, ok := node.(map[string]any)
			if !ok {
				return nil, "", fmt.Errorf("bad $ref %s", ref)
			}
			node = mm[part]
		}
	}
	return node, pointer, nil
}

var compileMu sync.Mutex

// responseSchema finds the schema of a response in the document; for a
// CSV response (csv) it checks that the document gives the response as
// text/csv, and returns no schema.
func responseSchema(method, path string, status int, csv bool) (*jsonschema.Schema, error) {
	if err := loadOpenAPI(); err != nil {
		return nil, err
	}
	template := ""
	for _, p := range openapi.paths {
		if p.re.MatchString(path) {
			template = p.template
			break
		}
	}
	if template == "" {
		return nil, nil // an unknown path: the 404 envelope is checked by the tests
	}
	ptr := "/paths/" + escapePointer(template) + "/" + strings.ToLower(method)
	op, ok := openapi.doc["paths"].(map[string]any)[template].(map[string]any)[strings.ToLower(method)].(map[string]any)
	if !ok {
		return nil, nil // 405: checked by the tests
	}
	responses, _ := op["responses"].(map[string]any)
	code := strconv.Itoa(status)
	r, ok := responses[code]
	if !ok {
		code = code[:1] + "XX"
		if r, ok = responses[code]; !ok {
			code = "default"
			if r, ok = responses[code]; !ok {
				return nil, fmt.Errorf("the document has no response %d for %s %s", status, method, template)
			}
		}
	}
	r, rptr, err := resolve(r, ptr+"/responses/"+escapePointer(code))
	if err != nil {
		return nil, err
	}
	content, _ := r.(map[string]any)["content"].(map[string]any)
	if content == nil && status == http.StatusNoContent {
		return nil, nil // no body to check
	}
	if csv {
		if _, ok := content["text/csv"]; !ok {
			return nil, fmt.Errorf("response %s of %s %s is CSV, which the document does not give", code, method, template)
		}
		return nil, nil
	}
	media := "application/json"
	if _, ok := content[media]; !ok {
		media = "application/x-ndjson" // JSON lines: the schema is a line's
	}
	if _, ok := content[media]; !ok {
		return nil, fmt.Errorf("response %s of %s %s has no application/json content", code, method, template)
	}
	sptr := rptr + "/content/" + escapePointer(media) + "/schema"
	if s, ok := openapi.schemas.Load(sptr); ok {
		return s.(*jsonschema.Schema), nil
	}
	compileMu.Lock() // a Compiler is not safe for concurrent use
	s, err := openapi.compiler.Compile(docURL + "#" + sptr)
	compileMu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("compile %s: %w", sptr, err)
	}
	openapi.schemas.Store(sptr, s)
	return s, nil
}

// validate checks a response body against the document.
func validate(t *testing.T, method, rawPath string, r resp) {
	t.Helper()
	u, err := url.Parse(rawPath)
	if err != nil {
		t.Fatal(err)
	}
	s, err := responseSchema(method, u.Path, r.Status, strings.HasPrefix(r.Header.Get("Content-Type"), "text/csv"))
	if err != nil {
		t.Errorf("openapi: %v", err)
		return
	}
	if s == nil {
		return
	}
	bodies := [][]byte{r.Body}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-ndjson") {
		bodies = bytes.Split(bytes.TrimSuffix(r.Body, []byte("\n")), []byte("\n"))
	}
	for _, b := range bodies {
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Errorf("openapi: %s %s %d: body is not JSON: %s", method, u.Path, r.Status, b)
			return
		}
		if err := s.Validate(v); err != nil {
			t.Errorf("openapi: %s %s %d: the body does not match the document: %v\nbody: %s", method, u.Path, r.Status, err, b)
		}
	}
}
