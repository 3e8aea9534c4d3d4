// Package clip shortens untrusted bytes for error messages and logs. It
// owns only that; it must not know about events or protocols.
package clip

// Limit is how many bytes Bytes keeps.
const Limit = 200

// Bytes returns b as a string, cut after Limit bytes with "…" appended when
// it is longer.
func Bytes(b []byte) string {
	if len(b) > Limit {
		return string(b[:Limit]) + "…"
	}
	return string(b)
}

// String is Bytes for a string: s cut after Limit bytes with "…" appended
// when it is longer.
func String(s string) string {
	if len(s) > Limit {
		return s[:Limit] + "…"
	}
	return s
}
