// Package randid makes random identifiers and credentials from crypto/rand.
package randid

import "crypto/rand"

const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// String returns n characters of [A-Za-z0-9], uniformly drawn.
func String(n int) string {
	out := make([]byte, n)
	buf := make([]byte, n+n/4+8)
	for i := 0; i < n; {
		rand.Read(buf) // never fails (crypto/rand since Go 1.24)
		for _, b := range buf {
			// 248 = 4*62: rejecting larger bytes keeps the draw uniform.
			if b < 248 && i < n {
				out[i] = alphabet[b%62]
				i++
			}
		}
	}
	return string(out)
}

// New returns prefix + "_" + 20 random characters (119 bits).
func New(prefix string) string { return prefix + "_" + String(20) }
