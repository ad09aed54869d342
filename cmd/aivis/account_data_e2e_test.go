package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// exportLine is a line of an account's export.
type exportLine struct {
	Kind string         `json:"kind"`
	Data map[string]any `json:"data"`
}

// readExport parses an export and checks its shape: the account first,
// the end line last with the count of the lines before it.
func readExport(t *testing.T, b []byte, accountID string) []exportLine {
	t.Helper()
	var lines []exportLine
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var l exportLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("an export's line is not JSON: %v: %s", err, sc.Bytes())
		}
		lines = append(lines, l)
	}
	if len(lines) < 2 || lines[0].Kind != "accounts" || lines[0].Data["id"] != accountID {
		t.Fatalf("the export does not begin with account %s:\n%s", accountID, b)
	}
	end := lines[len(lines)-1]
	if end.Kind != "end" || end.Data["records"] != float64(len(lines)-1) {
		t.Fatalf("the export's last line is %+v, want the end line counting %d records", end, len(lines)-1)
	}
	return lines[:len(lines)-1]
}

func kindsOf(lines []exportLine) []string {
	var ks []string
	for _, l := range lines {
		if !slices.Contains(ks, l.Kind) {
			ks = append(ks, l.Kind)
		}
	}
	slices.Sort(ks)
	return ks
}

// TestAccountExportAndDelete: GET /v1/account/export gives an owner key
// everything its account owns as JSON lines, no secret and nothing of
// another account, and refuses a client key and a key with fewer scopes;
// aivis account export writes the same to a new file; aivis account
// delete refuses to go on without --yes when no terminal can confirm, and
// with it deletes the account while the server runs: its keys are refused
// from the next request on, the other account's work, and no table of
// the database holds its id.
func TestAccountExportAndDelete(t *testing.T) {
	dir := t.TempDir()
	a := newAccount(t, dir, "starter", true)
	b := newAccount(t, dir, "starter", false)
	var cl struct {
		ID string `json:"id"`
	}
	cli(t, dir, &cl, "client", "create", "--account", a.ID, "--name", "Client of A")
	owner := newKey(t, dir, a.ID)
	restricted := newKey(t, dir, a.ID, "--scopes", "budget:read,visibility:read,visibility:write")
	clientKey := newKey(t, dir, a.ID, "--client", cl.ID)
	other := newKey(t, dir, b.ID)
	s := start(t, dir)
	recordEvent(t, s, owner, `{"domain":"example.com","visibility_score":61,"sentiment":"positive"}`)
	recordEvent(t, s, other, `{"domain":"example.com","visibility_score":12,"sentiment":"negative"}`)

	export := req{method: "GET", path: "/v1/account/export"}
	for _, k := range []key{restricted, clientKey} {
		export.header = bearer(k)
		if r := s.do(t, export); r.Status != 403 || r.errorCode(t) != "INSUFFICIENT_SCOPE" {
			t.Errorf("export with a key that is not an owner's (%s): %d %s; want 403 INSUFFICIENT_SCOPE", k.Name, r.Status, r.Body)
		}
	}
	export.header = bearer(owner)
	r := s.do(t, export)
	if r.Status != 200 || r.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("export with the owner key: %d %s %s", r.Status, r.Header.Get("Content-Type"), r.Body)
	}
	lines := readExport(t, r.Body, a.ID)
	for _, want := range []string{"accounts", "api_keys", "clients", "event_log", "visibility_readings"} {
		if !slices.Contains(kindsOf(lines), want) {
			t.Errorf("the export holds no %s: %v", want, kindsOf(lines))
		}
	}
	keys := 0
	for _, l := range lines {
		if l.Kind == "api_keys" {
			keys++
		}
	}
	if keys != 3 {
		t.Errorf("the export holds %d keys, want 3", keys)
	}
	for _, bad := range []string{b.ID, "sealed:", "key_hash", "secret_hash", owner.Key, owner.Secret} {
		if bytes.Contains(r.Body, []byte(bad)) {
			t.Errorf("the export holds %q:\n%s", bad, r.Body)
		}
	}

	file := filepath.Join(t.TempDir(), "a.jsonl")
	cli(t, dir, nil, "account", "export", a.ID, "--out", file)
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o600 {
		t.Errorf("the export's file has mode %v, want 0600", fi.Mode().Perm())
	}
	if k := kindsOf(readExport(t, got, a.ID)); !slices.Equal(k, kindsOf(lines)) {
		t.Errorf("aivis account export gives the kinds %v, the API %v", k, kindsOf(lines))
	}
	if msg := cliFails(t, dir, "account", "export", a.ID, "--out", file); !strings.Contains(msg, "exists") {
		t.Errorf("an export onto an existing file: %q; want it refused", msg)
	}
	if msg := cliFails(t, dir, "account", "export", "acct_none", "--out", file+".2"); !strings.Contains(msg, "no account acct_none") {
		t.Errorf("an export of no account: %q", msg)
	}
	if _, err := os.Stat(file + ".2"); !os.IsNotExist(err) {
		t.Errorf("an export of no account made its file: %v", err)
	}

	budget := func(k key) req { return req{method: "GET", path: "/api/v1/ai/budget-status", header: keyed(k)} }
	if msg := cliFails(t, dir, "account", "delete", a.ID); !strings.Contains(msg, "--yes") {
		t.Errorf("a delete without --yes and no terminal: %q; want it refused, naming --yes", msg)
	}
	if r := s.do(t, budget(owner)); r.Status != 200 {
		t.Fatalf("the key after a refused delete: %d %s", r.Status, r.Body)
	}
	var del struct {
		ID      string `json:"id"`
		Deleted bool   `json:"deleted"`
	}
	cli(t, dir, &del, "account", "delete", a.ID, "--yes")
	if del.ID != a.ID || !del.Deleted {
		t.Errorf("aivis account delete printed %+v", del)
	}
	for _, k := range []key{owner, clientKey} {
		if r := s.do(t, budget(k)); r.Status != 401 || r.errorCode(t) != "INVALID_CREDENTIALS" {
			t.Errorf("a deleted account's key, the next request: %d %s; want 401 INVALID_CREDENTIALS", r.Status, r.Body)
		}
	}
	if r := s.do(t, budget(other)); r.Status != 200 {
		t.Errorf("the other account's key: %d %s", r.Status, r.Body)
	}
	if msg := cliFails(t, dir, "account", "delete", a.ID, "--yes"); !strings.Contains(msg, "no account "+a.ID) {
		t.Errorf("deleting the deleted account again: %q", msg)
	}
	// The tables of the counts a server keeps in memory and writes behind
	// (the rate-limit windows and hourly usage) may get the last requests'
	// counts after the delete (docs/operations.md); every other table is
	// checked.
	db := s.db(t)
	tables, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT IN ('rate_windows', 'usage_hourly')`)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for tables.Next() {
		var n string
		tables.Scan(&n)
		names = append(names, n)
	}
	tables.Close()
	for _, n := range names {
		rows, err := db.Query(`SELECT * FROM "` + n + `"`)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			rows.Scan(ptrs...)
			for _, v := range vals {
				if s, ok := v.(string); ok && strings.Contains(s, a.ID) {
					t.Errorf("%s still holds a row of the deleted account: %v", n, vals)
				}
				if s, ok := v.([]byte); ok && bytes.Contains(s, []byte(a.ID)) {
					t.Errorf("%s still holds a row of the deleted account: %s", n, s)
				}
			}
		}
		rows.Close()
	}
}

// TestAccountDeleteAsksOnATerminal: on a terminal (script(1) gives the
// command one), aivis account delete shows the account and asks for its
// id: another answer deletes nothing, the id deletes it.
func TestAccountDeleteAsksOnATerminal(t *testing.T) {
	if _, err := exec.LookPath("script"); err != nil {
		t.Fatal("the terminal's test needs script(1) (util-linux)")
	}
	dir := t.TempDir()
	a := newAccount(t, dir, "starter", false)
	onTerminal := func(typed string) (string, error) {
		cmd := exec.Command("script", "-qec", binary+" account delete "+a.ID+" --data-dir "+dir, "/dev/null")
		cmd.Stdin = strings.NewReader(typed + "\n")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := onTerminal("yes")
	if err == nil || !strings.Contains(out, "Type the account's id to confirm") || !strings.Contains(out, "not deleted") {
		t.Errorf("answered yes: %v\n%s", err, out)
	}
	var left []account
	cli(t, dir, &left, "account", "list")
	if len(left) != 1 {
		t.Fatalf("accounts after a wrong answer: %+v", left)
	}
	if out, err := onTerminal(a.ID); err != nil || !strings.Contains(out, "deleted, with everything it owned") {
		t.Errorf("answered the id: %v\n%s", err, out)
	}
	cli(t, dir, &left, "account", "list")
	if len(left) != 0 {
		t.Errorf("accounts after the confirmed delete: %+v", left)
	}
}
