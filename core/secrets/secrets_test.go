package secrets_test

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aivis/aivis/core/secrets"
)

func TestSealOpen(t *testing.T) {
	box, created, err := secrets.Load(filepath.Join(t.TempDir(), secrets.KeyFile), true)
	if err != nil || !created {
		t.Fatal(err, created)
	}
	s1, s2 := box.Seal("whsec_abc"), box.Seal("whsec_abc")
	if s1 == s2 || strings.Contains(s1, "whsec_abc") || !strings.HasPrefix(s1, "sealed:v2:"+box.ID()+":") {
		t.Fatalf("sealed %q, %q", s1, s2)
	}
	if got, err := box.Open(s1); err != nil || got != "whsec_abc" {
		t.Fatalf("Open = %q, %v", got, err)
	}
	if _, err := box.Open("whsec_abc"); !errors.Is(err, secrets.ErrNotSealed) {
		t.Fatalf("plain text: %v", err)
	}
	tampered := s1[:len(s1)-2] + "AA"
	if _, err := box.Open(tampered); err == nil {
		t.Fatal("a tampered value opened")
	}
	other, _ := secrets.New(make([]byte, 32))
	if _, err := other.Open(s1); err == nil || !strings.Contains(err.Error(), "needs master key "+box.ID()) {
		t.Fatalf("opened under another key, or said not which key it needs: %v", err)
	}
	// A value that claims the other's id but was sealed under box's key.
	forged := strings.Replace(s1, box.ID(), other.ID(), 1)
	if _, err := other.Open(forged); err == nil {
		t.Fatal("a value under another key opened by its id alone")
	}
}

func TestKeyFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, secrets.KeyFile)
	if _, _, err := secrets.Load(path, false); err == nil {
		t.Fatal("a missing key file loaded without create")
	}
	a, created, err := secrets.Load(path, true)
	if err != nil || !created {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", st, err)
	}
	b, created, err := secrets.Load(path, true)
	if err != nil || created {
		t.Fatal(err, created)
	}
	if got, err := b.Open(a.Seal("x")); err != nil || got != "x" {
		t.Fatalf("the key file does not give the same key: %v", err)
	}
	for _, bad := range []string{"not base64!", base64.StdEncoding.EncodeToString(make([]byte, 16))} {
		os.WriteFile(path, []byte(bad), 0o600)
		if _, _, err := secrets.Load(path, true); err == nil {
			t.Errorf("key file %q accepted", bad)
		}
	}
}

// TestKeyMadeOnceForProcessesStartingAtOnce: of the processes that load a
// missing key file at once, one makes it and every one gets its key (none
// reads a file another is still writing).
func TestKeyMadeOnceForProcessesStartingAtOnce(t *testing.T) {
	for range 20 {
		path := filepath.Join(t.TempDir(), secrets.KeyFile)
		const n = 16
		boxes := make([]*secrets.Box, n)
		made := make([]bool, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { boxes[i], made[i], errs[i] = secrets.Load(path, true) })
		}
		wg.Wait()
		created := 0
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("load %d: %v", i, errs[i])
			}
			if made[i] {
				created++
			}
			if got, err := boxes[i].Open(boxes[0].Seal("x")); err != nil || got != "x" {
				t.Fatalf("load %d has another key than load 0: %v", i, err)
			}
		}
		if created != 1 {
			t.Fatalf("%d loads say they made the key, want 1", created)
		}
		ents, _ := os.ReadDir(filepath.Dir(path))
		if len(ents) != 1 {
			t.Fatalf("the directory holds %v, want the key file alone", ents)
		}
	}
}

// sealV1 seals as aivis did before key ids: "sealed:v1:" + base64(nonce
// + ciphertext), under key k.
func sealV1(t *testing.T, k []byte, plain string) string {
	t.Helper()
	block, _ := aes.NewCipher(k)
	aead, _ := cipher.NewGCM(block)
	nonce := make([]byte, aead.NonceSize())
	rand.Read(nonce)
	return "sealed:v1:" + base64.RawStdEncoding.EncodeToString(aead.Seal(nonce, nonce, []byte(plain), nil))
}

func key(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

func b64(k []byte) string { return base64.StdEncoding.EncodeToString(k) }

// TestSeveralKeys: the first key of the file seals, every key opens, a
// value of version 1 opens with whichever key sealed it, and KeyOf tells
// which key a value needs without opening it.
func TestSeveralKeys(t *testing.T) {
	k1, k2, k3 := key(1), key(2), key(3)
	path := filepath.Join(t.TempDir(), secrets.KeyFile)
	content := "# the new key\n" + b64(k2) + "\n\n  # the old one, until aivis secrets status shows no value on it\n" + b64(k1) + "  \n"
	os.WriteFile(path, []byte(content), 0o600)
	box, created, err := secrets.Load(path, true)
	if err != nil || created {
		t.Fatal(err, created)
	}
	if box.ID() != secrets.KeyID(k2) || !slices.Equal(box.IDs(), []string{secrets.KeyID(k2), secrets.KeyID(k1)}) {
		t.Fatalf("ids %v, want %s first", box.IDs(), secrets.KeyID(k2))
	}
	if id := secrets.KeyID(k1); len(id) != 16 || strings.Contains(id, b64(k1)[:8]) {
		t.Fatalf("key id %q", id)
	}
	old, _ := secrets.New(k1)
	third, _ := secrets.New(k3)
	for name, sealed := range map[string]string{
		"v2 under the new key": box.Seal("a"),
		"v2 under the old key": old.Seal("a"),
		"v1 under the new key": sealV1(t, k2, "a"),
		"v1 under the old key": sealV1(t, k1, "a"),
	} {
		if got, err := box.Open(sealed); err != nil || got != "a" {
			t.Errorf("%s: Open = %q, %v", name, got, err)
		}
	}
	if id, err := secrets.KeyOf(old.Seal("a")); err != nil || id != secrets.KeyID(k1) {
		t.Fatalf("KeyOf = %q, %v", id, err)
	}
	if id, err := secrets.KeyOf(sealV1(t, k1, "a")); err != nil || id != secrets.V1 {
		t.Fatalf("KeyOf(v1) = %q, %v", id, err)
	}
	if _, err := secrets.KeyOf("whsec_plain"); !errors.Is(err, secrets.ErrNotSealed) {
		t.Fatalf("KeyOf(plain) = %v", err)
	}
	if !box.Sealed(box.Seal("a")) || box.Sealed(old.Seal("a")) || box.Sealed(sealV1(t, k2, "a")) {
		t.Fatal("Sealed tells wrong which values need re-sealing")
	}
	_, err = box.Open(third.Seal("a"))
	if err == nil || !strings.Contains(err.Error(), secrets.KeyID(k3)) || strings.Contains(err.Error(), b64(k3)) {
		t.Fatalf("a value under a key not in the file: %v", err)
	}
	if _, err := box.Open(sealV1(t, k3, "a")); err == nil {
		t.Fatal("a v1 value under a key not in the file opened")
	}
}

func TestKeyFileRefusals(t *testing.T) {
	path := filepath.Join(t.TempDir(), secrets.KeyFile)
	for content, want := range map[string]string{
		"":                                         "holds no key",
		"# a comment alone\n\n":                    "holds no key",
		b64(key(1)) + "\nnot base64!\n":            "line 2: not the base64 of 32 bytes",
		b64(key(1)) + "\n" + b64(key(1)[:16]):      "line 2: not the base64 of 32 bytes",
		b64(key(1)) + "\n" + b64(key(1)) + "\n":    "given twice",
		"#" + b64(key(1)) + "\n" + b64(key(2)[:8]): "line 2",
	} {
		os.WriteFile(path, []byte(content), 0o600)
		_, _, err := secrets.Load(path, true)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", content, err, want)
		}
		if err != nil && strings.Contains(err.Error(), b64(key(1))) {
			t.Errorf("%q: the error gives a key away: %v", content, err)
		}
	}
}

// TestAddKey: AddKey puts a new key first, keeps the others and their
// comments, replaces the file whole with mode 0600 and leaves nothing
// beside it; a file it cannot read stays as it was.
func TestAddKey(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, secrets.KeyFile)
	if _, err := secrets.AddKey(path); err == nil {
		t.Fatal("AddKey made a key file")
	}
	first, _, err := secrets.Load(path, true)
	if err != nil {
		t.Fatal(err)
	}
	sealed := first.Seal("x")
	os.WriteFile(path, append([]byte("# kept\n"), must(os.ReadFile(path))...), 0o644)
	id, err := secrets.AddKey(path)
	if err != nil {
		t.Fatal(err)
	}
	box, _, err := secrets.Load(path, false)
	if err != nil || box.ID() != id || !slices.Equal(box.IDs(), []string{id, first.ID()}) {
		t.Fatalf("after AddKey: %v %v, want %s then %s", box.IDs(), err, id, first.ID())
	}
	if got, err := box.Open(sealed); err != nil || got != "x" {
		t.Fatalf("the old key does not open: %v", err)
	}
	text := string(must(os.ReadFile(path)))
	if !strings.Contains(text, "# kept\n") {
		t.Fatalf("the comment went: %q", text)
	}
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", st.Mode())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("the directory holds %v", ents)
	}
	os.WriteFile(path, []byte("garbage\n"), 0o600)
	if _, err := secrets.AddKey(path); err == nil || string(must(os.ReadFile(path))) != "garbage\n" {
		t.Fatalf("AddKey on a bad file: %v", err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// Derive gives the same key for the same master key and purpose, another
// for another purpose or master key, and none equal to the master key.
func TestDerive(t *testing.T) {
	k1, k2 := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	a, _ := secrets.New(k1)
	again, _ := secrets.New(k1, k2)
	b, _ := secrets.New(k2, k1)
	if !bytes.Equal(a.Derive("mcp sessions"), again.Derive("mcp sessions")) {
		t.Error("the same master key derives another key")
	}
	if bytes.Equal(a.Derive("mcp sessions"), a.Derive("other")) || bytes.Equal(a.Derive("mcp sessions"), b.Derive("mcp sessions")) {
		t.Error("another purpose or master key derives the same key")
	}
	if d := a.Derive("x"); len(d) != 32 || bytes.Equal(d, k1) {
		t.Errorf("derived %x", d)
	}
}
