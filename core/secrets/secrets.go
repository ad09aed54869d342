// Package secrets seals the secrets aivis must be able to read back (the
// signing secrets of webhooks, the settings connectors mark secret) with
// AES-256-GCM under a master key that lives outside the database: a copy
// of the database alone gives none of them away.
package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// prefix marks a sealed value (version 1: AES-256-GCM, 12-byte nonce).
const prefix = "sealed:v1:"

// KeyFile is the master key's file name in the data directory.
const KeyFile = "master.key"

// Box seals and opens values under one master key.
type Box struct{ aead cipher.AEAD }

// New makes a box from a 32-byte key.
func New(key []byte) (*Box, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("secrets: the master key must be 32 bytes, not %d", len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Box{aead: aead}, nil
}

// Seal encrypts plaintext; the result is text, safe to store.
func (b *Box) Seal(plaintext string) string {
	nonce := make([]byte, b.aead.NonceSize())
	rand.Read(nonce)
	return prefix + base64.RawStdEncoding.EncodeToString(b.aead.Seal(nonce, nonce, []byte(plaintext), nil))
}

// ErrNotSealed is returned by Open for a value Seal did not make.
var ErrNotSealed = errors.New("secrets: not a sealed value")

// Open decrypts what Seal made; it fails for anything altered or sealed
// under another key.
func (b *Box) Open(sealed string) (string, error) {
	rest, ok := strings.CutPrefix(sealed, prefix)
	if !ok {
		return "", ErrNotSealed
	}
	raw, err := base64.RawStdEncoding.DecodeString(rest)
	if err != nil || len(raw) < b.aead.NonceSize() {
		return "", errors.New("secrets: a sealed value is malformed")
	}
	n := b.aead.NonceSize()
	plain, err := b.aead.Open(nil, raw[:n], raw[n:], nil)
	if err != nil {
		return "", errors.New("secrets: a sealed value does not open with this master key")
	}
	return string(plain), nil
}

// Load reads the master key, the base64 of 32 bytes, from path; when
// create is true and path does not exist, it makes a new key there (mode
// 0600) and reports that it did.
func Load(path string, create bool) (box *Box, created bool, err error) {
	text, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) && create {
		key := make([]byte, 32)
		rand.Read(key)
		made, err := createWhole(path, []byte(base64.StdEncoding.EncodeToString(key)+"\n"))
		if err != nil {
			return nil, false, fmt.Errorf("secrets: %w", err)
		}
		if !made {
			return Load(path, false) // made by another process meanwhile
		}
		box, err := New(key)
		return box, true, err
	} else if err != nil {
		return nil, false, fmt.Errorf("secrets: master key: %w", err)
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(text)))
	if err != nil {
		return nil, false, fmt.Errorf("secrets: %s: not the base64 of 32 bytes", path)
	}
	box, err = New(key)
	return box, false, err
}

// createWhole makes path (mode 0600) with its content, unless it exists:
// the content is written to a file of its own first and linked to path
// whole, so that no process reads the file half written.
func createWhole(path string, content []byte) (made bool, err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".new-")
	if err != nil {
		return false, err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(content); err != nil {
		f.Close()
		return false, err
	}
	if err := f.Close(); err != nil {
		return false, err
	}
	if err := os.Link(f.Name(), path); errors.Is(err, os.ErrExist) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	return true, nil
}
