// Package secrets seals the secrets aivis must be able to read back (the
// signing secrets of webhooks, the settings connectors mark secret) with
// AES-256-GCM under a master key that lives outside the database: a copy
// of the database alone gives none of them away.
//
// The master key file holds one key or more, one a line (the base64 of 32
// bytes); blank lines and lines that begin with # are ignored. The first
// key seals; every key opens. A sealed value names the key that sealed it
// by its id (KeyID), so that the keys can be rotated: add a new key at the
// top, re-seal every value with it (aivis secrets rotate), then drop the
// old one.
package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The prefixes of sealed values. Version 1 names no key (any key of the
// file may open it); version 2, "sealed:v2:<key id>:<base64>", names the
// key that sealed it. Both are AES-256-GCM with a 12-byte nonce before the
// ciphertext.
const (
	prefixV1 = "sealed:v1:"
	prefixV2 = "sealed:v2:"
)

// V1 is what KeyOf says of a value sealed in version 1, which names no key.
const V1 = "v1"

// KeyFile is the master key's file name in the data directory.
const KeyFile = "master.key"

// key is one master key and its id.
type key struct {
	id   string
	aead cipher.AEAD
	// derive is the root of the keys Derive makes of this one.
	derive []byte
}

// Box seals with its first key and opens with any of its keys.
type Box struct{ keys []key }

// KeyID is a key's id: the hex of the first 8 bytes of its SHA-256, which
// tells keys apart without giving away anything of them.
func KeyID(k []byte) string {
	sum := sha256.Sum256(k)
	return hex.EncodeToString(sum[:8])
}

// New makes a box from 32-byte keys: the first seals, every one opens.
func New(keys ...[]byte) (*Box, error) {
	if len(keys) == 0 {
		return nil, errors.New("secrets: no master key")
	}
	b := &Box{}
	for i, k := range keys {
		if len(k) != 32 {
			return nil, fmt.Errorf("secrets: master key %d must be 32 bytes, not %d", i+1, len(k))
		}
		block, err := aes.NewCipher(k)
		if err != nil {
			return nil, err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		id := KeyID(k)
		if b.key(id) != nil {
			return nil, fmt.Errorf("secrets: master key %s is given twice", id)
		}
		root := hmac.New(sha256.New, k)
		root.Write([]byte("aivis: keys derived from the master key"))
		b.keys = append(b.keys, key{id: id, aead: aead, derive: root.Sum(nil)})
	}
	return b, nil
}

// Derive is a 32-byte key for purpose, made of the sealing key (HMAC-
// SHA256): every process with the same master key derives the same one,
// and no derived key tells anything of the master key or of another
// purpose's.
func (b *Box) Derive(purpose string) []byte {
	m := hmac.New(sha256.New, b.keys[0].derive)
	m.Write([]byte(purpose))
	return m.Sum(nil)
}

// ID is the id of the key that seals.
func (b *Box) ID() string { return b.keys[0].id }

// IDs are the ids of every key, the sealing one first.
func (b *Box) IDs() []string {
	ids := make([]string, len(b.keys))
	for i, k := range b.keys {
		ids[i] = k.id
	}
	return ids
}

func (b *Box) key(id string) *key {
	for i := range b.keys {
		if b.keys[i].id == id {
			return &b.keys[i]
		}
	}
	return nil
}

// Seal encrypts plaintext under the first key; the result is text, safe
// to store, that names the key's id.
func (b *Box) Seal(plaintext string) string {
	k := b.keys[0]
	nonce := make([]byte, k.aead.NonceSize())
	rand.Read(nonce)
	return prefixV2 + k.id + ":" + base64.RawStdEncoding.EncodeToString(k.aead.Seal(nonce, nonce, []byte(plaintext), nil))
}

// ErrNotSealed is returned by Open for a value Seal did not make.
var ErrNotSealed = errors.New("secrets: not a sealed value")

// KeyOf is the id of the key that sealed a value, V1 for a value of
// version 1 (which names none); ErrNotSealed for what Seal did not make.
func KeyOf(sealed string) (string, error) {
	if strings.HasPrefix(sealed, prefixV1) {
		return V1, nil
	}
	rest, ok := strings.CutPrefix(sealed, prefixV2)
	if !ok {
		return "", ErrNotSealed
	}
	id, _, ok := strings.Cut(rest, ":")
	if !ok || id == "" {
		return "", errors.New("secrets: a sealed value is malformed")
	}
	return id, nil
}

// Sealed reports whether sealed was sealed with b's first key (and needs
// no re-sealing).
func (b *Box) Sealed(sealed string) bool {
	id, err := KeyOf(sealed)
	return err == nil && id == b.ID()
}

// Open decrypts what Seal made: a value of version 2 with the key it
// names, which must be one of b's; one of version 1 with whichever of b's
// keys opens it. It fails for anything altered.
func (b *Box) Open(sealed string) (string, error) {
	if rest, ok := strings.CutPrefix(sealed, prefixV1); ok {
		for _, k := range b.keys {
			if plain, err := open(k, rest); err == nil {
				return plain, nil
			}
		}
		return "", errors.New("secrets: a sealed value (v1) does not open with any master key of the file")
	}
	id, err := KeyOf(sealed)
	if err != nil {
		return "", err
	}
	k := b.key(id)
	if k == nil {
		return "", fmt.Errorf("secrets: a sealed value needs master key %s, which the master key file does not hold", id)
	}
	plain, err := open(*k, strings.TrimPrefix(sealed, prefixV2+id+":"))
	if err != nil {
		return "", fmt.Errorf("secrets: a sealed value does not open with master key %s: %w", id, err)
	}
	return plain, nil
}

func open(k key, b64 string) (string, error) {
	raw, err := base64.RawStdEncoding.DecodeString(b64)
	n := k.aead.NonceSize()
	if err != nil || len(raw) < n {
		return "", errors.New("malformed")
	}
	plain, err := k.aead.Open(nil, raw[:n], raw[n:], nil)
	if err != nil {
		return "", errors.New("altered or sealed under another key")
	}
	return string(plain), nil
}

// NewKeyLine is a new random key as a line of the key file.
func NewKeyLine() string {
	k := make([]byte, 32)
	rand.Read(k)
	return base64.StdEncoding.EncodeToString(k) + "\n"
}

// Parse reads a key file's content: one key a line, the base64 of 32
// bytes; blank lines and lines that begin with # are skipped. name is the
// file's name, for the errors.
func Parse(name string, text []byte) (*Box, error) {
	var keys [][]byte
	for i, line := range strings.Split(string(text), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, err := base64.StdEncoding.DecodeString(line)
		if err != nil || len(k) != 32 {
			return nil, fmt.Errorf("secrets: %s, line %d: not the base64 of 32 bytes", name, i+1)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("secrets: %s holds no key", name)
	}
	return New(keys...)
}

// Load reads the master key file at path (see Parse); when create is true
// and path does not exist, it makes a new key there (mode 0600) and
// reports that it did.
func Load(path string, create bool) (box *Box, created bool, err error) {
	text, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) && create {
		line := NewKeyLine()
		made, err := createWhole(path, []byte(line))
		if err != nil {
			return nil, false, fmt.Errorf("secrets: %w", err)
		}
		if !made {
			return Load(path, false) // made by another process meanwhile
		}
		box, err := Parse(path, []byte(line))
		return box, true, err
	} else if err != nil {
		return nil, false, fmt.Errorf("secrets: master key: %w", err)
	}
	box, err = Parse(path, text)
	return box, false, err
}

// AddKey puts a new key at the top of the key file at path, which must
// exist, keeping the others below it: the new key seals from the next
// start of the processes that read the file, and the others still open.
// The file is replaced whole (mode 0600), never seen half written. It
// returns the new key's id.
func AddKey(path string) (string, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("secrets: master key: %w", err)
	}
	if _, err := Parse(path, text); err != nil {
		return "", err
	}
	line := NewKeyLine()
	if err := replaceWhole(path, append([]byte(line), text...)); err != nil {
		return "", fmt.Errorf("secrets: %w", err)
	}
	k, _ := base64.StdEncoding.DecodeString(strings.TrimSpace(line))
	return KeyID(k), nil
}

// writeTemp writes content to a new file (mode 0600) beside path and
// returns its name.
func writeTemp(path string, content []byte) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".new-")
	if err != nil {
		return "", err
	}
	if _, err := f.Write(content); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// replaceWhole replaces path with content at once (a rename).
func replaceWhole(path string, content []byte) error {
	tmp, err := writeTemp(path, content)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// createWhole makes path (mode 0600) with its content, unless it exists:
// the content is written to a file of its own first and linked to path
// whole, so that no process reads the file half written.
func createWhole(path string, content []byte) (made bool, err error) {
	tmp, err := writeTemp(path, content)
	if err != nil {
		return false, err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); errors.Is(err, os.ErrExist) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	return true, nil
}
