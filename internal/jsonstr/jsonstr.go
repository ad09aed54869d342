// Package jsonstr appends JSON strings exactly as encoding/json writes
// them, without its reflection for the common case: hand-built JSON on hot
// paths (event bodies, bus metadata) stays byte for byte what json.Marshal
// would have made.
package jsonstr

import "encoding/json"

// Append appends s as a JSON string. Printable ASCII that encoding/json
// leaves as it is goes straight in; anything else (quotes, backslashes,
// control characters, HTML's <, > and &, non-ASCII) is left to
// encoding/json.
func Append(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(dst, q...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}
